package warp_test

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func TestVerdictWords(t *testing.T) {
	p := warp.Policy{LeaseWindow: 30 * time.Minute, StallAfter: 15 * time.Minute, SilentAfter: 9 * time.Minute, SpinAfter: 45 * time.Minute}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	held := func(hb, act time.Duration) warp.Lease {
		return warp.Lease{State: warp.LeaseHeld, ClaimedAt: now.Add(-time.Hour), LastHeartbeatAt: now.Add(-hb), LastActivityAt: now.Add(-act), RefreshedAt: now.Add(-hb),
			SchemaVersion: 2, FirstV2At: now.Add(-time.Hour)}
	}
	exited := held(time.Minute, time.Minute)
	exited.Exit = "parent-exited"
	unwired := held(time.Minute, time.Minute)
	unwired.HookSeen = warp.HookNo
	looping := held(time.Minute, time.Minute)
	looping.LastProgressAt = now.Add(-2 * time.Minute)
	looping.Loop = warp.Loop{Label: "Bash: npm test", Count: 7, Error: "TypeError: x is not a function"}
	spinning := held(time.Minute, time.Minute)
	spinning.LastProgressAt = now.Add(-50 * time.Minute)
	ended := held(time.Minute, 31*time.Minute)
	ended.State = warp.LeaseLapsed // the lease as it ends: judged as held
	for _, tc := range []struct {
		name string
		l    warp.Lease
		want string
	}{
		{"active", held(time.Minute, 2*time.Minute), "active"},
		{"stalled", held(time.Minute, 31*time.Minute), "stalled 31m0s"},
		{"silent", held(12*time.Minute, 12*time.Minute), "silent 12m0s"},
		{"exited", exited, "exited (parent-exited)"},
		{"unwired", unwired, "unwired (the hook never fired)"},
		{"ending", ended, "stalled 31m0s"},
		{"short", held(time.Minute, 15*time.Minute+1500*time.Microsecond), "stalled 15m0s"},
		{"looping", looping, "looping on `Bash: npm test` ×7: TypeError: x is not a function"},
		{"spinning", spinning, "spinning: no progress for 50m0s"},
	} {
		if got := p.VerdictWords(tc.l, now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFailedAttempts(t *testing.T) {
	a := func(s warp.LeaseState, reset bool) warp.Attempt {
		return warp.Attempt{Lease: warp.Lease{State: s}, Record: warp.AttemptRecord{CapReset: reset}}
	}
	for _, tc := range []struct {
		name string
		in   []warp.Attempt // newest first
		want int
	}{
		{"none", nil, 0},
		{"all failed", []warp.Attempt{a(warp.LeaseLapsed, false), a(warp.LeaseReleased, false)}, 2},
		{"stops at a completion", []warp.Attempt{a(warp.LeaseReleased, false), a(warp.LeaseCompleted, false), a(warp.LeaseLapsed, false)}, 1},
		{"stops at the reset", []warp.Attempt{a(warp.LeaseReleased, false), a(warp.LeaseLapsed, true), a(warp.LeaseLapsed, false)}, 1},
		{"held first", []warp.Attempt{a(warp.LeaseHeld, false), a(warp.LeaseLapsed, false)}, 0},
	} {
		if got := warp.FailedAttempts(tc.in); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
