package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

func service(t *testing.T, db *sqlite.DB) *warp.Service {
	t.Helper()
	svc, err := warp.NewService(db, warp.Config{})
	if err == nil {
		err = svc.Init(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func claimed(t *testing.T, svc *warp.Service, id string) warp.TicketView {
	t.Helper()
	ctx := context.Background()
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func heartbeat(svc *warp.Service, id string, epoch int64) error {
	_, err := svc.Heartbeat(context.Background(), warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: epoch, Host: "h", Agent: "a", ActivityAge: 1})
	return err
}

// heartbeating opens a store with T-1 claimed and heartbeated once.
func heartbeating(t *testing.T) (*sqlite.DB, *warp.Service, warp.TicketView) {
	t.Helper()
	db := MustOpen(t)
	svc := service(t, db)
	v := claimed(t, svc, "T-1")
	if err := heartbeat(svc, "T-1", v.Lease.Epoch); err != nil {
		t.Fatal(err)
	}
	return db, svc, v
}

// TestSeesOtherConnections: a second store on the same file (another warp
// process, say) ends a lease the first one heartbeats; the first must see
// it at its next heartbeat, not extend the lease.
func TestSeesOtherConnections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warp.db")
	db1 := mustOpenPath(t, path)
	db2 := mustOpenPath(t, path)
	one, two := service(t, db1), service(t, db2)
	v := claimed(t, one, "T-1")
	epoch := v.Lease.Epoch
	for range 3 { // the lease is in db1's memory now
		if err := heartbeat(one, "T-1", epoch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := two.Release(context.Background(), "T-1", epoch, "done elsewhere"); err != nil {
		t.Fatal(err)
	}
	if err := heartbeat(one, "T-1", epoch); !errors.Is(err, warp.ErrLeaseEnded) {
		t.Fatalf("heartbeat through the first store after the second released: %v, want ErrLeaseEnded", err)
	}
}

// TestForgetsRolledBack: a transaction that wrote a lease and
// did not commit leaves no trace in what the next one reads.
func TestForgetsRolledBack(t *testing.T) {
	db, svc, v := heartbeating(t)
	ctx := context.Background()
	var before warp.Lease
	boom := errors.New("boom")
	err := db.Update(ctx, func(tx warp.Tx) error {
		_, l, err := tx.CurrentLease(ctx, "T-1")
		if err != nil {
			return err
		}
		before = l
		l.State, l.EndReason = warp.LeaseReleased, "never committed"
		if err := tx.UpdateLease(ctx, l); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx warp.Tx) error {
		_, l, err := tx.CurrentLease(ctx, "T-1")
		if err == nil && l != before {
			t.Errorf("after a rollback: %+v, want %+v", l, before)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := heartbeat(svc, "T-1", v.Lease.Epoch); err != nil {
		t.Fatalf("heartbeat after the rolled-back release: %v", err)
	}
}

// A host whose row a prune removed is written again by its next counted
// heartbeat through the batch path.
func TestPrunedHostIsRecordedAgain(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t)
	at := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	write := func(at time.Time) {
		t.Helper()
		err := db.Update(ctx, func(tx warp.Tx) error {
			return tx.WriteBatch(ctx, nil, []warp.HeartbeatCount{{Host: "h1", Token: "tok", SchemaVersion: 2, At: at, N: 1}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	hosts := func() []warp.HostAdoption {
		t.Helper()
		var rows []warp.HostAdoption
		if err := db.View(ctx, func(tx warp.Tx) (err error) { rows, err = tx.Adoption(ctx, at.Add(-time.Hour)); return err }); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	prune := func(before time.Time) {
		t.Helper()
		if err := db.Update(ctx, func(tx warp.Tx) error { return tx.PruneHeartbeats(ctx, before) }); err != nil {
			t.Fatal(err)
		}
	}
	write(at)
	prune(at.Add(-time.Minute)) // nothing to prune: h1 stays known
	write(at.Add(time.Second))
	if rows := hosts(); len(rows) != 1 || !rows[0].LastSeen.Equal(at.Add(time.Second)) {
		t.Fatalf("after a prune that removed nothing: %+v, want h1 seen at %v", rows, at.Add(time.Second))
	}
	prune(at.Add(time.Minute)) // h1's row goes
	if rows := hosts(); len(rows) != 0 {
		t.Fatalf("after the prune: %+v, want no host", rows)
	}
	write(at.Add(2 * time.Minute))
	if rows := hosts(); len(rows) != 1 || rows[0].Host != "h1" || !rows[0].LastSeen.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("after a heartbeat of the pruned host: %+v, want h1 seen at %v", rows, at.Add(2*time.Minute))
	}
}
