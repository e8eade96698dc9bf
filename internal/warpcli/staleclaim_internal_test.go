package warpcli

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// staleClaim judges a listed lease by the server's mode: which timestamp
// counts, and whether it is idle for longer than --older-than.
func TestStaleClaim(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	lease := func(schema int, activity, heartbeat time.Duration, refreshed *time.Time) *client.Lease {
		return &client.Lease{Epoch: 3, Agent: "O", Host: "h", State: string(warp.LeaseHeld), SchemaVersion: schema,
			ClaimedAt: ago(3 * time.Hour), LastActivityAt: ago(activity), LastHeartbeatAt: ago(heartbeat), RefreshedAt: refreshed}
	}
	refreshed := ago(50 * time.Minute)
	ended := lease(2, time.Hour, time.Hour, nil)
	ended.State = string(warp.LeaseReleased)
	for _, tc := range []struct {
		name     string
		mode     warp.Mode
		lease    *client.Lease
		stale    bool
		basis    string
		idleMins float64
	}{
		{"no lease", warp.ModeTransition, nil, false, "", 0},
		{"lease not held", warp.ModeTransition, ended, false, "", 0},
		{"v2, activity old, transition", warp.ModeTransition, lease(2, 45*time.Minute, time.Minute, nil), true, "last_activity_at", 45},
		{"v2, activity recent", warp.ModeTransition, lease(2, 10*time.Minute, time.Minute, nil), false, "", 0},
		{"v1, recent heartbeat counts in transition", warp.ModeTransition, lease(1, 45*time.Minute, 5*time.Minute, nil), false, "", 0},
		{"v1, both old: the later, a heartbeat", warp.ModeTransition, lease(1, 90*time.Minute, 40*time.Minute, nil), true, "last_heartbeat_at", 40},
		{"legacy v2: the last non-stale heartbeat", warp.ModeLegacy, lease(2, 90*time.Minute, time.Minute, &refreshed), true, "refreshed_at", 50},
		{"legacy v1: the last heartbeat", warp.ModeLegacy, lease(1, 90*time.Minute, 35*time.Minute, nil), true, "last_heartbeat_at", 35},
		{"activity mode ignores heartbeats", warp.ModeActivity, lease(1, 45*time.Minute, time.Minute, nil), true, "last_activity_at", 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, idle, ok := staleClaim(tc.mode, client.Ticket{ID: "T-1", Lease: tc.lease}, now, 30*time.Minute)
			if ok != tc.stale {
				t.Fatalf("stale: got %v, want %v (%+v)", ok, tc.stale, sc)
			}
			if !ok {
				return
			}
			if sc.Basis != tc.basis || idle != time.Duration(tc.idleMins*float64(time.Minute)) || sc.IdleS != idle.Seconds() ||
				sc.Action != "would-release" || sc.Ticket != "T-1" || sc.Epoch != 3 {
				t.Errorf("got basis %s, idle %s, %+v; want basis %s, idle %vm, would-release T-1 epoch 3", sc.Basis, idle, sc, tc.basis, tc.idleMins)
			}
		})
	}
}
