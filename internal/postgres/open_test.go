package postgres_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestOpenRejectsBadConnectionString(t *testing.T) {
	for _, u := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?pool_max_conns=zero",
		"postgres://postgres@127.0.0.1:notaport/postgres",
		"postgres://postgres@127.0.0.1:5432/postgres?pool_max_conns=2&pool_min_conns=3",
	} {
		_, err := postgres.Open(context.Background(), u, postgres.Options{})
		if !errors.Is(err, warp.ErrInvalid) {
			t.Errorf("Open(%q): got %v, want ErrInvalid", u, err)
		}
	}
	_, err := postgres.Open(context.Background(), "postgres://postgres@127.0.0.1:5432/postgres", postgres.Options{MaxConns: -1})
	if !errors.Is(err, warp.ErrInvalid) {
		t.Errorf("negative MaxConns: got %v, want ErrInvalid", err)
	}
}

func TestOpenUnreachableIsUnavailable(t *testing.T) {
	// Port 1 on loopback: nothing listens there, the dial is refused at once.
	_, err := postgres.Open(context.Background(), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", postgres.Options{})
	if !errors.Is(err, warp.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if msg := warp.ErrorMessage(err); !strings.Contains(msg, "cannot reach PostgreSQL at 127.0.0.1:1") {
		t.Errorf("message %q does not say which database could not be reached", msg)
	}
}

func TestOpenMissingSearchPathSchema(t *testing.T) {
	u := adminURL(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	_, err := postgres.Open(context.Background(), u+sep+"search_path=warp_no_such_schema", postgres.Options{})
	if !errors.Is(err, warp.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if msg := warp.ErrorMessage(err); !strings.Contains(msg, "warp_no_such_schema") {
		t.Errorf("message %q does not name the search_path", msg)
	}
}

// Replicas starting together race to migrate one fresh schema: the advisory
// lock lets exactly one apply each migration and the others see it done.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	schema, _ := newSchema(t)
	admin := adminURL(t)
	const n = 8
	dbs := make([]*postgres.DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = postgres.Open(context.Background(), admin, postgres.Options{Schema: schema, MaxConns: 2})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	var rows, versions int
	if err := dbs[0].Pool().QueryRow(context.Background(),
		"SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	if rows != versions || rows == 0 {
		t.Errorf("schema_migrations has %d rows for %d versions, want one row per version", rows, versions)
	}
	if got := dbs[3].Schema(); got != schema {
		t.Errorf("Schema() = %q, want %q", got, schema)
	}
}

func TestReopenKeepsData(t *testing.T) {
	schema, u := newSchema(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := warp.NewService(db, warp.Config{})
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-keep"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if db.Schema() != schema {
		t.Errorf("Schema() = %q, want %q (from the URL's search_path)", db.Schema(), schema)
	}
	svc, _ = warp.NewService(db, warp.Config{})
	if _, err := svc.Ticket(ctx, "T-keep"); err != nil {
		t.Errorf("ticket after reopen: %v", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	_, u := newSchema(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = postgres.Open(ctx, u, postgres.Options{})
	if !errors.Is(err, warp.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if msg := warp.ErrorMessage(err); !strings.Contains(msg, "9999") || !strings.Contains(msg, "upgrade warp") {
		t.Errorf("message %q does not say the schema is newer", msg)
	}
}

// A schema whose schema_migrations another program made (a common name)
// is refused, not taken for an up-to-date warp schema.
func TestOpenRefusesAnotherProgramsMigrations(t *testing.T) {
	for name, setup := range map[string]string{
		"golang-migrate": `CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL);
			INSERT INTO schema_migrations VALUES (5, false)`,
		"other names": `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL);
			INSERT INTO schema_migrations VALUES (1, 'create_users'), (2, 'add_orders')`,
		"timestamps": `CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL);
			INSERT INTO schema_migrations VALUES (20240101120000, 'add_users.sql')`,
	} {
		t.Run(name, func(t *testing.T) {
			schema, u := newSchema(t)
			ctx := context.Background()
			if _, err := adminPool(t).Exec(ctx, "SET search_path TO "+schema+"; "+setup); err != nil {
				t.Fatal(err)
			}
			db, err := postgres.Open(ctx, u, postgres.Options{})
			if err == nil {
				db.Close()
				t.Fatal("opened a schema whose schema_migrations is another program's")
			}
			if msg := warp.ErrorMessage(err); !errors.Is(err, warp.ErrInvalid) || !strings.Contains(msg, "not warp's") || !strings.Contains(msg, "schema of its own") {
				t.Errorf("got %v (%q), want ErrInvalid saying the table is not warp's", err, msg)
			}
			var tables int
			if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&tables); err != nil || tables != 1 {
				t.Errorf("tables in the schema after the refusal: %d (%v), want the other program's alone", tables, err)
			}
		})
	}
}

func TestSchemaOptionCreatesSchema(t *testing.T) {
	schema, _ := newSchema(t)
	// newSchema created it; a sub-name that does not exist yet must be created.
	fresh := schema + "_x"
	t.Cleanup(func() { dropSchema(t, adminURL(t), fresh) })
	db, err := postgres.Open(context.Background(), adminURL(t), postgres.Options{Schema: fresh})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'leases'", fresh).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("leases table in %s: got %d, want 1", fresh, n)
	}
}

// The heartbeat group commit runs postgres.MaxBatchWorkers batches at once,
// and always leaves one pooled connection to everything else.
func TestConcurrentWritersLeaveAConnection(t *testing.T) {
	for _, c := range []struct {
		conns int32
		want  int
	}{{1, 1}, {2, 1}, {3, 2}, {0, min(postgres.MaxBatchWorkers, max(4, runtime.NumCPU())-1)}, {16, postgres.MaxBatchWorkers}} {
		db := openDB(t, postgres.Options{MaxConns: c.conns})
		if got := db.ConcurrentWriters(); got != c.want {
			t.Errorf("pool of %d (0: pgx's default): %d batch workers, want %d", c.conns, got, c.want)
		}
	}
}
