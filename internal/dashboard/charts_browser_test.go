package dashboard_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/dashboard"
)

// heartbeat1 sends a v1 heartbeat.
func (s *server) heartbeat1(tb testing.TB, id, host string) {
	tb.Helper()
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{Ticket: id, Host: host}); err != nil {
		tb.Fatalf("v1 heartbeat %s: %v", id, err)
	}
}

// chartShot saves a full-page screenshot into the test's shots directory
// (shotsDir), logging its path.
func chartShot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	screenshot(t, ctx, dir, name)
}

// chartState is what the page shows of one chart.
func chartState(t *testing.T, ctx context.Context, id string) (empty bool, text string, marks int) {
	t.Helper()
	type st struct {
		Empty string `json:"empty"`
		Text  string `json:"text"`
		Marks int    `json:"marks"`
	}
	v := eval[st](t, ctx, `(() => { const f = document.getElementById('`+id+`');
		return f ? {empty: f.dataset.empty, text: f.textContent.replace(/\s+/g, ' ').trim(), marks: f.querySelectorAll('rect, polyline, circle').length}
		         : {empty: 'missing', text: '', marks: 0}; })()`)
	if v.Empty == "missing" {
		t.Fatalf("chart %s is not on the page", id)
	}
	return v.Empty == "true", v.Text, v.Marks
}

func TestBrowserCharts(t *testing.T) {
	s := startServer(t, withDashboard(dashboard.Config{Refresh: time.Second, SummaryTTL: -1, ChartsTTL: -1}))
	ctx := browser(t)
	shots := shotsDir(t)

	// Empty: a fresh server has no events and no heartbeats; the page
	// says so in words, and says the in-memory charts start empty.
	do(t, ctx, "open the dashboard", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#charts")))
	for id, want := range map[string]string{
		"chart-verdicts": "No verdict changes in the last 24 h.",
		"chart-lapses":   "No lapses in the last 24 h.",
		"chart-adoption": "No heartbeats in the last 24 h.",
		"chart-latency":  "No heartbeats since this server started at",
	} {
		empty, text, marks := chartState(t, ctx, id)
		if !empty || !strings.Contains(text, want) || marks != 0 {
			t.Errorf("%s on a fresh server: empty %v, %d marks, text %q; want empty saying %q", id, empty, marks, text, want)
		}
	}
	if note := text(t, ctx, "#ring-note"); !strings.Contains(note, "a restart empties them") {
		t.Errorf("ring note: %q, want it to say a restart empties the in-memory charts", note)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('main script, #charts script').length`); n != 0 {
		t.Errorf("%d script elements inside <main> or the charts", n)
	}
	poll(t, ctx, "the event stream", `window.warpLive && window.warpLive.connected`)
	chartShot(t, ctx, shots, "charts-empty.png")

	// An event arrives: a claim and a v2 heartbeat. The charts follow
	// through warp:update, without a reload (the marker survives).
	do(t, ctx, "set the marker", chromedp.Evaluate[chromedp.Void](`window.__warpMarker = 'kept'`))
	s.create(t, "A", "work on A")
	s.claim(t, "A", "agent-A", "h-A")
	s.clk.Advance(time.Minute)
	s.heartbeat2(t, "A", 1, "h-A", 0, "")
	poll(t, ctx, "the adoption and latency charts to draw", `document.getElementById('chart-adoption').dataset.empty === 'false' &&
		document.getElementById('chart-latency').dataset.empty === 'false'`)
	if _, text, marks := chartState(t, ctx, "chart-adoption"); marks != 1 || !strings.Contains(text, "v2 1") {
		t.Errorf("adoption after one v2 host: %d bars, text %q; want 1 bar and legend v2 1", marks, text)
	}
	if _, _, marks := chartState(t, ctx, "chart-latency"); marks != 2 {
		t.Errorf("latency after one heartbeat: %d marks, want 2 (dots of the mean and the max)", marks)
	}
	if empty, _, _ := chartState(t, ctx, "chart-lapses"); !empty {
		t.Errorf("lapses chart drawn before any lapse")
	}
	if m := eval[string](t, ctx, `String(window.__warpMarker)`); m != "kept" {
		t.Errorf("marker after the update: got %q, want kept (the page reloaded)", m)
	}
	if n := eval[int](t, ctx, `window.warpCharts.fetches`); n < 1 {
		t.Errorf("charts script fetched %d times, want at least 1", n)
	}
	chartShot(t, ctx, shots, "charts-heartbeat.png")

	// A lapse: the lease expires and the sweep records it.
	s.clk.Advance(45 * time.Minute)
	res := s.Sweep(t)
	if len(res.Lapsed) != 1 {
		t.Fatalf("sweep: %d lapses, want 1", len(res.Lapsed))
	}
	poll(t, ctx, "the lapses chart to draw", `document.getElementById('chart-lapses').dataset.empty === 'false'`)
	if _, text, marks := chartState(t, ctx, "chart-lapses"); marks != 1 || !strings.Contains(text, "no-activity 1") {
		t.Errorf("lapses after one expiry: %d bars, text %q; want 1 bar and legend no-activity 1", marks, text)
	}
	tip := eval[string](t, ctx, `document.querySelector('#chart-lapses rect title').textContent`)
	if !strings.Contains(tip, "1 no-activity") || !strings.Contains(tip, "UTC") {
		t.Errorf("lapse bar's tooltip: %q", tip)
	}
	chartShot(t, ctx, shots, "charts-lapse.png")

	// A busier day, for the picture: hours of claims, heartbeats from v1
	// and v2 hosts, verdict changes and lapses.
	hosts := []string{"h-1", "h-2", "h-3", "h-4"}
	for hour := range 8 {
		for i, h := range hosts {
			id := "T-" + string(rune('a'+hour)) + h
			s.create(t, id, "work")
			s.claim(t, id, "agent", h)
			if i < hour/2 || i == 0 {
				s.heartbeat2(t, id, 1, h, 0, "")
			} else {
				s.heartbeat1(t, id, h)
			}
		}
		s.clk.Advance(16 * time.Minute)
		s.Sweep(t)
		s.clk.Advance(44 * time.Minute)
		s.Sweep(t)
	}
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#charts")))
	for _, id := range []string{"chart-verdicts", "chart-lapses", "chart-adoption", "chart-latency", "chart-sweeps"} {
		if empty, text, marks := chartState(t, ctx, id); empty || marks == 0 {
			t.Errorf("%s after a busy day: empty %v, %d marks (%q)", id, empty, marks, text)
		}
	}
	chartShot(t, ctx, shots, "charts-busy.png")

	// The charts' own page (issue 46: alone they were an unstyled
	// fragment): the layout's title and navigation, the charts' style
	// applied, and the charts following the stream there too.
	do(t, ctx, "open the charts page", chromedp.Navigate(s.url+"/charts"), chromedp.WaitVisible(chromedp.CSS("#charts")))
	if got := eval[string](t, ctx, `document.title`); got != "warp · charts" {
		t.Errorf("charts page title %q", got)
	}
	if got := text(t, ctx, `header nav a[aria-current="page"]`); got != "Charts" {
		t.Errorf("the current page in the navigation: %q, want Charts", got)
	}
	if got := eval[string](t, ctx, `getComputedStyle(document.querySelector('#chart-lapses .legend')).listStyleType`); got != "none" {
		t.Errorf("the legend's list style %q: charts.css is not applied", got)
	}
	if got := eval[string](t, ctx, `getComputedStyle(document.querySelector('#chart-lapses')).backgroundColor`); got != "rgb(255, 255, 255)" {
		t.Errorf("a chart's background %q: the charts' style is not applied", got)
	}
	poll(t, ctx, "the event stream on the charts page", `window.warpLive && window.warpLive.connected`)
	before := eval[int](t, ctx, `window.warpCharts.fetches`)
	s.create(t, "P", "work on P")
	poll(t, ctx, "the charts page to fetch the charts again", `window.warpCharts.fetches > `+strconv.Itoa(before))
	chartShot(t, ctx, shots, "charts-page.png")
}
