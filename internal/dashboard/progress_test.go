package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// beatProgress sends a v2 heartbeat with a progress report (issue 44).
func (s *server) beatProgress(tb testing.TB, id string, progressAge time.Duration, loop *client.LoopReport) {
	tb.Helper()
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id, Epoch: 1,
		Host: "h", Agent: "agent", ActivityAgeS: ptr(0.0), ProgressAgeS: ptr(progressAge.Seconds()), Loop: loop}); err != nil {
		tb.Fatalf("heartbeat %s: %v", id, err)
	}
}

// A looping lease and a spinning one show their verdicts (badge, summary
// chip, ?verdict= filter) and the ticket page says what repeats.
func TestLoopingAndSpinningShown(t *testing.T) {
	s := startServer(t)
	for _, id := range []string{"L", "S", "A"} {
		s.create(t, id, "work "+id)
		s.claim(t, id, "agent-"+id, "h")
	}
	s.clk.Advance(time.Minute)
	s.beatProgress(t, "L", 0, &client.LoopReport{Label: "Bash: npm test", Count: 5, Error: "exit 1"})
	s.beatProgress(t, "S", time.Hour, nil)
	s.beatProgress(t, "A", 0, nil)
	hc := &http.Client{}
	_, body, _ := get(t, hc, s.url+"/")
	mustContain(t, "index", body, `class="chip v-looping`, `class="chip v-spinning`,
		`<span class="badge v-looping"`, `<span class="badge v-spinning"`)
	_, body, _ = get(t, hc, s.url+"/?verdict=looping")
	mustContain(t, "index filtered", body, `id="t-L"`)
	if strings.Contains(body, `id="t-S"`) || strings.Contains(body, `id="t-A"`) {
		t.Errorf("?verdict=looping lists other leases")
	}
	_, body, _ = get(t, hc, s.url+"/tickets/L")
	mustContain(t, "ticket", body, `<span class="badge v-looping" id="verdict">looping</span>`,
		"looping on `Bash: npm test` ×5: exit 1", "last progress",
		// The lease timeline draws the looping span in its colour.
		`class="seg v-looping" data-verdict="looping"`)
	_, body, _ = get(t, hc, s.url+"/tickets/S")
	mustContain(t, "ticket S", body, `<span class="badge v-spinning" id="verdict">spinning</span>`, `class="seg v-spinning" data-verdict="spinning"`)
}
