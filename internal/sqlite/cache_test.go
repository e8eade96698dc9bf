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

// heartbeating opens a store with T-1 claimed and heartbeated once: its
// lease is in the writer's memory.
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

// TestLeaseCacheSeesOtherConnections: the writer keeps the leases it
// heartbeats in memory; a second store on the same file (another warp
// process, say) ends the lease; the first must see it at its next
// heartbeat, not extend a lease from its memory.
func TestLeaseCacheSeesOtherConnections(t *testing.T) {
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

// TestLeaseCacheForgetsRolledBack: a transaction that wrote a lease and
// did not commit leaves no trace in what the next one reads.
func TestLeaseCacheForgetsRolledBack(t *testing.T) {
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

// TestLeaseCacheGivesWhatTheDatabaseGives: a lease from the writer's
// memory is the very value a read of its row gives (times in UTC, without
// monotonic readings).
func TestLeaseCacheGivesWhatTheDatabaseGives(t *testing.T) {
	db, _, _ := heartbeating(t)
	ctx := context.Background()
	var cached, read warp.Lease
	var ct, rt warp.Ticket
	if err := db.Update(ctx, func(tx warp.Tx) (err error) { ct, cached, err = tx.CurrentLease(ctx, "T-1"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(ctx, func(tx warp.Tx) (err error) { rt, read, err = tx.CurrentLease(ctx, "T-1"); return err }); err != nil {
		t.Fatal(err)
	}
	if cached != read || ct.ID != rt.ID || ct.Epoch != rt.Epoch || ct.State != rt.State || !ct.UpdatedAt.Equal(rt.UpdatedAt) {
		t.Fatalf("from memory: %+v %+v\nfrom the row: %+v %+v", ct, cached, rt, read)
	}
	if db.LeaseCacheLen() != 1 {
		t.Fatalf("the heartbeat's lease is not in memory (%d entries): this test compares nothing", db.LeaseCacheLen())
	}
}

// TestLeaseCacheBounded: more heartbeating leases than the cache holds
// still heartbeat correctly (the ones it misses are read), and a claim
// over an ended lease is seen at once.
func TestLeaseCacheBounded(t *testing.T) {
	db := MustOpen(t)
	db.SetLeaseCacheMax(3)
	svc := service(t, db)
	ctx := context.Background()
	ids := []string{"T-1", "T-2", "T-3", "T-4", "T-5", "T-6", "T-7"}
	epochs := map[string]int64{}
	for _, id := range ids {
		epochs[id] = claimed(t, svc, id).Lease.Epoch
	}
	for range 3 {
		for _, id := range ids {
			if err := heartbeat(svc, id, epochs[id]); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
	}
	if n := db.LeaseCacheLen(); n > 3 {
		t.Fatalf("cache holds %d leases, max 3", n)
	}
	// A new holder: the old epoch is refused, the new one heartbeats.
	if _, err := svc.Release(ctx, "T-7", epochs["T-7"], "x"); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Claim(ctx, "T-7", warp.ClaimRequest{Agent: "b", Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if err := heartbeat(svc, "T-7", epochs["T-7"]); err == nil {
		t.Fatal("the old epoch's heartbeat was accepted after a new claim")
	}
	if err := heartbeat(svc, "T-7", v.Lease.Epoch); err != nil {
		t.Fatal(err)
	}
	// Heartbeats write only their columns (qUpdateLeaseBeat): the
	// indexes still match the table, and the sweep's index finds what
	// heartbeats extended.
	if lines, err := db.IntegrityCheck(ctx); err != nil || len(lines) != 1 || lines[0] != "ok" {
		t.Fatalf("integrity_check: %v %v", lines, err)
	}
	var due []warp.Lease
	if err := db.View(ctx, func(tx warp.Tx) (err error) {
		due, err = tx.DueLeases(ctx, warp.DueFilter{Now: time.Now().Add(24 * time.Hour)}, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(due) != len(ids) {
		t.Fatalf("due in a day: %d leases, want the %d held", len(due), len(ids))
	}
}

// A host whose row a prune removed is written again by its next counted
// heartbeat, also through the batch path (which only updates the rows of
// hosts the writer knows): the prune makes the writer forget them.
func TestPrunedHostIsRecordedAgain(t *testing.T) {
	ctx := context.Background()
	db := MustOpen(t)
	at := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	write := func(at time.Time) {
		t.Helper()
		err := db.Update(ctx, func(tx warp.Tx) error {
			return tx.(warp.HeartbeatBatchTx).WriteBatch(ctx, nil, []warp.HeartbeatCount{{Host: "h1", Token: "tok", SchemaVersion: 2, At: at, N: 1}})
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

// The writer keeps meta values (the mode every heartbeat batch reads) in
// memory: a write by another store on the same file is seen at the next
// write transaction, and a value set in a transaction that rolled back is
// not kept.
func TestMetaCache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	a, b := mustOpenPath(t, path), mustOpenPath(t, path)
	set := func(db *sqlite.DB, v string) {
		t.Helper()
		if err := db.Update(ctx, func(tx warp.Tx) error { return tx.SetMeta(ctx, "k", v) }); err != nil {
			t.Fatal(err)
		}
	}
	read := func(db *sqlite.DB) string {
		t.Helper()
		var v string
		if err := db.Update(ctx, func(tx warp.Tx) (err error) { v, err = tx.Meta(ctx, "k"); return err }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	set(a, "one")
	if got := read(a); got != "one" {
		t.Fatalf("a reads %q, want one", got)
	}
	set(b, "two") // another connection: a's cached value is stale
	if got := read(a); got != "two" {
		t.Fatalf("after another store's write a reads %q, want two", got)
	}
	boom := errors.New("boom")
	err := a.Update(ctx, func(tx warp.Tx) error {
		if err := tx.SetMeta(ctx, "k", "three"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update: %v, want boom", err)
	}
	if got := read(a); got != "two" {
		t.Fatalf("after a rolled-back write a reads %q, want two", got)
	}
}
