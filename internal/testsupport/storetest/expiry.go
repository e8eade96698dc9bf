package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// leaseKind is how a lease was fed, for the expiry table. Claimed at T0;
// all heartbeats after it.
type leaseKind struct {
	name string
	feed func(e *env) // heartbeats, advancing the clock
}

// feedV1: a v1 heartbeat at T0+10m (activity stays at the claim, T0).
func feedV1(e *env) {
	e.clock.Set(T0().Add(10 * time.Minute))
	e.v1("T-1", "h1")
}

// feedV2: a v2 heartbeat at T0+10m with age 120 s (activity T0+8m).
func feedV2(e *env) {
	e.clock.Set(T0().Add(10 * time.Minute))
	e.v2("T-1", 1, 120)
}

// feedMixed: feedV2, then a v1 heartbeat at T0+20m.
func feedMixed(e *env) {
	feedV2(e)
	e.clock.Set(T0().Add(20 * time.Minute))
	e.v1("T-1", "h1")
}

func feedNothing(*env) {}

func testExpiry(t *testing.T, open func(t *testing.T) warp.Store) {
	m := func(d time.Duration) time.Time { return T0().Add(d + 30*time.Minute) }
	claimOnly := leaseKind{"claim only", feedNothing}
	v1Lease := leaseKind{"v1", feedV1}
	v2Lease := leaseKind{"v2", feedV2}
	mixedLease := leaseKind{"v2 then v1", feedMixed}
	for _, tc := range []struct {
		mode warp.Mode
		kind leaseKind
		want time.Time // expires_at
	}{
		{warp.ModeLegacy, claimOnly, m(0)},
		{warp.ModeLegacy, v1Lease, m(10 * time.Minute)},
		{warp.ModeLegacy, v2Lease, m(10 * time.Minute)},
		{warp.ModeLegacy, mixedLease, m(20 * time.Minute)},
		{warp.ModeTransition, claimOnly, m(0)},
		{warp.ModeTransition, v1Lease, m(10 * time.Minute)},    // MAX(activity T0, heartbeat T0+10m)
		{warp.ModeTransition, v2Lease, m(8 * time.Minute)},     // activity
		{warp.ModeTransition, mixedLease, m(20 * time.Minute)}, // latest was v1: MAX(T0+8m, T0+20m)
		{warp.ModeActivity, claimOnly, m(0)},
		{warp.ModeActivity, v1Lease, m(0)},
		{warp.ModeActivity, v2Lease, m(8 * time.Minute)},
		{warp.ModeActivity, mixedLease, m(8 * time.Minute)},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.mode, tc.kind.name), func(t *testing.T) {
			e := newEnv(t, open, withMode(tc.mode))
			if l := e.createClaim("T-1", "h1"); !l.ExpiresAt.Equal(m(0)) {
				t.Errorf("expires_at at claim: got %s, want %s", l.ExpiresAt, m(0))
			}
			tc.kind.feed(e)
			l := e.lease("T-1")
			wantTime(t, "expires_at", l.ExpiresAt, tc.want)
			if got := Policy().ExpiresAt(tc.mode, l); !got.Equal(l.ExpiresAt) {
				t.Errorf("stored expires_at %s disagrees with Policy.ExpiresAt %s", l.ExpiresAt, got)
			}
			// Due exactly at expires_at, not a nanosecond before.
			e.clock.Set(tc.want.Add(-time.Nanosecond))
			if got := e.sweptTickets(); len(got) != 0 {
				t.Errorf("sweep 1ns before expiry: got %v, want none", got)
			}
			e.clock.Set(tc.want)
			if got := e.sweptTickets(); !slices.Equal(got, []string{"T-1"}) {
				t.Errorf("sweep at expiry: got %v, want [T-1]", got)
			}
		})
	}

	t.Run("AnswerCarriesExpiry", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(4 * time.Minute)
		res := e.v2("T-1", 1, 30)
		wantTime(t, "answer expires_at", res.ExpiresAt, e.lease("T-1").ExpiresAt)
		res = e.v1("T-1", "h1")
		wantTime(t, "v1 answer expires_at", res.ExpiresAt, e.lease("T-1").ExpiresAt)
	})

	t.Run("ActivityModeV1DoesNotExtend", func(t *testing.T) {
		e := newEnv(t, open, withMode(warp.ModeActivity))
		e.createClaim("T-1", "h1")
		e.clock.Advance(5 * time.Minute)
		e.v2("T-1", 1, 0)
		before := e.lease("T-1")
		now := e.clock.Advance(10 * time.Minute)
		res := e.v1("T-1", "h1")
		if res.Extended || res.Note == "" || res.Mode != warp.ModeActivity {
			t.Errorf("answer: got %+v, want extended false with a note, mode activity", res)
		}
		wantTime(t, "answer expires_at", res.ExpiresAt, before.ExpiresAt)
		l := e.lease("T-1")
		wantTime(t, "last_heartbeat_at (recorded)", l.LastHeartbeatAt, now)
		wantTime(t, "expires_at (unchanged)", l.ExpiresAt, before.ExpiresAt)
		wantTime(t, "refreshed_at (unchanged)", l.RefreshedAt, before.RefreshedAt)
		wantTime(t, "last_activity_at (unchanged)", l.LastActivityAt, before.LastActivityAt)
		a, err := e.svc.Adoption(e.ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var v1 int64
		for _, h := range a.Hosts {
			v1 += h.V1Count
		}
		if v1 != 1 {
			t.Errorf("v1 heartbeats counted for adoption: got %d, want 1", v1)
		}
		// A v2 heartbeat still extends.
		res = e.v2("T-1", 1, 0)
		if !res.Extended {
			t.Errorf("v2 answer in activity mode: got extended false")
		}
		wantTime(t, "expires_at after v2", e.lease("T-1").ExpiresAt, now.Add(30*time.Minute))
	})
}
