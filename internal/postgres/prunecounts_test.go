package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

func verdictCountRows(t *testing.T, db *postgres.DB) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), "SELECT count(*) FROM verdict_counts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestVerdictCountsPruned(t *testing.T) {
	storetest.VerdictCountsPruned(t, func(t *testing.T) warp.Store { return openDB(t, postgres.Options{}) },
		func(s warp.Store) int { return verdictCountRows(t, s.(*postgres.DB)) })
}

// A prune skips the rows at 0 that another transaction holds (it may be
// moving them off 0) instead of waiting for it, and drops them once free.
func TestPruneVerdictCountsSkipsHeldRows(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, postgres.Options{})
	if _, err := db.Pool().Exec(ctx, `INSERT INTO verdict_counts (host, verdict, n) VALUES ('a', 'active', 0), ('b', 'active', 0), ('c', 'active', 1)`); err != nil {
		t.Fatal(err)
	}
	held, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	if _, err := held.Exec(ctx, `UPDATE verdict_counts SET n = n WHERE host = 'b'`); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.Update(pctx, func(tx warp.Tx) error { return tx.PruneVerdictCounts(pctx, 0) }); err != nil {
		t.Fatalf("prune while b's row is held: %v (it waited?)", err)
	}
	if n := verdictCountRows(t, db); n != 2 {
		t.Errorf("rows after a prune with b held: %d, want 2 (b's, held, and c's, not at 0)", n)
	}
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx warp.Tx) error { return tx.PruneVerdictCounts(ctx, 0) }); err != nil {
		t.Fatal(err)
	}
	if n := verdictCountRows(t, db); n != 1 {
		t.Errorf("rows after b is free and pruned: %d, want 1 (c's)", n)
	}
}
