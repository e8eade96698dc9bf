package warp_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// countingStore wraps a store and counts the fleet-wide verdict-count
// reads made inside write transactions.
type countingStore struct {
	warp.Store
	inUpdate, inView atomic.Int64
}

type countingTx struct {
	warp.Tx
	n *atomic.Int64
}

func (t countingTx) VerdictCounts(ctx context.Context) ([]warp.HostVerdictCount, error) {
	t.n.Add(1)
	return t.Tx.VerdictCounts(ctx)
}

func (s *countingStore) Update(ctx context.Context, fn func(warp.Tx) error) error {
	return s.Store.Update(ctx, func(tx warp.Tx) error { return fn(countingTx{tx, &s.inUpdate}) })
}

func (s *countingStore) View(ctx context.Context, fn func(warp.Tx) error) error {
	return s.Store.View(ctx, func(tx warp.Tx) error { return fn(countingTx{tx, &s.inView}) })
}

// The verdict pass reads every host's verdict counts (thousands of rows on
// a large fleet) on a snapshot, not inside a write transaction: on SQLite
// that would hold the one writer, and every heartbeat queued behind it.
func TestVerdictPassReadsCountsOutsideTheWriter(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cs := &countingStore{Store: db}
	svc, clk := serviceOn(t, cs)
	ctx := context.Background()
	for _, id := range []string{"T-1", "T-2"} {
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: "h1"}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(warp.DefaultPolicy().SilentAfter + time.Minute) // both turn silent
	res, err := svc.VerdictPass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 {
		t.Fatalf("verdict pass recorded %d changes, want 2 (both leases silent)", len(res.Changes))
	}
	if n := cs.inUpdate.Load(); n != 0 {
		t.Errorf("the verdict pass read the verdict counts %d times inside a write transaction", n)
	}
	if cs.inView.Load() == 0 {
		t.Error("the verdict pass never read the verdict counts: the host tally is not exercised")
	}
}
