package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// MustOpen opens a store on a new file in a temporary directory and closes
// it when the test ends.
func MustOpen(tb testing.TB) *sqlite.DB {
	tb.Helper()
	return mustOpenPath(tb, filepath.Join(tb.TempDir(), "warp.db"))
}

func mustOpenPath(tb testing.TB, path string) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) warp.Store { return MustOpen(t) })
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	clock := storetest.NewClock(storetest.T0())
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := warp.NewService(db, warp.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1", Title: "keep me", Labels: []string{"go", "db"}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := svc.Claim(ctx, "T-1", warp.ClaimRequest{Agent: "O", Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	hb, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: claimed.Lease.Epoch, Host: "h1", ActivityAge: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetMode(ctx, warp.ModeLegacy, false); err != nil {
		t.Fatal(err)
	}
	before, err := svc.Ticket(ctx, "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	db2 := mustOpenPath(t, path)
	svc2, err := warp.NewService(db2, warp.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	after, err := svc2.Ticket(ctx, "T-1")
	if err != nil {
		t.Fatalf("ticket after reopen: %v", err)
	}
	if after.Ticket.Title != "keep me" || strings.Join(after.Ticket.Labels, ",") != "db,go" || after.Ticket.State != warp.TicketClaimed {
		t.Errorf("ticket after reopen: got %+v, want title, labels and state kept", after.Ticket)
	}
	if after.Lease == nil || *after.Lease != *before.Lease {
		t.Errorf("lease after reopen: got %+v, want %+v", after.Lease, before.Lease)
	}
	// Legacy mode was set after the heartbeat: expiry counts from it.
	if want := clock.Now().Add(warp.DefaultLeaseWindow); !after.Lease.ExpiresAt.Equal(want) || hb.ExpiresAt.Equal(want) {
		t.Errorf("expiry after reopen: got %s (heartbeat answered %s), want %s", after.Lease.ExpiresAt, hb.ExpiresAt, want)
	}
	mode, err := svc2.Mode(ctx)
	if err != nil || mode != warp.ModeLegacy {
		t.Errorf("mode after reopen: got %q, %v, want legacy", mode, err)
	}
	evs, err := svc2.Events(ctx, "T-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	if got, want := strings.Join(kinds, ","), "created,claimed,first-v2-heartbeat"; got != want {
		t.Errorf("events after reopen: got %s, want %s", got, want)
	}
}

// rawDB opens the file with the bare driver, as another program (or a
// newer warp) would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// rawExec runs statements on the file with the bare driver.
func rawExec(t testing.TB, path string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rawExec(t, path, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`)

	_, err = sqlite.Open(ctx, path)
	if !errors.Is(err, sqlite.ErrNewerSchema) {
		t.Fatalf("open newer database: got %v, want ErrNewerSchema", err)
	}
	if !strings.Contains(err.Error(), "9999") {
		t.Errorf("error %q does not name the unknown migration 9999", err)
	}
	// The refusal changed nothing: drop the future migration and the data is there.
	rawExec(t, path, `DELETE FROM schema_migrations WHERE version = 9999`)
	db2 := mustOpenPath(t, path)
	svc2, _ := warp.NewService(db2, warp.Config{})
	if _, err := svc2.Ticket(ctx, "T-1"); err != nil {
		t.Errorf("ticket after refused open: %v", err)
	}
}

func TestRefusesNotWarpFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	text := filepath.Join(dir, "notes.txt")
	content := bytes.Repeat([]byte("this is not a database, just text\n"), 200)
	if err := os.WriteFile(text, content, 0o600); err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(dir, "other.db")
	rawExec(t, other, `CREATE TABLE recipes (name TEXT)`, `INSERT INTO recipes VALUES ('soup')`)
	otherBefore, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}

	// A warp file whose pages were overwritten with garbage.
	corrupt := filepath.Join(dir, "corrupt.db")
	db := mustOpenPath(t, corrupt)
	db.Close()
	b, err := os.ReadFile(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 16; i < len(b); i++ { // keep the 16-byte magic, wreck the rest
		b[i] = 0xA5
	}
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(corrupt + "-wal")
	os.Remove(corrupt + "-shm")

	for _, tc := range []struct{ name, path string }{
		{"text file", text},
		{"another program's database", other},
		{"corrupt warp file", corrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sqlite.Open(ctx, tc.path)
			if err == nil {
				db.Close()
				t.Fatalf("open %s: got no error, want ErrNotDatabase", tc.path)
			}
			if !errors.Is(err, sqlite.ErrNotDatabase) {
				t.Fatalf("open %s: got %v, want ErrNotDatabase", tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if got, _ := os.ReadFile(text); !bytes.Equal(got, content) {
		t.Errorf("the text file was modified by the refused open")
	}
	if got, _ := os.ReadFile(other); !bytes.Equal(got, otherBefore) {
		t.Errorf("the other program's database was modified by the refused open")
	}
}

func TestOpenBadPath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, path := range []string{"", ":memory:", "file:x.db?mode=memory", dir, filepath.Join(dir, "missing", "warp.db")} {
		db, err := sqlite.Open(ctx, path)
		if err == nil {
			db.Close()
			t.Errorf("open %q: got no error, want one", path)
			continue
		}
		t.Logf("open %q: %v", path, err)
	}
}

func TestOpenPathWithSpecialCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?#%", "warp 1.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db := mustOpenPath(t, path)
	if err := db.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at %s: %v", path, err)
	}
}

func TestQueryPlansUseIndexes(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t)
	now := time.Now().UnixNano()
	// allowed full scans: the hosts table (one row per host of the fleet,
	// pruned with the heartbeat counts) is read whole by the adoption query.
	allowed := map[string]bool{"SCAN h": true}
	check := func(name, query string, args []any, want string) {
		t.Helper()
		plan, err := db.QueryPlan(ctx, query, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		joined := strings.Join(plan, " | ")
		if !strings.Contains(joined, want) {
			t.Errorf("%s plan: got %q, want it to use %q", name, joined, want)
		}
		for _, step := range plan {
			if (strings.HasPrefix(step, "SCAN ") && !allowed[step]) || strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("%s plan: got %q, want no full scan and no sort (%q)", name, joined, step)
			}
		}
	}
	check("due leases", sqlite.DueLeasesSQL(0), []any{now, 1000}, "USING INDEX leases_held_expires")
	check("due leases in two graces", sqlite.DueLeasesSQL(2), []any{now, now, now, now, now, 1000}, "USING INDEX leases_held_expires")
	for _, st := range []warp.TicketState{warp.TicketOpen, warp.TicketClaimed} {
		q, args := sqlite.TicketsSQL(warp.TicketFilter{State: st, Limit: 100})
		check("tickets by state", q, args, "USING INDEX tickets_state_seq")
	}
	b := warp.DefaultPolicy().Bounds(warp.VerdictStalled, time.Now())
	q, args := sqlite.TicketsSQL(warp.TicketFilter{State: warp.TicketClaimed, Verdict: &b, Limit: 100})
	check("tickets by verdict", q, args, "USING INDEX tickets_state_seq")
	q, args = sqlite.TicketsSQL(warp.TicketFilter{AfterSeq: 10, Limit: 100})
	check("tickets after a cursor", q, args, "USING INTEGER PRIMARY KEY")
	check("held leases", sqlite.HeldLeasesSQL, []any{"", 1000}, "USING INDEX leases_held_ticket")
	check("held leases of a host", sqlite.HostHeldSQL, []any{"h", "", 1000}, "USING INDEX leases_held_host")
	check("verdict-due leases", sqlite.VerdictDueSQL, []any{now, 1000}, "USING INDEX leases_held_verdict_due")
	check("hosts of ended leases", sqlite.EndedHostsSQL, []any{now}, "USING INDEX leases_ended_at")
	check("events of a ticket", sqlite.EventsSQL, []any{"T-1", 0, 100}, "USING INDEX events_ticket_id")
	// Each host's counts: range reads of the key, per schema version and
	// span (no scan of the window's rows by time).
	check("adoption", sqlite.AdoptionSQL, []any{0, 0, 0, warp.MinuteSpan, warp.HourSpan}, "USING PRIMARY KEY (host=? AND schema_version=? AND span=? AND bucket>? AND bucket<?)")
	check("adoption's hour rows", sqlite.AdoptionSQL, []any{0, 0, 0, warp.MinuteSpan, warp.HourSpan}, "USING PRIMARY KEY (host=? AND schema_version=? AND span=? AND bucket>?)")
	check("prune counts", sqlite.PruneCountsSQL, []any{now / 1e9}, "USING INDEX heartbeat_counts_bucket (bucket<?)")
	check("lease", sqlite.LeaseSQL, []any{"T-1", 1}, "USING INDEX sqlite_autoindex_leases_1")
	check("claim-next with labels", sqlite.NextOpenSQL(2), []any{"a", "b"}, "USING INDEX tickets_state_seq")
	// The batch's multi-row heartbeat update reads its VALUES list and
	// finds each lease by its key.
	allowed[fmt.Sprintf("SCAN %d-ROW VALUES CLAUSE", sqlite.UpdateChunk)] = true
	check("heartbeat batch update", sqlite.UpdateLeasesBeatSQL(sqlite.UpdateChunk), make([]any, 19*sqlite.UpdateChunk), "USING COVERING INDEX sqlite_autoindex_leases_1 (ticket=? AND epoch=?)")
	// A rare verdict's listing starts from its candidates (the recorded
	// verdict's partial index and the due leases), then finds each ticket
	// and lease by key, and sorts what it found: no walk of the tickets.
	// So does a small host's listing, from its held leases.
	byKey := []string{"SEARCH t USING INDEX sqlite_autoindex_tickets_1 (id=?", "SEARCH l USING INDEX sqlite_autoindex_leases_1 (ticket=? AND epoch=?)"}
	for _, c := range []struct {
		name string
		f    warp.TicketFilter
		want []string
	}{
		{"rare verdict listing", warp.TicketFilter{State: warp.TicketClaimed, Verdict: &b, Limit: 100, RareVerdict: warp.VerdictStalled, DueBy: time.Now()},
			append([]string{"USING COVERING INDEX leases_held_rare_verdict (recorded_verdict=?)", "USING INDEX leases_held_verdict_due"}, byKey...)},
		{"small host's listing", warp.TicketFilter{Host: "h", Limit: 100, HostFirst: true},
			append([]string{"USING COVERING INDEX leases_held_host (host=?)"}, byKey...)},
	} {
		q, args := sqlite.TicketsSQL(c.f)
		plan, err := db.QueryPlan(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(plan, " | ")
		for _, want := range c.want {
			if !strings.Contains(joined, want) {
				t.Errorf("%s plan: got %q, want it to use %q", c.name, joined, want)
			}
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && step != "SCAN c" {
				t.Errorf("%s plan: got %q, want no full scan (%q)", c.name, joined, step)
			}
		}
	}
}

// An upgrade's migrations are logged before each runs (one over a large
// file may take minutes) and after, with its duration; a new file's schema
// and a file already at the latest one log nothing.
func TestOpenLogsMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warp.db")
	var out bytes.Buffer
	open := func() {
		t.Helper()
		db, err := sqlite.OpenWith(context.Background(), path, sqlite.Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	open()
	open()
	if out.Len() != 0 {
		t.Errorf("log of a new file's open and of a migrated file's: want nothing, got\n%s", out.String())
	}
	rawExec(t, path, before0005...)
	open()
	for _, want := range []string{`msg="sqlite: applying migration" name=0005_count_spans.sql`, `msg="sqlite: applied migration" name=0005_count_spans.sql seconds=`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log of an upgrade: want %q in\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "applying migration"); n != 1 {
		t.Errorf("log of an upgrade: %d migrations applied, want 1:\n%s", n, out.String())
	}
}

// before0005 takes a database back to the schema before migration 0005:
// one-second count buckets (the rows are dropped).
var before0005 = []string{
	"DROP TABLE heartbeat_counts",
	`CREATE TABLE heartbeat_counts (host TEXT NOT NULL, schema_version INTEGER NOT NULL, bucket INTEGER NOT NULL,
		count INTEGER NOT NULL, PRIMARY KEY (host, schema_version, bucket)) WITHOUT ROWID`,
	"CREATE INDEX heartbeat_counts_bucket ON heartbeat_counts (bucket)",
	"DELETE FROM schema_migrations WHERE version = 5",
}

// A database from before migration 0005 (one-second count buckets) gets
// its counts folded into minute and hour rows: every window counts what it
// counted before, from the window's minute on.
func TestMigration0005FoldsCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warp.db")
	mustOpenPath(t, path).Close()
	rawExec(t, path, append(before0005, storetest.SecondCountsSQL("heartbeat_counts", "hosts")...)...)
	storetest.SameFoldedCounts(t, mustOpenPath(t, path))
}

// A database from before migration 0004 (no verdict_due_at, no
// verdict_counts) with held leases gets its counts backfilled by the
// migration — per verdict and per hook health — so the gauges and the
// hosts overview are right from the first read after the upgrade.
func TestMigration0004BackfillsCounts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	clk := storetest.NewClock(storetest.T0())
	newSvc := func(db *sqlite.DB) *warp.Service {
		svc, err := warp.NewService(db, warp.Config{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	db := mustOpenPath(t, path)
	svc := newSvc(db)
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	want := storetest.SeedCountedHosts(t, svc)
	svc.Close()
	db.Close()
	// Back to the schema before 0004.
	rawExec(t, path,
		"DROP INDEX leases_held_verdict_due", "DROP INDEX leases_held_host", "DROP INDEX leases_ended_at",
		"DROP TABLE verdict_counts", "ALTER TABLE leases DROP COLUMN verdict_due_at",
		"DELETE FROM schema_migrations WHERE version = 4")
	db = mustOpenPath(t, path)
	storetest.SameHosts(t, newSvc(db), want)
}

func TestVerdictCountsPruned(t *testing.T) {
	storetest.VerdictCountsPruned(t, func(t *testing.T) warp.Store { return MustOpen(t) }, func(s warp.Store) int {
		n, err := s.(*sqlite.DB).VerdictCountRows(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// A call whose context ends inside its transaction has handed its
// connection back by the time it returns. database/sql rolls such a
// transaction back on a goroutine of its own; when that goroutine handed
// the connection back after the call returned, a Close right after the
// call missed it, and the connection closed later on its own and
// checkpointed the file after warp had closed it (seen as a flaky
// TestServeThatCannotBindChangesNothing).
func TestCancelledCallReturnsItsConnection(t *testing.T) {
	db := MustOpen(t)
	for i := range 300 {
		for _, update := range []bool{true, false} {
			ctx, cancel := context.WithCancel(context.Background())
			fn := func(tx warp.Tx) error {
				cancel()
				_, err := tx.Ticket(ctx, "T-1")
				return err
			}
			var err error
			if update {
				err = db.Update(ctx, fn)
			} else {
				err = db.View(ctx, fn)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("call %d (update %v): %v, want context.Canceled", i, update, err)
			}
			if w, r := db.ConnsInUse(); w+r != 0 {
				t.Fatalf("call %d (update %v) returned with %d writer and %d reader connections still lent out", i, update, w, r)
			}
		}
	}
}
