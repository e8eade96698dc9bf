package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

const (
	raceTickets    = 200
	raceGoroutines = 64
)

func raceID(i int) string { return fmt.Sprintf("T-%03d", i) }

// checkOneHolder checks every race ticket is claimed at epoch 1 by agent
// winners[i], with exactly one claimed event.
func (e *env) checkOneHolder(winners []string) {
	e.t.Helper()
	for i := range raceTickets {
		id := raceID(i)
		v := e.view(id)
		if v.Ticket.State != warp.TicketClaimed || v.Ticket.Epoch != 1 || v.Lease == nil || v.Lease.Agent != winners[i] {
			e.t.Errorf("%s: got %+v lease %+v, want claimed at epoch 1 by %s", id, v.Ticket, v.Lease, winners[i])
		}
		n := 0
		for _, k := range e.kinds(id) {
			if k == warp.EventClaimed {
				n++
			}
		}
		if n != 1 {
			e.t.Errorf("%s: %d claimed events, want 1", id, n)
		}
	}
}

func testConcurrency(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("ClaimRace", func(t *testing.T) {
		// Every goroutine tries every ticket: exactly one claim per ticket
		// wins, every other attempt is a conflict.
		e := newEnv(t, open)
		for i := range raceTickets {
			e.create(raceID(i))
		}
		var wins [raceTickets]atomic.Int32
		winners := make([]string, raceTickets)
		var mu sync.Mutex
		var other []error
		var wg sync.WaitGroup
		for g := range raceGoroutines {
			wg.Go(func() {
				agent := fmt.Sprintf("agent-%02d", g)
				for k := range raceTickets {
					i := (k + g*3) % raceTickets // overlapping orders
					_, err := e.svc.Claim(e.ctx, raceID(i), warp.ClaimRequest{Agent: agent, Host: "h"})
					switch {
					case err == nil:
						wins[i].Add(1)
						mu.Lock()
						winners[i] = agent
						mu.Unlock()
					case errors.Is(err, warp.ErrConflict):
					default:
						mu.Lock()
						other = append(other, err)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		for i, err := range other {
			if i < 5 {
				t.Errorf("claim failed with something other than a conflict: %v", err)
			}
		}
		for i := range raceTickets {
			if n := wins[i].Load(); n != 1 {
				t.Errorf("%s: %d claims succeeded, want exactly 1", raceID(i), n)
			}
		}
		e.checkOneHolder(winners)
	})

	t.Run("ClaimNextRace", func(t *testing.T) {
		e := newEnv(t, open)
		for i := range raceTickets {
			e.create(raceID(i))
		}
		var mu sync.Mutex
		got := map[string]string{} // ticket → agent
		var dup, other []string
		var wg sync.WaitGroup
		for g := range raceGoroutines {
			wg.Go(func() {
				agent := fmt.Sprintf("agent-%02d", g)
				for {
					v, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Agent: agent, Host: "h"})
					if errors.Is(err, warp.ErrNoOpenTicket) {
						return
					}
					mu.Lock()
					if err != nil {
						other = append(other, err.Error())
						mu.Unlock()
						return
					}
					if prev, ok := got[v.Ticket.ID]; ok {
						dup = append(dup, fmt.Sprintf("%s by %s and %s", v.Ticket.ID, prev, agent))
					}
					got[v.Ticket.ID] = agent
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(other) > 0 {
			t.Errorf("claim-next failed %d times, first: %s", len(other), other[0])
		}
		if len(dup) > 0 {
			t.Errorf("tickets claimed twice: %v", dup)
		}
		if len(got) != raceTickets {
			t.Errorf("claimed %d distinct tickets, want %d", len(got), raceTickets)
		}
		winners := make([]string, raceTickets)
		for i := range raceTickets {
			winners[i] = got[raceID(i)]
		}
		e.checkOneHolder(winners)
	})

	t.Run("HeartbeatsWhileSweeping", func(t *testing.T) {
		// Leases that keep heartbeating never lapse while sweeps run
		// alongside; the silent ones all do.
		e := newEnv(t, open)
		const n = 40
		for i := range n {
			e.createClaim(raceID(i), "h")
		}
		e.clock.Advance(20 * time.Minute)
		for i := range n / 2 { // the live half: fresh activity
			e.v2(raceID(i), 1, 0)
		}
		e.clock.Advance(10 * time.Minute) // the silent half is now due
		var wg sync.WaitGroup
		errs := make(chan error, 8*n)
		for w := range 4 {
			wg.Go(func() {
				for k := range 5 * n {
					i := (k + w) % (n / 2)
					if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: raceID(i), Epoch: 1, Host: "h"}); err != nil {
						errs <- fmt.Errorf("heartbeat %s: %w", raceID(i), err)
						return
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				for range 10 {
					if _, err := e.svc.Sweep(e.ctx); err != nil {
						errs <- fmt.Errorf("sweep: %w", err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for i := range n {
			want := warp.LeaseHeld
			if i >= n/2 {
				want = warp.LeaseLapsed
			}
			if l := e.lease(raceID(i)); l.State != want {
				t.Errorf("%s: got %s, want %s", raceID(i), l.State, want)
			}
		}
		lapsed := 0
		for i := n / 2; i < n; i++ {
			for _, k := range e.kinds(raceID(i)) {
				if k == warp.EventLapsed {
					lapsed++
				}
			}
		}
		if lapsed != n/2 {
			t.Errorf("lapsed events: got %d, want %d (one per lapsed lease)", lapsed, n/2)
		}
	})
}
