package postgres_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// A schema from before migration 0003 (no verdict_due_at, no
// verdict_counts) with held leases gets its counts backfilled by the
// migration — per verdict and per hook health.
func TestMigration0003BackfillsCounts(t *testing.T) {
	ctx := context.Background()
	schema, u := newSchema(t)
	open := func() (*postgres.DB, *warp.Service) {
		db, err := postgres.Open(ctx, u, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		clk := newClock()
		svc, err := warp.NewService(db, warp.Config{Policy: testPolicy(), Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return db, svc
	}
	db, svc := open()
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	want := storetest.SeedCountedHosts(t, svc)
	svc.Close()
	db.Close()
	// Back to the schema before 0003 (dropping the column drops its index).
	for _, q := range []string{
		"DROP INDEX " + schema + ".leases_held_host", "DROP INDEX " + schema + ".leases_ended_at",
		"DROP TABLE " + schema + ".verdict_counts", "ALTER TABLE " + schema + ".leases DROP COLUMN verdict_due_at",
		"DELETE FROM " + schema + ".schema_migrations WHERE version >= 3",
	} {
		if _, err := adminPool(t).Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db, svc = open()
	defer db.Close()
	defer svc.Close()
	storetest.SameHosts(t, svc, want)
}
