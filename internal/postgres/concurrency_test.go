package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// replicas opens n stores on one schema, each with its own pool, as n warp
// processes would, with a Service each on one shared fake clock.
func replicas(t *testing.T, n int, clock *storetest.Clock) ([]*postgres.DB, []*warp.Service) {
	t.Helper()
	_, u := newSchema(t)
	dbs := make([]*postgres.DB, n)
	svcs := make([]*warp.Service, n)
	for i := range n {
		db, err := postgres.Open(context.Background(), u, postgres.Options{MaxConns: 16})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc, err := warp.NewService(db, warp.Config{Policy: testPolicy(), Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Init(context.Background()); err != nil {
			t.Fatal(err)
		}
		dbs[i], svcs[i] = db, svc
	}
	return dbs, svcs
}

func eventCounts(t *testing.T, db *postgres.DB, kind warp.EventKind) map[string]int {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), "SELECT ticket, count(*) FROM events WHERE kind = $1 GROUP BY ticket", string(kind))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var tk string
		var n int
		if err := rows.Scan(&tk, &n); err != nil {
			t.Fatal(err)
		}
		out[tk] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// 64 claimers on two pools claim 500 tickets with claim-next and claim by
// id: every ticket ends with exactly one holder, epoch 1, one claimed event.
func TestConcurrentClaimsAcrossPools(t *testing.T) {
	clock := newClock()
	dbs, svcs := replicas(t, 2, clock)
	ctx := context.Background()
	const tickets, claimers = 500, 64
	for i := range tickets {
		if _, err := svcs[0].CreateTicket(ctx, warp.NewTicket{ID: fmt.Sprintf("T-%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	holders := map[string][]string{}
	var wg sync.WaitGroup
	errc := make(chan error, claimers)
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := svcs[c%2]
			agent := fmt.Sprintf("agent-%d", c)
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for {
				var v warp.TicketView
				var err error
				if c%4 == 3 { // a quarter claim by id, racing the others
					v, err = svc.Claim(ctx, fmt.Sprintf("T-%03d", rng.IntN(tickets)), warp.ClaimRequest{Agent: agent, Host: "h"})
					if errors.Is(err, warp.ErrConflict) {
						if done, derr := allClaimed(ctx, svc); derr != nil || done {
							errc <- derr
							return
						}
						continue
					}
				} else {
					v, err = svc.ClaimNext(ctx, warp.ClaimRequest{Agent: agent, Host: "h"})
					if errors.Is(err, warp.ErrNoOpenTicket) {
						return
					}
				}
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				holders[v.Ticket.ID] = append(holders[v.Ticket.ID], agent)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("claimer: %v", err)
		}
	}
	if len(holders) != tickets {
		t.Errorf("claimed %d distinct tickets, want %d", len(holders), tickets)
	}
	for id, hs := range holders {
		if len(hs) != 1 {
			t.Errorf("ticket %s claimed by %v, want exactly one holder", id, hs)
		}
	}
	claimed := eventCounts(t, dbs[0], warp.EventClaimed)
	for i := range tickets {
		id := fmt.Sprintf("T-%03d", i)
		if claimed[id] != 1 {
			t.Errorf("ticket %s has %d claimed events, want 1", id, claimed[id])
		}
	}
	var leases, maxEpoch int
	if err := dbs[1].Pool().QueryRow(ctx, "SELECT count(*), max(epoch) FROM leases WHERE state = 'held'").Scan(&leases, &maxEpoch); err != nil {
		t.Fatal(err)
	}
	if leases != tickets || maxEpoch != 1 {
		t.Errorf("got %d held leases with max epoch %d, want %d with epoch 1", leases, maxEpoch, tickets)
	}
}

func allClaimed(ctx context.Context, svc *warp.Service) (bool, error) {
	page, err := svc.ListTickets(ctx, warp.ListOptions{State: warp.TicketOpen, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(page.Tickets) == 0, nil
}

// Sweeps running at once on two pools (no sweep lock: the store alone must
// be safe) lapse every due lease exactly once.
func TestConcurrentSweepsLapseOnce(t *testing.T) {
	clock := newClock()
	dbs, svcs := replicas(t, 2, clock)
	ctx := context.Background()
	const n = 600
	for i := range n {
		id := fmt.Sprintf("L-%03d", i)
		if _, err := svcs[0].CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svcs[1].Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(testPolicy().LeaseWindow + time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	lapsed := map[string]int{}
	errc := make(chan error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := svcs[i%2].Sweep(ctx)
			if err != nil {
				errc <- err
				return
			}
			mu.Lock()
			for _, l := range res.Lapsed {
				lapsed[l.Ticket]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("sweep: %v", err)
	}
	if len(lapsed) != n {
		t.Errorf("lapsed %d leases, want %d", len(lapsed), n)
	}
	for id, c := range lapsed {
		if c != 1 {
			t.Errorf("lease of %s lapsed by %d sweeps, want 1", id, c)
		}
	}
	events := eventCounts(t, dbs[0], warp.EventLapsed)
	for i := range n {
		if id := fmt.Sprintf("L-%03d", i); events[id] != 1 {
			t.Errorf("ticket %s has %d lapsed events, want 1", id, events[id])
		}
	}
}

// Heartbeats lock a ticket then its lease; the sweep locks due leases with
// their tickets in one statement and skips what others hold. Racing them
// must never fail a request (no deadlock reaches the caller) and never
// lapse a lease twice or revive a lapsed one.
func TestHeartbeatsRaceSweep(t *testing.T) {
	clock := newClock()
	dbs, svcs := replicas(t, 2, clock)
	ctx := context.Background()
	const n = 200
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("R-%03d", i)
		if _, err := svcs[0].CreateTicket(ctx, warp.NewTicket{ID: ids[i]}); err != nil {
			t.Fatal(err)
		}
		if _, err := svcs[0].Claim(ctx, ids[i], warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(testPolicy().LeaseWindow + time.Second) // every lease is due
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				id := ids[(k*7+w*13)%n]
				_, err := svcs[w%2].Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "h", ActivityAge: 0})
				if err != nil && !errors.Is(err, warp.ErrLeaseEnded) {
					errc <- fmt.Errorf("heartbeat %s: %w", id, err)
					return
				}
			}
		}()
	}
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := svcs[s%2].Sweep(ctx); err != nil {
					errc <- fmt.Errorf("sweep: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for i, db := range dbs {
		if st := db.Stats(); st.Deadlocks != 0 {
			t.Errorf("store %d: %d deadlocks were broken by PostgreSQL, want none: the lock order is wrong", i, st.Deadlocks)
		}
	}
	events := eventCounts(t, dbs[0], warp.EventLapsed)
	now := clock.Now()
	for _, id := range ids {
		v, err := svcs[1].Ticket(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch v.Lease.State {
		case warp.LeaseLapsed:
			if events[id] != 1 || v.Ticket.State != warp.TicketOpen {
				t.Errorf("%s lapsed with %d lapsed events and ticket %s, want 1 event and open", id, events[id], v.Ticket.State)
			}
		case warp.LeaseHeld:
			if events[id] != 0 || !v.Lease.ExpiresAt.After(now) {
				t.Errorf("%s held with %d lapsed events, expires %s (now %s): want a heartbeat-extended lease", id, events[id], v.Lease.ExpiresAt, now)
			}
		default:
			t.Errorf("%s: lease state %s", id, v.Lease.State)
		}
	}
}
