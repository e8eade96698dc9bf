package dashboard

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The history reads each kind's detail from its type: a lapse shows its
// reason, the fallback and its last times, and nothing for a time the
// lease never had (it showed "0001-01-01T00:00:00Z").
func TestEventViewOfALapse(t *testing.T) {
	at := time.Date(2026, 12, 8, 12, 0, 0, 0, time.UTC)
	e := warp.NewEvent("T-1", 2, at, warp.LapsedData{Reason: warp.LapseNoHeartbeat, FallbackExtended: true, Agent: "a", Host: "h",
		LastHeartbeatAt: at.Add(-30 * time.Minute)})
	v := newEventView(e, at.Add(time.Minute))
	if v.Reason != warp.LapseNoHeartbeat || !v.HasFallback || !v.Fallback || v.Agent != "a" || v.Host != "h" || v.Epoch != 2 {
		t.Errorf("view %+v", v)
	}
	if v.LastActivity != "" || v.LastHeartbeat != "2026-12-08 11:30:00Z" {
		t.Errorf("last activity %q, last heartbeat %q; want none and 2026-12-08 11:30:00Z", v.LastActivity, v.LastHeartbeat)
	}
	if v := newEventView(warp.NewEvent("T-1", 1, at, warp.CompletedData{PRURL: "https://x/pr/1", By: "jane"}), at); !v.PRIsLink || v.By != "jane" {
		t.Errorf("completed: %+v", v)
	}
}
