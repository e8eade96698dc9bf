package dashboard_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/dashboard"
)

// laneHistory gives ticket T two leases: lease 1 worked (hook activity),
// then its loop sent stale reports, the verdict pass recorded it stalled
// and the sweep lapsed it; lease 2 is held and active. N is never claimed.
func laneHistory(tb testing.TB, s *server) {
	tb.Helper()
	ctx := context.Background()
	hb := func(epoch int64, host string, age float64, stale bool, hooks int64) {
		tb.Helper()
		if _, err := s.client.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T", Epoch: epoch,
			Host: host, Agent: "agent", ActivityAgeS: ptr(age), Stale: stale, HookSeen: ptr(true), HookEvents: hooks,
			InFlight: "Bash"}); err != nil {
			tb.Fatalf("heartbeat T/%d: %v", epoch, err)
		}
	}
	s.create(tb, "N", "never claimed")
	s.create(tb, "T", "the lapsing one")
	s.claim(tb, "T", "agent-1", "h-1")
	s.clk.Advance(time.Minute)
	hb(1, "h-1", 0, false, 3)
	s.clk.Advance(4 * time.Minute)
	hb(1, "h-1", 0, false, 5) // the last activity: t0+5m
	for i := 1; i <= 3; i++ {
		s.clk.Advance(5 * time.Minute)
		hb(1, "h-1", float64(i*300), true, 0)
	}
	s.clk.Advance(time.Minute)
	hb(1, "h-1", 960, true, 0)
	if res := s.Sweep(tb); len(res.VerdictChanges) != 1 || res.VerdictChanges[0].To != "stalled" {
		tb.Fatalf("sweep at t0+21m: got %+v, want T stalled", res.VerdictChanges)
	}
	s.clk.Advance(15 * time.Minute)
	if res := s.Sweep(tb); len(res.Lapsed) != 1 {
		tb.Fatalf("sweep at t0+36m: got %d lapses, want T's", len(res.Lapsed))
	}
	s.clk.Advance(2 * time.Minute)
	s.claim(tb, "T", "agent-2", "h-2")
	s.clk.Advance(2 * time.Minute)
	hb(2, "h-2", 0, false, 2)
}

// endedHistory gives ticket R a v1 lease released with a reason and a v2
// lease whose loop reported an exit before the agent completed it.
func endedHistory(tb testing.TB, s *server) {
	tb.Helper()
	ctx := context.Background()
	s.create(tb, "R", "handed over, then done")
	s.claim(tb, "R", "agent-1", "h-1")
	s.clk.Advance(4 * time.Minute)
	if _, err := s.client.Heartbeat(ctx, client.HeartbeatRequest{Ticket: "R", Host: "h-1"}); err != nil {
		tb.Fatal(err)
	}
	s.clk.Advance(3 * time.Minute)
	if _, err := s.client.Release(ctx, "R", client.ReleaseRequest{Epoch: 1, Reason: "handing over"}); err != nil {
		tb.Fatal(err)
	}
	s.clk.Advance(2 * time.Minute)
	s.claim(tb, "R", "agent-2", "h-2")
	s.clk.Advance(5 * time.Minute)
	s.heartbeat2(tb, "R", 2, "h-2", 30, "")
	s.clk.Advance(5 * time.Minute)
	s.heartbeat2(tb, "R", 2, "h-2", 0, "parent-exited")
	s.clk.Advance(time.Minute)
	if _, err := s.client.Complete(ctx, "R", client.CompleteRequest{Epoch: 2, PRURL: "https://example.com/pr/9"}); err != nil {
		tb.Fatal(err)
	}
}

var laneRE = regexp.MustCompile(`<g class="lane st-([a-z]+)" data-epoch="(\d+)" data-state="[a-z]+" data-verdicts="([a-z,]*)">`)

func TestTimelineFragment(t *testing.T) {
	const secret = "timeline-admin"
	s := startServer(t, withToken(secret))
	laneHistory(t, s)
	hc := &http.Client{}
	authed := func(path string) (int, string, http.Header) { t.Helper(); return getAs(t, secret, s.url+path) }

	if code, _, _ := get(t, hc, s.url+"/tickets/T/timeline"); code != http.StatusUnauthorized {
		t.Errorf("fragment without a token: got %d, want 401", code)
	}
	code, body, h := authed("/tickets/T/timeline")
	if code != http.StatusOK {
		t.Fatalf("fragment: got %d\n%s", code, body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("fragment CSP %q", csp)
	}
	if strings.Contains(body, "<html") || strings.Contains(body, "<script") || strings.Contains(body, "style=") {
		t.Errorf("the fragment is more than the picture, or styles inline:\n%s", body)
	}
	var lanes []string
	for _, m := range laneRE.FindAllStringSubmatch(body, -1) {
		lanes = append(lanes, m[2]+":"+m[1]+":"+m[3])
	}
	if got := strings.Join(lanes, " "); got != "1:lapsed:active,stalled,silent 2:held:active" {
		t.Errorf("lanes: got %q, want lease 1 lapsed active→stalled→silent (the tail from its columns), lease 2 held active", got)
	}
	mustContain(t, "fragment", body,
		`data-end="lapsed"`, `lapsed: no-activity · deadline 12:35:00 passed`,
		`data-mark="stale-span"`, `data-mark="stale"`, `data-mark="activity"`, `data-mark="verdict"`, `data-mark="deadline"`,
		`data-mark="now"`, `data-held="true"`,
		"verdict pass recorded active → stalled at 2026-05-06 12:21:00.000Z (since 2026-05-06 12:20:00.000Z)",
		"latest activity at 2026-05-06 12:05:00.000Z, as the loop reported it (hook seen: yes; 8 hook events over the lease)",
		"after the last extension at 2026-05-06 12:05:00.000Z, until the latest at 2026-05-06 12:21:00.000Z",
		"10 hook events over the leases drawn", "no per-heartbeat history")

	// The page carries the same picture, and never-claimed tickets say so.
	_, page, _ := authed("/tickets/T")
	mustContain(t, "ticket page", page, `<section id="lease-timeline"`, `data-src="/tickets/T/timeline"`,
		`<script src="/assets/timeline.js" defer></script>`, `href="/assets/timeline.css"`)
	_, empty, _ := authed("/tickets/N/timeline")
	mustContain(t, "never claimed", empty, `id="lease-timeline-empty"`, `data-leases="0"`)
	if strings.Contains(empty, "<svg") {
		t.Errorf("a never-claimed ticket drew a picture:\n%s", empty)
	}

	// Bad input.
	if code, body, _ := authed("/tickets/nope/timeline"); code != http.StatusNotFound || !strings.Contains(body, "ticket nope not found") {
		t.Errorf("unknown ticket: got %d\n%s", code, body)
	}
	if code, body, _ := authed("/tickets/-bad/timeline"); code != http.StatusBadRequest || !strings.Contains(body, "invalid") {
		t.Errorf("invalid id: got %d\n%s", code, body)
	}
	for _, a := range []string{"timeline.js", "timeline.css"} {
		if code, _, _ := get(t, hc, s.url+"/assets/"+a); code != http.StatusOK {
			t.Errorf("/assets/%s: got %d", a, code)
		}
	}
}

// shootTimeline saves the page and the picture alone.
func shootTimeline(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	screenshot(t, ctx, dir, name+"-page.png")
	// The live stream re-fetches the timeline when the ticket changes:
	// the node queried can be replaced, or be mid-swap with no width,
	// before its screenshot is taken (both seen on a loaded machine).
	// Take the new one once it is laid out.
	var png []byte
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		png, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#lease-timeline")))
		if err == nil || !strings.Contains(err.Error(), "No node with given id") && !strings.Contains(err.Error(), "0 width") {
			break
		}
		time.Sleep(50 * time.Millisecond) // the next animation frame lays the new node out
	}
	if err != nil {
		t.Fatalf("screenshot of the timeline %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("save screenshot: %v", err)
	}
	t.Logf("screenshot: %s", path)
}

func TestBrowserLeaseTimeline(t *testing.T) {
	const secret = "browser-timeline-token"
	s := startServer(t, withToken(secret), withDashboard(dashboard.Config{Refresh: time.Second, SummaryTTL: -1}))
	laneHistory(t, s)
	ctx := browser(t)
	shots := shotsDir(t)

	do(t, ctx, "sign in", chromedp.Navigate(s.url+"/tickets/T"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SendKeys(chromedp.CSS("#token"), secret), chromedp.Click(chromedp.CSS("#signin-submit")),
		chromedp.WaitVisible(chromedp.CSS("#lease-timeline-svg")))

	// It renders: two lanes, the lapsed one says why, the held one runs to now.
	lanes := eval[[]string](t, ctx, `[...document.querySelectorAll('#lease-timeline-svg g.lane')].map(g => g.dataset.epoch + ':' + g.dataset.state + ':' + g.dataset.verdicts)`)
	if got := strings.Join(lanes, " "); got != "1:lapsed:active,stalled,silent 2:held:active" {
		t.Errorf("lanes: got %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#lease-timeline-svg g.lane[data-epoch="1"] text[data-end] > tspan').textContent`); !strings.HasPrefix(got, "lapsed: no-activity") {
		t.Errorf("lapsed lease's end label: got %q, want lapsed: no-activity …", got)
	}
	// The picture has a size, its segments are drawn in their verdict's
	// colour from the stylesheet (CSP: no inline style), and the bar of
	// the held lease reaches "now".
	if w := eval[float64](t, ctx, `document.getElementById('lease-timeline-svg').getBoundingClientRect().width`); w < 600 {
		t.Errorf("timeline width %v px, want the page's width", w)
	}
	if fill := eval[string](t, ctx, `getComputedStyle(document.querySelector('#lease-timeline-svg .seg.v-stalled')).fill`); fill != "rgb(179, 89, 0)" {
		t.Errorf("stalled segment fill: got %q, want the stalled colour (is timeline.css loaded?)", fill)
	}
	if d := eval[float64](t, ctx, `(() => { const b = document.querySelector('g.lane[data-epoch="2"] rect.bar'); const n = document.querySelector('[data-mark="now"]');
		return Math.abs(b.getBBox().x + b.getBBox().width - Number(n.getAttribute('x1'))); })()`); d > 1 {
		t.Errorf("held bar ends %v units from now", d)
	}
	poll(t, ctx, "the event stream", `window.warpLive && window.warpLive.connected`)
	shootTimeline(t, ctx, shots, "timeline")

	// A heartbeat arrives: the held lane's latest heartbeat moves, without a reload.
	do(t, ctx, "set the marker", chromedp.Evaluate[chromedp.Void](`window.__warpMarker = 'timeline'`))
	s.clk.Advance(3 * time.Minute)
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T", Epoch: 2,
		Host: "h-2", Agent: "agent", ActivityAgeS: ptr(0.0)}); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the heartbeat in the picture", `[...document.querySelectorAll('g.lane[data-epoch="2"] [data-mark="heartbeat"] title')].some(e => e.textContent.includes('12:43:00'))`)
	poll(t, ctx, "timeline.js to swap the picture", `window.warpTimeline && window.warpTimeline.swaps >= 1`)

	// The verdict pass records the held lease stalled: the lane turns.
	s.clk.Advance(16 * time.Minute)
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T", Epoch: 2,
		Host: "h-2", Agent: "agent", ActivityAgeS: ptr(16 * 60.0), Stale: true}); err != nil {
		t.Fatal(err)
	}
	s.Sweep(t)
	poll(t, ctx, "the stalled verdict in the picture", `document.querySelector('g.lane[data-epoch="2"]').dataset.verdicts === 'active,stalled'`)
	poll(t, ctx, "the stale report", `!!document.querySelector('g.lane[data-epoch="2"] [data-mark="stale"]')`)
	if m := eval[string](t, ctx, `String(window.__warpMarker)`); m != "timeline" {
		t.Errorf("the page reloaded: marker %q", m)
	}
	shootTimeline(t, ctx, shots, "timeline-after-verdict")

	// Never claimed: the empty state; the first claim draws the picture.
	do(t, ctx, "open N", chromedp.Navigate(s.url+"/tickets/N"), chromedp.WaitVisible(chromedp.CSS("#lease-timeline-empty")))
	if got := text(t, ctx, "#lease-timeline-empty"); !strings.HasPrefix(got, "Never claimed") {
		t.Errorf("empty state: got %q", got)
	}
	shootTimeline(t, ctx, shots, "timeline-empty")
	poll(t, ctx, "the event stream on N", `window.warpLive && window.warpLive.connected`)
	s.claim(t, "N", "agent-N", "h-N")
	poll(t, ctx, "N's first lease", `!!document.querySelector('#lease-timeline-svg g.lane[data-epoch="1"][data-state="held"]')`)
	shootTimeline(t, ctx, shots, "timeline-first-claim")

	// Ended leases say how they ended.
	endedHistory(t, s)
	do(t, ctx, "open R", chromedp.Navigate(s.url+"/tickets/R"), chromedp.WaitVisible(chromedp.CSS("#lease-timeline-svg")))
	ends := eval[[]string](t, ctx, `[...document.querySelectorAll('#lease-timeline-svg text[data-end] > tspan')].map(e => e.textContent)`)
	if got := strings.Join(ends, " | "); got != "released: handing over | completed" {
		t.Errorf("end labels of R: got %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('g.lane[data-epoch="2"] [data-mark="exit"]').length`); n != 1 {
		t.Errorf("exit report marks on R's lease 2: %d, want 1", n)
	}
	shootTimeline(t, ctx, shots, "timeline-ended")
}
