package storetest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func testHeartbeats(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("V2", func(t *testing.T) {
		e := newEnv(t, open)
		claimed := e.createClaim("T-1", "h1")
		now := e.clock.Advance(5 * time.Minute)
		res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h1", Agent: "O",
			ActivityAge: 42.5, InFlight: "Bash"})
		if err != nil {
			t.Fatal(err)
		}
		act := now.Add(-42500 * time.Millisecond)
		if res.Ticket != "T-1" || res.Epoch != 1 || !res.Extended || res.Mode != warp.ModeTransition || res.Verdict != warp.VerdictActive {
			t.Errorf("answer: got %+v, want T-1/1 extended in transition, active", res)
		}
		wantTime(t, "answer expires_at", res.ExpiresAt, act.Add(30*time.Minute))
		l := e.lease("T-1")
		wantTime(t, "last_heartbeat_at", l.LastHeartbeatAt, now)
		wantTime(t, "last_activity_at = server now - age", l.LastActivityAt, act)
		wantTime(t, "expires_at", l.ExpiresAt, act.Add(30*time.Minute))
		wantTime(t, "refreshed_at", l.RefreshedAt, now)
		wantTime(t, "first_v2_at", l.FirstV2At, now)
		wantTime(t, "claimed_at unchanged", l.ClaimedAt, claimed.ClaimedAt)
		if l.SchemaVersion != 2 || l.InFlight != "Bash" || l.State != warp.LeaseHeld {
			t.Errorf("lease: got schema %d in_flight %q state %s, want 2, Bash, held", l.SchemaVersion, l.InFlight, l.State)
		}
		ev := e.lastEvent("T-1", warp.EventFirstV2Heartbeat)
		wantTime(t, "first-v2-heartbeat event time", ev.At, now)

		// Activity never moves backwards: an older report keeps the newer time.
		now2 := e.clock.Advance(time.Minute)
		e.v2("T-1", 1, 600)
		l = e.lease("T-1")
		wantTime(t, "last_activity_at after an older report", l.LastActivityAt, act)
		wantTime(t, "last_heartbeat_at after an older report", l.LastHeartbeatAt, now2)
		wantTime(t, "first_v2_at stays the first", l.FirstV2At, now)
		// A fresher one moves it.
		e.v2("T-1", 1, 0)
		wantTime(t, "last_activity_at after age 0", e.lease("T-1").LastActivityAt, now2)
		n := 0
		for _, k := range e.kinds("T-1") {
			if k == warp.EventFirstV2Heartbeat {
				n++
			}
		}
		if n != 1 {
			t.Errorf("first-v2-heartbeat events: got %d, want 1", n)
		}
	})

	// A stale report: the loop lives (last_heartbeat_at moves, the verdict
	// is stalled, never silent), the agent does not progress, and nothing
	// extends the lease in any mode — legacy included, where heartbeats
	// otherwise do.
	t.Run("StaleReport", func(t *testing.T) {
		for _, mode := range []warp.Mode{warp.ModeLegacy, warp.ModeTransition, warp.ModeActivity} {
			t.Run(string(mode), func(t *testing.T) {
				e := newEnv(t, open)
				if _, err := e.svc.SetMode(e.ctx, mode, true); err != nil {
					t.Fatal(err)
				}
				e.createClaim("T-1", "h1")
				fresh := e.clock.Advance(time.Minute)
				e.v2("T-1", 1, 0)
				expires := e.lease("T-1").ExpiresAt
				var last time.Time
				for i := 1; i <= 8; i++ { // four minutes apart, past the stall threshold
					last = e.clock.Advance(4 * time.Minute)
					age := last.Sub(fresh).Seconds()
					res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h1", ActivityAge: age, Stale: true})
					if err != nil {
						t.Fatal(err)
					}
					if res.Extended || res.Note == "" {
						t.Errorf("stale report %d: extended %v note %q, want not extended with a note", i, res.Extended, res.Note)
					}
					wantTime(t, "answer expires_at", res.ExpiresAt, expires)
					want := warp.VerdictActive
					if last.Sub(fresh) > warp.DefaultStallAfter {
						want = warp.VerdictStalled
					}
					if res.Verdict != want {
						t.Errorf("stale report %d (%v after the last activity): verdict %s, want %s", i, last.Sub(fresh), res.Verdict, want)
					}
				}
				l := e.lease("T-1")
				wantTime(t, "last_heartbeat_at", l.LastHeartbeatAt, last)
				wantTime(t, "last_activity_at", l.LastActivityAt, fresh)
				wantTime(t, "expires_at", l.ExpiresAt, expires)
				// A mode change recomputes expiry from the stored columns: a
				// stale report still extends nothing.
				if _, err := e.svc.SetMode(e.ctx, warp.ModeLegacy, true); err != nil {
					t.Fatal(err)
				}
				wantTime(t, "expires_at recomputed in legacy", e.lease("T-1").ExpiresAt, fresh.Add(warp.DefaultLeaseWindow))
			})
		}
	})

	t.Run("HookHealth", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		if l := e.lease("T-1"); l.HookSeen != warp.HookUnknown || l.HookEvents != 0 {
			t.Errorf("at claim: got hook seen %q events %d, want unknown, 0", l.HookSeen, l.HookEvents)
		}
		yes, no := true, false
		for _, step := range []struct {
			seen   *bool
			events int64
			want   warp.HookSeen
			total  int64
		}{
			{&no, 0, warp.HookNo, 0},
			{&yes, 3, warp.HookYes, 3},
			{nil, 2, warp.HookYes, 5}, // an older loop says nothing: the last report stands
		} {
			e.clock.Advance(time.Minute)
			if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookSeen: step.seen, HookEvents: step.events}); err != nil {
				t.Fatal(err)
			}
			if l := e.lease("T-1"); l.HookSeen != step.want || l.HookEvents != step.total {
				t.Errorf("after a report of %v/%d: got hook seen %q events %d, want %q, %d", step.seen, step.events, l.HookSeen, l.HookEvents, step.want, step.total)
			}
		}
		_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookEvents: -1})
		wantErr(t, "negative hook events", err, warp.ErrInvalid)
		// An absurd count is refused before it can wrap the sum (two
		// heartbeats of int64 max used to leave -2); the bound itself passes.
		for range 2 {
			_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookEvents: math.MaxInt64})
			wantErr(t, "int64 max hook events", err, warp.ErrInvalid)
		}
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookEvents: warp.MaxHookEvents}); err != nil {
			t.Fatal(err)
		}
		if l := e.lease("T-1"); l.HookEvents != 5+warp.MaxHookEvents {
			t.Errorf("hook events after the bound: got %d, want %d", l.HookEvents, 5+warp.MaxHookEvents)
		}
	})

	// Issue 44: a lease has no progress until its loop reports some
	// (counted by the loop from the claim); progress_age_s moves
	// last_progress_at forward (never back) and each report that carries
	// it says the loop (none when absent); a loop without progress
	// reports leaves both as they are.
	t.Run("Progress", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		if l := e.lease("T-1"); !l.LastProgressAt.IsZero() || l.Loop.Looping() {
			t.Errorf("at the claim: last_progress_at %v loop %+v, want none", l.LastProgressAt, l.Loop)
		}
		age := func(s float64) *float64 { return &s }
		loop := &warp.Loop{Label: "Bash: npm test", Count: 4, Error: "Exit code 1"}
		for _, step := range []struct {
			name     string
			progress *float64
			loop     *warp.Loop
			back     time.Duration // want last_progress_at this long before the heartbeat
			fromNow  bool
			want     warp.Loop
		}{
			{"progress 30 s ago", age(30), nil, 30 * time.Second, true, warp.Loop{}},
			{"no progress since, looping", age(90), loop, 90 * time.Second, true, *loop},
			{"an older progress report goes not back", age(3600), loop, 150 * time.Second, true, *loop},
			{"a loop from before issue 44", nil, nil, 210 * time.Second, true, *loop},
			{"the loop ended", age(0), nil, 0, true, warp.Loop{}},
		} {
			now := e.clock.Advance(time.Minute)
			if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ProgressAge: step.progress, Loop: step.loop}); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			l := e.lease("T-1")
			wantTime(t, step.name+": last_progress_at", l.LastProgressAt, now.Add(-step.back))
			if l.Loop != step.want {
				t.Errorf("%s: loop %+v, want %+v", step.name, l.Loop, step.want)
			}
		}
		for _, bad := range []warp.Heartbeat{
			{ProgressAge: age(-1)},
			{ProgressAge: age(math.NaN())},
			{ProgressAge: age(warp.MaxProgressAge + 1)},
			{ProgressAge: age(0), Loop: &warp.Loop{Label: "x", Count: 1}},
			{ProgressAge: age(0), Loop: &warp.Loop{Label: strings.Repeat("x", warp.MaxLoopText+1), Count: 4}},
		} {
			bad.SchemaVersion, bad.Ticket, bad.Epoch = 2, "T-1", 1
			_, err := e.svc.Heartbeat(e.ctx, bad)
			wantErr(t, fmt.Sprintf("progress %v loop %+v", bad.ProgressAge, bad.Loop), err, warp.ErrInvalid)
		}
	})

	// warp serve --progress-deadline: a looping lease that keeps its
	// activity fresh lapses D after its last progress, reason
	// no-progress; a lease that progresses does not.
	t.Run("ProgressDeadline", func(t *testing.T) {
		e := newEnv(t, open, func(c *warp.Config) { c.Policy.ProgressDeadline = 10 * time.Minute })
		e.createClaim("L-1", "h1")
		e.createClaim("P-1", "h1")
		zero := 0.0
		loop := &warp.Loop{Label: "Bash: npm test", Count: 4}
		for range 4 {
			e.clock.Advance(4 * time.Minute)
			for _, id := range []string{"L-1", "P-1"} {
				hb := warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, ProgressAge: &zero}
				if id == "L-1" {
					age := float64(e.clock.Now().Sub(T0()).Seconds()) // no progress since the claim
					hb.ProgressAge, hb.Loop = &age, loop
				}
				if _, err := e.svc.Heartbeat(e.ctx, hb); err != nil && id == "P-1" {
					t.Fatalf("heartbeat %s: %v", id, err)
				}
			}
			e.sweep()
		}
		l := e.lease("L-1")
		if l.State != warp.LeaseLapsed || l.EndReason != warp.LapseNoProgress {
			t.Fatalf("looping lease: %s, reason %q; want lapsed, %s", l.State, l.EndReason, warp.LapseNoProgress)
		}
		wantTime(t, "looping lease's lapse", l.EndedAt, T0().Add(12*time.Minute))
		if l := e.lease("P-1"); l.State != warp.LeaseHeld {
			t.Fatalf("progressing lease: %s, want held", l.State)
		}
	})

	t.Run("V1", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(time.Minute)
		e.v2("T-1", 1, 0)
		act := e.clock.Now()
		now := e.clock.Advance(3 * time.Minute)
		res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Epoch != 1 || !res.Extended {
			t.Errorf("answer: got %+v, want epoch 1 (the current lease), extended", res)
		}
		l := e.lease("T-1")
		wantTime(t, "last_heartbeat_at", l.LastHeartbeatAt, now)
		wantTime(t, "last_activity_at unchanged by v1", l.LastActivityAt, act)
		if l.SchemaVersion != 1 || l.InFlight != "" {
			t.Errorf("lease: got schema %d in_flight %q, want 1 and none", l.SchemaVersion, l.InFlight)
		}
		e.create("T-2")
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-2"})
		wantErr(t, "v1 heartbeat on a never claimed ticket", err, warp.ErrLeaseEnded)
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-missing"})
		wantErr(t, "v1 heartbeat on an unknown ticket", err, warp.ErrNotFound)
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-missing", Epoch: 1})
		wantErr(t, "v2 heartbeat on an unknown ticket", err, warp.ErrNotFound)
	})

	t.Run("BadInputChangesNothing", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(time.Minute)
		before := e.lease("T-1")
		for _, tc := range []struct {
			name string
			h    warp.Heartbeat
			want error
		}{
			{"schema 3", warp.Heartbeat{SchemaVersion: 3, Ticket: "T-1", Epoch: 1}, warp.ErrUnsupportedSchema},
			{"schema 0", warp.Heartbeat{SchemaVersion: 0, Ticket: "T-1"}, warp.ErrUnsupportedSchema},
			{"negative age", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: -1}, warp.ErrInvalid},
			{"NaN age", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: math.NaN()}, warp.ErrInvalid},
			{"infinite age", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: math.Inf(1)}, warp.ErrInvalid},
			{"huge age", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: 1e12}, warp.ErrInvalid},
			{"v2 without epoch", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1"}, warp.ErrInvalid},
			{"unknown exit", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Exit: "bored"}, warp.ErrInvalid},
			{"bad ticket id", warp.Heartbeat{SchemaVersion: 2, Ticket: "../T-1", Epoch: 1}, warp.ErrInvalid},
			{"stale epoch", warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 7}, warp.ErrStaleEpoch},
		} {
			_, err := e.svc.Heartbeat(e.ctx, tc.h)
			wantErr(t, tc.name, err, tc.want)
		}
		if after := e.lease("T-1"); after != before {
			t.Errorf("lease after rejected heartbeats: got %+v, want %+v", after, before)
		}
		a, err := e.svc.Adoption(e.ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Hosts) != 0 {
			t.Errorf("adoption after rejected heartbeats: got %+v, want no host counted", a.Hosts)
		}
	})

	t.Run("ExitReport", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		now := e.clock.Advance(2 * time.Minute)
		res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h1", ActivityAge: 60, Exit: warp.ExitParentExited})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != warp.VerdictExited {
			t.Errorf("answer verdict: got %q, want exited", res.Verdict)
		}
		l := e.lease("T-1")
		if l.Exit != warp.ExitParentExited || l.State != warp.LeaseHeld {
			t.Errorf("lease: got exit %q state %s, want parent-exited, still held", l.Exit, l.State)
		}
		wantTime(t, "exited_at", l.ExitedAt, now)
		wantTime(t, "expires_at (lapses on the normal schedule)", l.ExpiresAt, now.Add(-time.Minute).Add(30*time.Minute))
		if v := e.view("T-1").Verdict; v != warp.VerdictExited {
			t.Errorf("verdict: got %q, want exited", v)
		}
		ev := e.lastEvent("T-1", warp.EventExitReport)
		if ev.Epoch != 1 || ev.Data.(warp.ExitReportData).Exit != warp.ExitParentExited {
			t.Errorf("exit-report event: got %+v", ev)
		}
		// Recorded once: a second report changes neither the exit nor the history.
		e.clock.Advance(time.Minute)
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Exit: warp.ExitWorktreeGone}); err != nil {
			t.Fatal(err)
		}
		l = e.lease("T-1")
		if l.Exit != warp.ExitParentExited {
			t.Errorf("exit after a second report: got %q, want the first, parent-exited", l.Exit)
		}
		wantTime(t, "exited_at after a second report", l.ExitedAt, now)
		n := 0
		for _, k := range e.kinds("T-1") {
			if k == warp.EventExitReport {
				n++
			}
		}
		if n != 1 {
			t.Errorf("exit-report events: got %d, want 1", n)
		}
		// It lapses on schedule, as agent-exited.
		e.clock.Set(l.ExpiresAt)
		if got := e.sweptTickets(); !slices.Equal(got, []string{"T-1"}) {
			t.Fatalf("sweep at expiry: got %v, want [T-1]", got)
		}
		if ev := e.lastEvent("T-1", warp.EventLapsed); ev.Data.(warp.LapsedData).Reason != warp.LapseAgentExited {
			t.Errorf("lapsed: got %+v, want agent-exited", ev.Data)
		}
	})

	t.Run("ReleaseOnExit", func(t *testing.T) {
		e := newEnv(t, open, func(c *warp.Config) { c.ReleaseOnExit = true })
		e.createClaim("T-1", "h1")
		now := e.clock.Advance(time.Minute)
		res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Exit: warp.ExitWorktreeGone})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != warp.VerdictExited {
			t.Errorf("answer verdict: got %q, want exited", res.Verdict)
		}
		wantTime(t, "answer expires_at (ended now)", res.ExpiresAt, now)
		v := e.view("T-1")
		if v.Ticket.State != warp.TicketOpen || v.Lease.State != warp.LeaseReleased || v.Lease.EndReason != warp.ReleaseExitReport || v.Lease.Exit != warp.ExitWorktreeGone {
			t.Errorf("after exit report: got %+v %+v, want ticket open, lease released (exit-report), exit worktree-gone", v.Ticket, v.Lease)
		}
		wantTime(t, "ended_at", v.Lease.EndedAt, now)
		k := e.kinds("T-1")
		if len(k) < 2 || k[len(k)-2] != warp.EventExitReport || k[len(k)-1] != warp.EventReleased {
			t.Errorf("events: got %v, want ... exit-report, released", k)
		}
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1})
		wantErr(t, "heartbeat after release on exit", err, warp.ErrLeaseEnded)
		if l := e.claim("T-1", "h2"); l.Epoch != 2 {
			t.Errorf("re-claim: got epoch %d, want 2", l.Epoch)
		}
	})
}
