package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Heartbeats from a fleet of hosts, group-committed by several batch
// workers at once, must never deadlock PostgreSQL: every batch locks the
// leases in ticket order, then the adoption rows in host order. (Written
// in arrival order, two batches locked one host's rows each before the
// other's: hundreds of deadlocks a minute, each a second lost.) The store
// counts the deadlocks PostgreSQL broke (and it retried).
func TestGroupCommitDoesNotDeadlock(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, postgres.Options{MaxConns: 8})
	svc, err := warp.NewService(db, warp.Config{Policy: testPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	// Hosts scrambled against ticket order, so a batch meets its hosts in
	// an order of its own.
	const tickets, hosts = 1000, 50
	for i := range tickets {
		id := fmt.Sprintf("D-%04d", i)
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: fmt.Sprintf("h-%02d", (i*37)%hosts)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			for k := range 40 {
				i := (g*61 + k*257) % tickets
				_, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("D-%04d", i), Epoch: 1,
					Host: fmt.Sprintf("h-%02d", (i*37)%hosts), ActivityAge: 1})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("heartbeat: %v", err)
	}
	if n := db.Stats().Deadlocks; n != 0 {
		t.Errorf("PostgreSQL broke %d deadlocks under group-committed heartbeats, want 0", n)
	}
}
