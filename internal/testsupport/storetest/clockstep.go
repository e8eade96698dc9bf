package storetest

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The times of issue 43's measurement: a window of 20 s, a sweep every
// 0.5 s, a grace of 10 s, and the server's clock stepped back 10 minutes.
const (
	stepWindow = 20 * time.Second
	stepSweep  = 500 * time.Millisecond
	stepGrace  = 10 * time.Second
	stepBack   = 10 * time.Minute
)

// stepEnv is an env on issue 43's times whose Service keeps time on the
// clock's monotonic side too (warp.Config.Elapsed), as warp serve's does.
func stepEnv(t *testing.T, open func(t *testing.T) warp.Store) *env {
	t.Helper()
	e := newEnv(t, open, func(c *warp.Config) {
		c.Policy = warp.Policy{LeaseWindow: stepWindow, StallAfter: 10 * time.Second, SilentAfter: 15 * time.Second, StartupGrace: stepGrace}
		c.SweepInterval, c.Instance = stepSweep, "replica-a"
	})
	e.cfg.Elapsed = e.clock.Elapsed // the clock exists once the env does
	e.start()
	return e
}

// slewed is how long d of the service's time may take on the elapsed
// time while a step's lead is slewed away.
func slewed(d time.Duration) time.Duration { return d * warp.ClockSlew / (warp.ClockSlew - 1) }

func testClockStep(t *testing.T, open func(t *testing.T) warp.Store) {
	// The server's clock stepped back 10 minutes while it runs: a killed
	// agent's lease lapses about one window after its last heartbeat on
	// the time that elapsed (before: 620 s), and a heartbeating one is
	// kept, its expiry a window ahead of the server's clock (before: it
	// froze 609 s ahead).
	t.Run("BackwardStepHoldsNoDeadLease", func(t *testing.T) {
		e := stepEnv(t, open)
		e.clock.Advance(stepGrace + time.Second) // past the start's grace
		healthy := e.createClaim("healthy", "h1")
		dead := e.createClaim("dead", "h1")
		tick := func() {
			e.clock.Advance(stepSweep)
			e.v2("healthy", healthy.Epoch, 0)
			e.sweep()
		}
		var died time.Duration
		for range 10 { // 5 s of work, both agents beating
			e.clock.Advance(stepSweep)
			e.v2("dead", dead.Epoch, 0)
			died = e.clock.Elapsed() // its last heartbeat: then it is killed
			tick()
		}
		e.clock.Step(-stepBack)
		var lapsedAfter time.Duration
		for e.clock.Elapsed()-died < 3*stepWindow {
			tick()
			if l := e.lease("dead"); l.State != warp.LeaseHeld && lapsedAfter == 0 {
				lapsedAfter = e.clock.Elapsed() - died
				if l.State != warp.LeaseLapsed || l.EndReason != warp.LapseNoActivity {
					t.Errorf("dead lease ended %s (%s), want lapsed (no-activity)", l.State, l.EndReason)
				}
			}
			h := e.lease("healthy")
			if h.State != warp.LeaseHeld {
				t.Fatalf("healthy lease %s (%s) %v after the step", h.State, h.EndReason, e.clock.Elapsed()-died)
			}
			if ahead := h.ExpiresAt.Sub(e.svc.Now()); ahead > stepWindow {
				t.Fatalf("healthy lease expires %v after the server's now, want at most the window (%v)", ahead, stepWindow)
			}
		}
		t.Logf("the dead lease lapsed %v after its last heartbeat (window %v, clock stepped back %v)", lapsedAfter, stepWindow, stepBack)
		if lapsedAfter == 0 {
			t.Fatalf("dead lease still held %v after its agent died", e.clock.Elapsed()-died)
		}
		if lapsedAfter < stepWindow || lapsedAfter > slewed(stepWindow)+stepSweep {
			t.Errorf("dead lease lapsed %v after its last heartbeat, want one window on the elapsed time (%v to %v)",
				lapsedAfter, stepWindow, slewed(stepWindow)+stepSweep)
		}
		if v := e.view("healthy"); v.Verdict != warp.VerdictActive {
			t.Errorf("healthy lease's verdict %s, want active", v.Verdict)
		}
	})

	// The clock stepped back while warp was down: the start continues from
	// the last sweep the database records, so a dead lease still lapses
	// within window + grace + a sweep of its last evidence (the bound of
	// a restart), not ten minutes later.
	t.Run("StepWhileDownHoldsNoDeadLease", func(t *testing.T) {
		e := stepEnv(t, open)
		e.clock.Advance(stepGrace + time.Second)
		healthy := e.createClaim("healthy", "h1")
		e.createClaim("dead", "h1") // its agent never beats
		claimed := e.clock.Elapsed()
		for range 6 {
			e.clock.Advance(stepSweep)
			e.v2("healthy", healthy.Epoch, 0)
			e.sweep()
		}
		e.clock.Advance(2 * time.Second) // down, and the clock goes back
		e.clock.Step(-stepBack)
		e.start() // stops the running Service, starts another
		limit := slewed(stepWindow+stepGrace) + stepSweep
		var lapsedAfter time.Duration
		for lapsedAfter == 0 && e.clock.Elapsed()-claimed <= 2*limit {
			e.clock.Advance(stepSweep)
			e.v2("healthy", healthy.Epoch, 0)
			e.sweep()
			if l := e.lease("dead"); l.State != warp.LeaseHeld {
				lapsedAfter = e.clock.Elapsed() - claimed
			}
			if h := e.lease("healthy"); h.State != warp.LeaseHeld {
				t.Fatalf("healthy lease %s (%s) after the restart", h.State, h.EndReason)
			}
		}
		t.Logf("the dead lease lapsed %v after its claim (window %v, grace %v, clock stepped back %v while down)", lapsedAfter, stepWindow, stepGrace, stepBack)
		if lapsedAfter == 0 || lapsedAfter > limit {
			t.Errorf("dead lease lapsed %v after its last evidence (0: not at all), want within window + grace + a sweep on the elapsed time (%v)", lapsedAfter, limit)
		}
	})
}
