package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func testSweep(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("PicksExactlyTheDue", func(t *testing.T) {
		e := newEnv(t, open)
		// Claims 1ns apart: expiry of each is its claim + 30m.
		e.createClaim("early", "h1")
		e.clock.Advance(time.Minute)
		e.createClaim("exact", "h1")
		e.clock.Advance(time.Nanosecond)
		e.createClaim("late", "h1")
		e.createClaim("done", "h1")
		if _, err := e.svc.Release(e.ctx, "done", 1, ""); err != nil {
			t.Fatal(err)
		}
		e.create("open")
		now := T0().Add(time.Minute + 30*time.Minute) // == expiry of "exact"
		e.clock.Set(now)
		lapsed := e.sweep()
		var ids []string
		for _, l := range lapsed {
			ids = append(ids, l.Ticket)
			if l.State != warp.LeaseLapsed {
				t.Errorf("swept lease %s: got state %s, want lapsed", l.Ticket, l.State)
			}
		}
		slices.Sort(ids)
		if want := []string{"early", "exact"}; !slices.Equal(ids, want) {
			t.Fatalf("sweep: got %v, want %v (expires_at == now is due, 1ns later is not)", ids, want)
		}
		for id, want := range map[string]warp.TicketState{"early": warp.TicketOpen, "exact": warp.TicketOpen, "late": warp.TicketClaimed, "done": warp.TicketOpen, "open": warp.TicketOpen} {
			if got := e.view(id).Ticket.State; got != want {
				t.Errorf("ticket %s after sweep: got %s, want %s", id, got, want)
			}
		}
		l := e.lease("exact")
		if l.State != warp.LeaseLapsed || l.EndReason != warp.LapseNoActivity {
			t.Errorf("lapsed lease: got state %s reason %q, want lapsed, no-activity", l.State, l.EndReason)
		}
		wantTime(t, "ended_at", l.EndedAt, now)
		if l := e.lease("done"); l.State != warp.LeaseReleased {
			t.Errorf("released lease after sweep: got %s, want released", l.State)
		}
		if got := e.sweptTickets(); len(got) != 0 {
			t.Errorf("second sweep: got %v, want none", got)
		}
		e.clock.Advance(time.Nanosecond)
		if got := e.sweptTickets(); !slices.Equal(got, []string{"late"}) {
			t.Errorf("sweep 1ns later: got %v, want [late]", got)
		}
		var last string
		e.read(func(tx warp.Tx) error {
			var err error
			last, err = tx.Meta(e.ctx, warp.MetaLastSweep)
			return err
		})
		if last == "" {
			t.Errorf("last sweep time not recorded")
		}
	})

	t.Run("Reasons", func(t *testing.T) {
		for _, tc := range []struct {
			mode     warp.Mode
			lease    string
			feed     func(e *env)
			reason   string
			fallback bool
		}{
			{warp.ModeTransition, "claim only", feedNothing, warp.LapseNoActivity, false},
			{warp.ModeTransition, "v2", feedV2, warp.LapseNoActivity, false},
			{warp.ModeTransition, "v1", feedV1, warp.LapseNoHeartbeat, true},
			{warp.ModeTransition, "v2 then v1", feedMixed, warp.LapseNoHeartbeat, true},
			{warp.ModeLegacy, "v2", feedV2, warp.LapseNoHeartbeat, false},
			{warp.ModeLegacy, "v1", feedV1, warp.LapseNoHeartbeat, false},
			{warp.ModeActivity, "v1", feedV1, warp.LapseNoActivity, false},
			{warp.ModeActivity, "v2 then v1", feedMixed, warp.LapseNoActivity, false},
			{warp.ModeTransition, "v1 then exit report", func(e *env) {
				feedV1(e)
				e.clock.Advance(time.Minute)
				if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: 900, Exit: warp.ExitParentExited}); err != nil {
					e.t.Fatal(err)
				}
			}, warp.LapseAgentExited, false},
		} {
			name := fmt.Sprintf("%s/%s", tc.mode, tc.lease)
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, withMode(tc.mode))
				e.createClaim("T-1", "h1")
				tc.feed(e)
				l := e.lease("T-1")
				e.clock.Set(l.ExpiresAt)
				if got := e.sweptTickets(); !slices.Equal(got, []string{"T-1"}) {
					t.Fatalf("sweep at expiry: got %v, want [T-1]", got)
				}
				l = e.lease("T-1")
				if l.State != warp.LeaseLapsed || l.EndReason != tc.reason || l.FallbackExtended != tc.fallback {
					t.Errorf("lapsed lease: got state %s reason %q fallback %v, want lapsed, %q, %v", l.State, l.EndReason, l.FallbackExtended, tc.reason, tc.fallback)
				}
				ev := e.lastEvent("T-1", warp.EventLapsed)
				if ev.Epoch != 1 || ev.Data.(warp.LapsedData).Reason != tc.reason || ev.Data.(warp.LapsedData).FallbackExtended != tc.fallback {
					t.Errorf("lapsed event: got epoch %d data %v, want epoch 1, reason %q, fallback_extended %v", ev.Epoch, ev.Data, tc.reason, tc.fallback)
				}
				wantTime(t, "lapsed event time", ev.At, l.ExpiresAt)
			})
		}
	})

	t.Run("LateHeartbeatDoesNotRevive", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(30 * time.Minute)
		if got := e.sweptTickets(); !slices.Equal(got, []string{"T-1"}) {
			t.Fatalf("sweep: got %v, want [T-1]", got)
		}
		lapsed := e.lease("T-1")
		e.clock.Advance(time.Second)
		_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: 0})
		wantErr(t, "v2 heartbeat after lapse", err, warp.ErrLeaseEnded)
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"})
		wantErr(t, "v1 heartbeat after lapse", err, warp.ErrLeaseEnded)
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Exit: warp.ExitParentExited})
		wantErr(t, "exit report after lapse", err, warp.ErrLeaseEnded)
		_, err = e.svc.Release(e.ctx, "T-1", 1, "")
		wantErr(t, "release after lapse", err, warp.ErrLeaseEnded)
		_, err = e.svc.Complete(e.ctx, "T-1", 1, "")
		wantErr(t, "complete after lapse", err, warp.ErrLeaseEnded)
		v := e.view("T-1")
		if v.Ticket.State != warp.TicketOpen || *v.Lease != lapsed || v.Verdict != warp.VerdictNone {
			t.Errorf("after late writes: got %+v %+v verdict %q, want ticket open, lease as lapsed, no verdict", v.Ticket, v.Lease, v.Verdict)
		}
		// After a re-claim, the old epoch is stale rather than ended.
		e.claim("T-1", "h2")
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1})
		wantErr(t, "heartbeat with the lapsed epoch after a re-claim", err, warp.ErrStaleEpoch)
	})

	t.Run("StartupGrace", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("before", "h1") // refreshed T0, expires T0+30m
		e.createClaim("hb-after", "h1")
		e.createClaim("before-too", "h1")
		e.clock.Set(T0().Add(25 * time.Minute))
		e.start() // restart: grace from T0+25m until T0+35m
		e.clock.Set(T0().Add(26 * time.Minute))
		// Refreshed after the start, but its activity is old: due at T0+31m.
		e.v2("hb-after", 1, secs(25*time.Minute))
		e.createClaim("claimed-after", "h1") // due T0+56m

		e.clock.Set(T0().Add(31 * time.Minute))
		if got := e.sweptTickets(); !slices.Equal(got, []string{"hb-after"}) {
			t.Errorf("sweep inside grace: got %v, want [hb-after] (refreshed after the start)", got)
		}
		// Four minutes without a sweep: a gap, whose grace must not lapse
		// what the startup grace still protects.
		e.clock.Set(T0().Add(35*time.Minute - time.Nanosecond))
		if got := e.sweptTickets(); len(got) != 0 {
			t.Errorf("sweep just before grace end: got %v, want none", got)
		}
		for _, id := range []string{"before", "before-too"} {
			if l := e.lease(id); l.State != warp.LeaseHeld {
				t.Errorf("%s inside grace: got %s, want held", id, l.State)
			}
		}
		e.clock.Set(T0().Add(35 * time.Minute))
		if got := e.sweptTickets(); !slices.Equal(got, []string{"before", "before-too"}) {
			t.Errorf("sweep at grace end: got %v, want [before before-too]", got)
		}
		if l := e.lease("claimed-after"); l.State != warp.LeaseHeld {
			t.Errorf("claimed-after: got %s, want held", l.State)
		}
	})

	t.Run("NoGraceWhenZero", func(t *testing.T) {
		e := newEnv(t, open, func(c *warp.Config) { c.Policy.StartupGrace = 0 })
		e.createClaim("T-1", "h1")
		e.clock.Set(T0().Add(29 * time.Minute))
		e.start()
		e.clock.Set(T0().Add(30 * time.Minute))
		if got := e.sweptTickets(); !slices.Equal(got, []string{"T-1"}) {
			t.Errorf("sweep without grace: got %v, want [T-1]", got)
		}
	})

	t.Run("ManyDue", func(t *testing.T) {
		// More than one sweep batch (1000): one Sweep lapses them all.
		const n = 1100
		e := newEnv(t, open)
		e.update(func(tx warp.Tx) error {
			now := e.clock.Now()
			for i := range n {
				id := fmt.Sprintf("T-%04d", i)
				if _, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: id, State: warp.TicketClaimed, Epoch: 1, CreatedAt: now, UpdatedAt: now}); err != nil {
					return err
				}
				l := warp.Lease{Ticket: id, Epoch: 1, State: warp.LeaseHeld, ClaimedAt: now, LastHeartbeatAt: now, LastActivityAt: now, RefreshedAt: now,
					ExpiresAt: now.Add(time.Duration(i) * time.Millisecond)}
				if err := tx.InsertLease(e.ctx, l); err != nil {
					return err
				}
			}
			return nil
		})
		e.createClaim("not-due", "h1")
		e.clock.Set(T0().Add(2 * time.Second))
		if got := len(e.sweep()); got != n {
			t.Errorf("sweep: got %d lapsed, want %d", got, n)
		}
		if l := e.lease("not-due"); l.State != warp.LeaseHeld {
			t.Errorf("not-due: got %s, want held", l.State)
		}
		var counts map[warp.TicketState]int64
		e.read(func(tx warp.Tx) error {
			var err error
			counts, err = tx.CountTickets(e.ctx)
			return err
		})
		if counts[warp.TicketOpen] != n || counts[warp.TicketClaimed] != 1 {
			t.Errorf("ticket counts: got %v, want %d open, 1 claimed", counts, n)
		}
	})
}
