package dashboard_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/httpapi"
)

const xssTitle = `<script>alert(1)</script>`

// fleet makes one lease of each verdict: A active, B stalled, C silent,
// D exited, plus X (active) whose title is a script tag. The verdict pass
// has run, so B, C and D carry verdict-changed events.
func fleet(tb testing.TB, s *server) {
	tb.Helper()
	for _, id := range []string{"A", "B", "C", "D", "X"} {
		title := "work on " + id
		if id == "X" {
			title = xssTitle
		}
		s.create(tb, id, title)
		s.claim(tb, id, "agent-"+id, "h-"+id)
	}
	s.clk.Advance(16 * time.Minute)
	s.heartbeat2(tb, "A", 1, "h-A", 0, "")
	s.heartbeat2(tb, "B", 1, "h-B", 16*60, "") // loop alive, agent idle since the claim
	s.heartbeat2(tb, "D", 1, "h-D", 0, "parent-exited")
	s.heartbeat2(tb, "X", 1, "h-X", 0, "")
	// C sends nothing: silent.
	res := s.Sweep(tb)
	if len(res.VerdictChanges) != 3 || len(res.Lapsed) != 0 {
		tb.Fatalf("fleet sweep: got %d verdict changes and %d lapses, want 3 and 0", len(res.VerdictChanges), len(res.Lapsed))
	}
}

var rowRE = regexp.MustCompile(`<tr id="t-([^"]+)" data-ticket="[^"]+" data-verdict="([a-z]*)">`)

// rows returns ticket → verdict of the claimed table, in page order.
func rows(body string) ([]string, map[string]string) {
	var order []string
	m := map[string]string{}
	for _, g := range rowRE.FindAllStringSubmatch(body, -1) {
		order = append(order, g[1])
		m[g[1]] = g[2]
	}
	return order, m
}

func TestIndexShowsVerdictsFiltersAndPages(t *testing.T) {
	s := startServer(t)
	fleet(t, s)
	hc := &http.Client{}

	code, body, h := get(t, hc, s.url+"/")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", code, h.Get("Content-Type"))
	}
	order, got := rows(body)
	want := map[string]string{"A": "active", "B": "stalled", "C": "silent", "D": "exited", "X": "active"}
	if strings.Join(order, ",") != "A,B,C,D,X" {
		t.Errorf("row order: got %v, want A,B,C,D,X", order)
	}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("verdict of %s: got %q, want %q", id, got[id], v)
		}
	}
	mustContain(t, "index", body,
		`<span class="badge v-stalled" data-field="verdict">stalled</span>`,
		`<b id="count-active">2</b>`, `<b id="count-stalled">1</b>`, `<b id="count-silent">1</b>`, `<b id="count-exited">1</b>`,
		`<b id="count-held">5</b>`,
		`<noscript><meta http-equiv="refresh" content="15"></noscript>`,
		`<strong id="mode">transition</strong>`,
		// B: activity 16m old, heartbeat fresh, expiry 14m away (activity + 30m).
		`data-field="activity" data-age="`+ms(t0)+`">16m00s</td>`,
		`data-field="heartbeat" data-age="`+ms(t0.Add(16*time.Minute))+`">0s</td>`,
		`data-field="expires" data-until="`+ms(t0.Add(30*time.Minute))+`">in 14m00s</td>`,
		`<td data-field="agent">agent-B</td>`, `<a href="/?host=h-B">h-B</a>`, `<td data-field="schema">v2</td>`,
		"&lt;script&gt;alert(1)&lt;/script&gt;")
	if strings.Contains(body, xssTitle) {
		t.Errorf("the script title reached the page unescaped")
	}

	for _, c := range []struct{ query, want string }{
		{"verdict=stalled", "B"},
		{"verdict=exited", "D"},
		{"verdict=active", "A,X"},
		{"host=h-C", "C"},
		{"verdict=active&host=h-A", "A"},
		{"verdict=silent&host=h-A", ""},
	} {
		_, body, _ := get(t, hc, s.url+"/?"+c.query)
		order, _ := rows(body)
		if strings.Join(order, ",") != c.want {
			t.Errorf("?%s: got %v, want %s", c.query, order, c.want)
		}
	}

	// Cursor pagination, two at a time, keeps the filter in the links.
	next := "/?limit=2"
	var pages []string
	for i := 0; next != "" && i < 10; i++ {
		_, body, _ := get(t, hc, s.url+next)
		order, _ := rows(body)
		pages = append(pages, strings.Join(order, ","))
		next = ""
		if m := regexp.MustCompile(`<a id="next" rel="next" href="([^"]+)">`).FindStringSubmatch(body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
			if !strings.Contains(next, "limit=2") {
				t.Errorf("next link %q lost the limit", next)
			}
		}
	}
	if strings.Join(pages, "|") != "A,B|C,D|X" {
		t.Errorf("pages: got %v, want A,B|C,D|X", pages)
	}
}

func TestRecentAndTimeline(t *testing.T) {
	s := startServer(t)
	fleet(t, s)
	ctx := context.Background()
	hc := &http.Client{}
	// E is a v1 host: its lapse is extended by the fallback.
	s.create(t, "E", "legacy host work")
	s.claim(t, "E", "agent-E", "h-E")
	if _, err := s.client.Complete(ctx, "A", client.CompleteRequest{Epoch: 1, PRURL: "https://example.com/pr/1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Release(ctx, "X", client.ReleaseRequest{Epoch: 1, Reason: "handing over"}); err != nil {
		t.Fatal(err)
	}
	// B comes back to work; then time passes until C, D and E lapse.
	s.clk.Advance(time.Minute)
	s.heartbeat2(t, "B", 1, "h-B", 0, "")
	if _, err := s.client.Heartbeat(ctx, client.HeartbeatRequest{Ticket: "E", Host: "h-E"}); err != nil {
		t.Fatal(err)
	}
	s.Sweep(t)
	s.clk.Advance(31 * time.Minute)
	s.heartbeat2(t, "B", 1, "h-B", 0, "")
	res := s.Sweep(t)
	lapsed := map[string]string{}
	for _, l := range res.Lapsed {
		lapsed[l.Ticket] = l.EndReason
	}
	if len(lapsed) != 3 || lapsed["C"] != "no-activity" || lapsed["D"] != "agent-exited" || lapsed["E"] != "no-heartbeat" {
		t.Fatalf("lapsed: got %v, want C no-activity, D agent-exited, E no-heartbeat", lapsed)
	}

	_, body, _ := get(t, hc, s.url+"/")
	order, _ := rows(body)
	if strings.Join(order, ",") != "B" {
		t.Errorf("claimed after the lapses: got %v, want B", order)
	}
	recent := body[strings.Index(body, `id="recent"`):]
	mustContain(t, "recent", recent,
		`<span class="kind k-lapsed">lapsed</span>`, "no-heartbeat <span class=\"fallback\">v1 fallback extended it</span>",
		"agent-exited", `<a href="https://example.com/pr/1" rel="noopener noreferrer">https://example.com/pr/1</a>`,
		`<span class="kind k-released">released</span>`, "handing over")

	timeline := func(id string) []string {
		_, body, _ := get(t, hc, s.url+"/tickets/"+id)
		var kinds []string
		for _, m := range regexp.MustCompile(`data-kind="([a-z0-9-]+)"`).FindAllStringSubmatch(body, -1) {
			kinds = append(kinds, m[1])
		}
		return kinds
	}
	for id, want := range map[string]string{
		"A": "created,claimed,first-v2-heartbeat,completed",
		"B": "created,claimed,first-v2-heartbeat,verdict-changed,verdict-changed",
		"C": "created,claimed,verdict-changed,lapsed",
		"D": "created,claimed,first-v2-heartbeat,exit-report,verdict-changed,lapsed",
		"E": "created,claimed,lapsed",
	} {
		if got := strings.Join(timeline(id), ","); got != want {
			t.Errorf("timeline of %s: got %s, want %s", id, got, want)
		}
	}
	_, body, _ = get(t, hc, s.url+"/tickets/B")
	mustContain(t, "ticket B", body,
		`<span class="badge v-active">active</span> → <span class="badge v-stalled">stalled</span> since 2026-05-06 12:15:00Z`,
		`<span class="badge v-stalled">stalled</span> → <span class="badge v-active">active</span>`,
		`<span class="badge v-active" id="verdict">active</span>`)
	_, body, _ = get(t, hc, s.url+"/tickets/C")
	mustContain(t, "ticket C", body, `<span class="badge v-active">active</span> → <span class="badge v-silent">silent</span> since 2026-05-06 12:09:00Z`,
		"reason no-activity · not extended by the v1 fallback")
	_, body, _ = get(t, hc, s.url+"/tickets/D")
	mustContain(t, "ticket D", body, "the loop reported parent-exited on h-D", "reason agent-exited")
	_, body, _ = get(t, hc, s.url+"/tickets/E")
	mustContain(t, "ticket E", body, `reason no-heartbeat · <span class="fallback">the v1 fallback extended it</span>`)
	_, body, _ = get(t, hc, s.url+"/tickets/X")
	mustContain(t, "ticket X", body, "titled “&lt;script&gt;alert(1)&lt;/script&gt;”", "reason handing over")
	if strings.Contains(body, xssTitle) {
		t.Errorf("ticket page: the script title reached the page unescaped")
	}
}

func TestHostsPage(t *testing.T) {
	s := startServer(t)
	fleet(t, s)
	hc := &http.Client{}
	_, body, _ := get(t, hc, s.url+"/hosts")
	// Hosts A, B, D, X sent v2; C sent nothing, so it is not a host yet.
	mustContain(t, "hosts", body, `<b id="v2-hosts">4</b> of <b id="host-count">4</b>`,
		`<progress id="adoption" max="100" value="100">100%</progress>`, `class="ready"`,
		"Activity mode may be switched on", "Current mode: transition")

	s.create(t, "L", "legacy")
	s.claim(t, "L", "agent-L", "h-legacy")
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{Ticket: "L", Host: "h-legacy"}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = get(t, hc, s.url+"/hosts")
	mustContain(t, "hosts with a v1 host", body, `<b id="v2-hosts">4</b> of <b id="host-count">5</b>`,
		`value="80">80%</progress>`, `class="not-ready"`, "1 host(s) still send v1 heartbeats", "(h-legacy)",
		`<tr data-host="h-legacy">`)
}

func TestPagesRejectBadInput(t *testing.T) {
	s := startServer(t)
	fleet(t, s)
	hc := &http.Client{}
	for _, c := range []struct {
		path string
		code int
		msg  string
	}{
		{"/?verdict=bogus", 400, "unknown verdict &#34;bogus&#34;"},
		{"/?cursor=abc", 400, "cursor &#34;abc&#34; is invalid"},
		{"/?limit=0", 400, "limit &#34;0&#34; is invalid"},
		{"/?limit=100000", 400, "limit &#34;100000&#34; is invalid"},
		{"/?host=" + strings.Repeat("h", 300), 400, "host filter is 300 bytes"},
		{"/tickets/NOPE", 404, "ticket NOPE not found"},
		{"/tickets/bad%21id", 400, "ticket id &#34;bad!id&#34; is invalid"},
		{"/tickets/A?after=x", 400, "after &#34;x&#34; is invalid"},
		{"/hosts?window=-1h", 400, "window &#34;-1h&#34; is invalid"},
		{"/hosts?window=soon", 400, "window &#34;soon&#34; is invalid"},
	} {
		code, body, h := get(t, hc, s.url+c.path)
		if code != c.code || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("%s: got %d %s, want %d text/html", c.path, code, h.Get("Content-Type"), c.code)
		}
		mustContain(t, c.path, body, `<p id="error-message">`+c.msg)
	}
	// Nothing was lost: the page still lists the fleet.
	_, body, _ := get(t, hc, s.url+"/")
	if order, _ := rows(body); len(order) != 5 {
		t.Errorf("after bad requests: %d rows, want 5", len(order))
	}
}

func TestPagesNeedASignIn(t *testing.T) {
	const secret = "s3cret-admin"
	s := startServer(t, withToken(secret))
	jar, _ := cookiejar.New(nil)
	noRedirect := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, p := range []string{"/", "/hosts", "/metrics", "/v1/events/stream"} {
		if code, _, _ := get(t, &http.Client{}, s.url+p); code != http.StatusUnauthorized {
			t.Errorf("%s without a token: got %d, want 401", p, code)
		}
	}
	if code, _, _ := get(t, &http.Client{}, s.url+"/assets/live.js"); code != http.StatusOK {
		t.Errorf("assets are open: got %d, want 200", code)
	}
	// ?token= no longer opens anything, nor sets a cookie.
	code, _, h := get(t, noRedirect, s.url+"/hosts?window=1h&token="+secret)
	if code != http.StatusUnauthorized || h.Get("Set-Cookie") != "" {
		t.Errorf("?token=: got %d, Set-Cookie %q; want 401 and no cookie", code, h.Get("Set-Cookie"))
	}
	// The form's page is the dashboard's: its style, no script, 'self' only.
	code, body, h := get(t, noRedirect, s.url+"/signin?next=%2Fhosts%3Fwindow%3D1h")
	if code != http.StatusOK {
		t.Fatalf("sign-in form: got %d", code)
	}
	mustContain(t, "sign-in form", body, `<form id="signin" method="post" action="/signin">`, `name="next" value="/hosts?window=1h"`,
		`href="/assets/style.css"`, "for 12h00m")
	if strings.Contains(body, "<script") {
		t.Errorf("the sign-in form has a script:\n%s", body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("sign-in form CSP %q", csp)
	}
	resp, err := noRedirect.PostForm(s.url+"/signin", url.Values{"token": {secret}, "next": {"/hosts?window=1h"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/hosts?window=1h" {
		t.Fatalf("sign-in: got %d Location %q, want 303 /hosts?window=1h", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := resp.Header.Get("Set-Cookie")
	for _, w := range []string{httpapi.SessionCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(ck, w) {
			t.Errorf("cookie %q lacks %s", ck, w)
		}
	}
	if strings.Contains(ck, secret) {
		t.Errorf("cookie %q holds the token", ck)
	}
	for _, p := range []string{"/", "/hosts?window=1h", "/metrics"} {
		if code, _, _ := get(t, noRedirect, s.url+p); code != http.StatusOK {
			t.Errorf("%s with the session: got %d, want 200", p, code)
		}
	}
	_, body, _ = get(t, noRedirect, s.url+"/")
	mustContain(t, "page with a session", body, `<form class="signout" method="post" action="/signout">`)
	// The session reads; it never writes.
	u, _ := url.Parse(s.url)
	req, _ := http.NewRequest(http.MethodPut, s.url+"/v1/mode", strings.NewReader(`{"mode":"legacy"}`))
	for _, c := range jar.Cookies(u) {
		req.AddCookie(c)
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("PUT /v1/mode with only the cookie: got %d, want 401", resp.StatusCode)
	}
	// A bearer header works for the pages too.
	req, _ = http.NewRequest(http.MethodGet, s.url+"/", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET / with the bearer header: got %d, want 200", resp.StatusCode)
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func TestVerdictCountsAreSharedBriefly(t *testing.T) {
	s := startServer(t, withDashboard(dashboard.Config{SummaryTTL: time.Hour}))
	fleet(t, s)
	hc := &http.Client{}
	_, body, _ := get(t, hc, s.url+"/")
	mustContain(t, "first count", body, `<b id="count-stalled">1</b>`, `<b id="count-active">2</b>`)
	s.heartbeat2(t, "B", 1, "h-B", 0, "") // B active again
	_, body, _ = get(t, hc, s.url+"/")
	// The rows are live; the counts are the shared ones of a moment ago.
	if _, got := rows(body); got["B"] != "active" {
		t.Errorf("row B: got %q, want active", got["B"])
	}
	mustContain(t, "reused count", body, `<b id="count-stalled">1</b>`, `<b id="count-active">2</b>`)
	// Once the server clock moves past the TTL the page counts again: an
	// hour without heartbeats makes every lease but the exited one silent.
	s.clk.Advance(time.Hour + time.Minute)
	_, body, _ = get(t, hc, s.url+"/")
	mustContain(t, "recount", body, `<b id="count-active">0</b>`, `<b id="count-stalled">0</b>`,
		`<b id="count-silent">4</b>`, `<b id="count-exited">1</b>`)
}
