package storetest

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func testModes(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("ChangeRecomputesHeldLeases", func(t *testing.T) {
		e := newEnv(t, open)
		// v1 lease: claimed T0, v1 at T0+10m. v2 lease: claimed T0, v2 at
		// T0+10m with age 120 s. Ended lease: released, must not change.
		e.createClaim("v1", "h1")
		e.createClaim("v2", "h2")
		e.createClaim("ended", "h1")
		if _, err := e.svc.Release(e.ctx, "ended", 1, ""); err != nil {
			t.Fatal(err)
		}
		endedBefore := e.lease("ended")
		e.clock.Set(T0().Add(10 * time.Minute))
		e.v1("v1", "h1")
		e.v2("v2", 1, 120)
		at := func(d time.Duration) time.Time { return T0().Add(d + 30*time.Minute) }
		for _, step := range []struct {
			mode   warp.Mode
			force  bool
			v1, v2 time.Time
		}{
			{warp.ModeLegacy, false, at(10 * time.Minute), at(10 * time.Minute)},
			{warp.ModeActivity, true, at(0), at(8 * time.Minute)},
			{warp.ModeTransition, false, at(10 * time.Minute), at(8 * time.Minute)},
		} {
			got, err := e.svc.SetMode(e.ctx, step.mode, step.force)
			if err != nil || got != step.mode {
				t.Fatalf("set mode %s: got %q, %v", step.mode, got, err)
			}
			if m, err := e.svc.Mode(e.ctx); err != nil || m != step.mode {
				t.Errorf("mode after set %s: got %q, %v", step.mode, m, err)
			}
			wantTime(t, string(step.mode)+": v1 lease expires_at", e.lease("v1").ExpiresAt, step.v1)
			wantTime(t, string(step.mode)+": v2 lease expires_at", e.lease("v2").ExpiresAt, step.v2)
			if l := e.lease("ended"); l != endedBefore {
				t.Errorf("%s: ended lease changed: got %+v, want %+v", step.mode, l, endedBefore)
			}
		}
		var evs []warp.Event
		e.read(func(tx warp.Tx) error {
			var err error
			evs, err = tx.Events(e.ctx, "", 0, 100)
			return err
		})
		if len(evs) != 3 {
			t.Fatalf("global events: got %d (%v), want 3 mode changes", len(evs), evs)
		}
		want := []warp.ModeChangedData{{From: warp.ModeTransition, To: warp.ModeLegacy}, {From: warp.ModeLegacy, To: warp.ModeActivity, Forced: true},
			{From: warp.ModeActivity, To: warp.ModeTransition}}
		for i, ev := range evs {
			if ev.Kind != warp.EventModeChanged || ev.Ticket != "" || ev.Data != want[i] {
				t.Errorf("mode event %d: got %+v, want mode-changed %+v", i, ev, want[i])
			}
		}
		// Setting the current mode again is a no-op without an event.
		if _, err := e.svc.SetMode(e.ctx, warp.ModeTransition, false); err != nil {
			t.Fatal(err)
		}
		e.read(func(tx warp.Tx) error {
			var err error
			evs, err = tx.Events(e.ctx, "", 0, 100)
			return err
		})
		if len(evs) != 3 {
			t.Errorf("global events after a no-op set: got %d, want 3", len(evs))
		}
		_, err := e.svc.SetMode(e.ctx, "fast", false)
		wantErr(t, "set unknown mode", err, warp.ErrInvalid)
	})

	t.Run("ActivityRefusedWhileV1InWindow", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "old-host")
		e.createClaim("T-2", "new-host")
		e.clock.Advance(time.Minute)
		e.v1("T-1", "old-host")
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "new-host"}); err != nil {
			t.Fatal(err)
		}
		before := e.lease("T-1")
		_, err := e.svc.SetMode(e.ctx, warp.ModeActivity, false)
		wantErr(t, "activity mode with a v1 host in the window", err, warp.ErrAdoptionIncomplete)
		if m, _ := e.svc.Mode(e.ctx); m != warp.ModeTransition {
			t.Errorf("mode after refusal: got %s, want transition", m)
		}
		if l := e.lease("T-1"); l != before {
			t.Errorf("lease after refusal: got %+v, want unchanged %+v", l, before)
		}

		// 23h59m later the v1 heartbeat is still inside the 24h window.
		e.clock.Set(T0().Add(time.Minute + 24*time.Hour - time.Minute))
		_, err = e.svc.SetMode(e.ctx, warp.ModeActivity, false)
		wantErr(t, "activity mode with v1 still in the window", err, warp.ErrAdoptionIncomplete)

		// Once it has left the window (bucket granularity: over a second
		// past it) activity mode is allowed.
		e.clock.Set(T0().Add(time.Minute + 24*time.Hour + 2*time.Second))
		e.createClaim("T-3", "new-host")
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-3", Epoch: 1, Host: "new-host"}); err != nil {
			t.Fatal(err)
		}
		if m, err := e.svc.SetMode(e.ctx, warp.ModeActivity, false); err != nil || m != warp.ModeActivity {
			t.Errorf("activity mode with only v2 in the window: got %q, %v", m, err)
		}
	})

	t.Run("ActivityForced", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "old-host")
		e.clock.Advance(10 * time.Minute)
		e.v1("T-1", "old-host")
		if m, err := e.svc.SetMode(e.ctx, warp.ModeActivity, true); err != nil || m != warp.ModeActivity {
			t.Fatalf("forced activity mode: got %q, %v", m, err)
		}
		wantTime(t, "v1 lease expires_at under activity", e.lease("T-1").ExpiresAt, T0().Add(30*time.Minute))
	})

	t.Run("InitKeepsStoredMode", func(t *testing.T) {
		e := newEnv(t, open, withMode(warp.ModeLegacy))
		if m, _ := e.svc.Mode(e.ctx); m != warp.ModeLegacy {
			t.Fatalf("initial mode: got %s, want legacy", m)
		}
		if _, err := e.svc.SetMode(e.ctx, warp.ModeTransition, false); err != nil {
			t.Fatal(err)
		}
		e.cfg.InitialMode = warp.ModeActivity
		e.start()
		if m, _ := e.svc.Mode(e.ctx); m != warp.ModeTransition {
			t.Errorf("mode after restart with another initial mode: got %s, want the stored transition", m)
		}
	})

	t.Run("LeaseWindowChangeRecomputes", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.cfg.Policy.LeaseWindow = time.Hour
		e.start()
		wantTime(t, "expires_at after restart with a 1h window", e.lease("T-1").ExpiresAt, T0().Add(time.Hour))
	})
}
