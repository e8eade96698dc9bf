package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// adminURL returns WARP_TEST_POSTGRES or skips the test.
func adminURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("WARP_TEST_POSTGRES")
	if u == "" {
		tb.Skip("WARP_TEST_POSTGRES is not set: point it at a PostgreSQL server to run the PostgreSQL tests, " +
			"e.g. WARP_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' (.ci/run sets it)")
	}
	return u
}

// newSchema creates an empty schema warp_test_<random> and drops it with
// everything in it when the test ends. It returns the schema name and a URL
// whose search_path points at it, for processes that take only a URL.
func newSchema(tb testing.TB) (schema, schemaURL string) {
	tb.Helper()
	admin := adminURL(tb)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = "warp_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adminPool(tb).Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() { dropSchema(tb, admin, schema) })
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("parse WARP_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return schema, u.String()
}

func dropSchema(tb testing.TB, admin, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The database may be restarting (the restart test): retry a while.
	var err error
	for ctx.Err() == nil {
		if _, err = adminPool(tb).Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	tb.Errorf("drop schema %s: %v", schema, err)
}

// The admin pool the helpers create and drop schemas with, shared by the
// package's tests and closed by TestMain.
var adminDB struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

func adminPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	adminDB.once.Do(func() {
		adminDB.pool, adminDB.err = pgxpool.New(context.Background(), adminURL(tb))
	})
	if adminDB.err != nil {
		tb.Fatalf("connect to WARP_TEST_POSTGRES: %v", adminDB.err)
	}
	return adminDB.pool
}

// openDB opens a store in a fresh schema, closed when the test ends.
func openDB(tb testing.TB, opts postgres.Options) *postgres.DB {
	tb.Helper()
	_, u := newSchema(tb)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := postgres.Open(context.Background(), u, opts)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// t0 is where test clocks start: a whole second.
var t0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func newClock() *storetest.Clock { return storetest.NewClock(t0) }

// testPolicy is the documented defaults.
func testPolicy() warp.Policy { return warp.DefaultPolicy() }
