package dashboard_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/dashboard"
)

// getAs fetches url with the bearer token.
func getAs(tb testing.TB, token, url string) (int, string, http.Header) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body), resp.Header
}

func TestChartsFragment(t *testing.T) {
	const secret = "charts-admin"
	s := startServer(t, withToken(secret), withDashboard(dashboard.Config{ChartsTTL: -1}))

	if code, _, _ := get(t, &http.Client{}, s.url+"/charts?fragment=1"); code != http.StatusUnauthorized {
		t.Errorf("/charts without a token: got %d, want 401", code)
	}
	code, body, h := getAs(t, secret, s.url+"/charts?fragment=1")
	if code != http.StatusOK {
		t.Fatalf("/charts: got %d\n%s", code, body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("/charts CSP %q", csp)
	}
	mustContain(t, "empty charts", body, `<section id="charts"`, `data-charts="/charts?fragment=1"`,
		"No verdict changes in the last 24 h.", "No lapses in the last 24 h.", "No heartbeats in the last 24 h.",
		"a restart empties them")
	for _, bad := range []string{"<script", " style=", "<main", "<html"} {
		if strings.Contains(body, bad) {
			t.Errorf("/charts holds %q:\n%s", bad, body)
		}
	}

	fleet(t, s) // five claims, heartbeats, three verdict changes
	s.clk.Advance(time.Hour)
	if res := s.Sweep(t); len(res.Lapsed) != 5 {
		t.Fatalf("sweep: %d lapses, want 5", len(res.Lapsed))
	}
	_, body, _ = getAs(t, secret, s.url+"/charts?fragment=1")
	for _, id := range []string{"chart-verdicts", "chart-lapses", "chart-adoption", "chart-latency", "chart-sweeps"} {
		mustContain(t, id, body, `id="`+id+`" data-empty="false"`)
	}
	if strings.Contains(body, "No lapses") {
		t.Errorf("lapses chart still empty after five lapses")
	}
	mustContain(t, "the hour axis", body, `<text class="x"`, ">12:00</text>")
	mustContain(t, "the legend", body, `<ul class="legend">`, `v2 <b>4</b>`)

	// The main page draws the same section, outside <main> (the live
	// script swaps <main> alone), with the charts' own script and style.
	_, page, _ := getAs(t, secret, s.url+"/")
	mustContain(t, "main page", page, `<script src="/assets/charts.js" defer></script>`, `href="/assets/charts.css"`, `<section id="charts"`)
	if i, j := strings.Index(page, "</main>"), strings.Index(page, `<section id="charts"`); i < 0 || j < i {
		t.Errorf("the charts are not after </main> (at %d and %d)", i, j)
	}
	for _, a := range []string{"/assets/charts.js", "/assets/charts.css"} {
		if code, _, _ := get(t, &http.Client{}, s.url+a); code != http.StatusOK {
			t.Errorf("%s: got %d", a, code)
		}
	}
}

// GET /charts opened alone is a page of its own (issue 46): the layout's
// title, style and navigation around the same section, its script and
// style; the main page links to it.
func TestChartsPage(t *testing.T) {
	const secret = "charts-admin"
	s := startServer(t, withToken(secret), withDashboard(dashboard.Config{ChartsTTL: -1}))
	code, body, h := getAs(t, secret, s.url+"/charts")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("/charts: got %d %s\n%s", code, h.Get("Content-Type"), body)
	}
	mustContain(t, "charts page", body, "<title>warp · charts</title>", `href="/assets/style.css"`, `href="/assets/charts.css"`,
		`<script src="/assets/charts.js" defer></script>`, `<script src="/assets/live.js" defer></script>`,
		`<a href="/charts" aria-current="page">Charts</a>`, `data-page="charts"`, "<h1>Charts</h1>",
		`<section id="charts"`, `data-charts="/charts?fragment=1"`, "No lapses in the last 24 h.")
	if i, j := strings.Index(body, "</main>"), strings.Index(body, `<section id="charts"`); i < 0 || j < i {
		t.Errorf("the charts are not after </main> (at %d and %d)", i, j)
	}
	_, page, _ := getAs(t, secret, s.url+"/")
	mustContain(t, "the main page's link", page, `<a href="/charts">Charts</a>`)
}
