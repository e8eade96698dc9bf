package dashboard_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/age"
	"github.com/gyrum-labs/warp/internal/dashboard"
)

// stuckFleet: S1, S2, S3 stalled since different times (S2 longest), A
// active, Q silent; agents and hosts to search by.
func stuckFleet(t *testing.T, s *server) {
	t.Helper()
	for _, id := range []string{"S1", "S2", "S3", "A", "Q"} {
		s.create(t, id, "work on "+id)
	}
	s.claim(t, "S2", "claude:ann@vm1", "vm1") // claimed first: stalled the longest
	s.clk.Advance(3 * time.Minute)
	s.claim(t, "S1", "codex:bob@vm2", "vm2")
	s.claim(t, "Q", "codex:bob@vm2", "vm2")
	s.clk.Advance(2 * time.Minute)
	s.claim(t, "S3", "claude:ann@vm3", "vm3")
	s.claim(t, "A", "claude:cy@vm3", "vm3")
	s.clk.Advance(16 * time.Minute) // t0+21m
	// Alive loops whose agents did nothing since their claims: stalled
	// since claim + 15 min (S2 at 15m, S1 18m, S3 20m). A works. Q sends
	// nothing: silent since its claim + 9 min (12m).
	for id, claimed := range map[string]time.Duration{"S1": 3 * time.Minute, "S2": 0, "S3": 5 * time.Minute} {
		host := map[string]string{"S1": "vm2", "S2": "vm1", "S3": "vm3"}[id]
		s.heartbeat2(t, id, 1, host, (21*time.Minute - claimed).Seconds(), "")
	}
	s.heartbeat2(t, "A", 1, "vm3", 0, "")
	s.Sweep(t)
}

func dashboardConfigForBrowser() dashboard.Config {
	return dashboard.Config{Refresh: time.Second, SummaryTTL: -1}
}

func strconvMS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// The claimed-tickets table (issue 46): how long each ticket has had its
// verdict, the stuck ones longest first, sortable columns, a search by
// ticket, agent or host, and durations written as the CLI writes them.
func TestClaimedTableSinceSortSearch(t *testing.T) {
	s := startServer(t)
	stuckFleet(t, s)
	hc := &http.Client{}
	now := s.clk.Now()

	_, body, _ := get(t, hc, s.url+"/?verdict=stalled")
	if order, _ := rows(body); strings.Join(order, ",") != "S2,S1,S3" {
		t.Errorf("stalled, by default longest stalled first: %v", order)
	}
	since := t0.Add(15 * time.Minute) // S2: claimed at t0, no activity since
	mustContain(t, "S2's since", body, `<td data-field="since" data-age="`+ms(since)+`" title="stalled since `+since.UTC().Format("2006-01-02 15:04:05Z")+`">`+age.Format(now.Sub(since))+`</td>`,
		`aria-sort="ascending"><a class="sort" data-sort="since"`, "sorted by verdict since (longest in its verdict first)")
	_, body, _ = get(t, hc, s.url+"/?verdict=silent")
	if order, _ := rows(body); strings.Join(order, ",") != "Q" {
		t.Errorf("silent: %v", order)
	}
	for _, c := range []struct{ query, want string }{
		{"", "S1,S2,S3,A,Q"}, // creation order
		{"sort=since", "Q,S2,S1,S3,A"},
		{"sort=agent", "S2,S3,A,S1,Q"},
		{"sort=host", "S2,S1,Q,S3,A"},
		{"sort=activity", "S2,S1,Q,S3,A"},
		{"sort=ticket&verdict=stalled", "S1,S2,S3"},
		{"q=bob", "S1,Q"},
		{"q=VM3", "S3,A"},
		{"q=s1", "S1"},
		{"q=ann&sort=since", "S2,S3"},
		{"q=nobody", ""},
	} {
		_, body, _ := get(t, hc, s.url+"/?"+c.query)
		if order, _ := rows(body); strings.Join(order, ",") != c.want {
			t.Errorf("?%s: %v, want %s", c.query, order, c.want)
		}
	}
	// Q's since is its silence: last heartbeat (its claim) + 9 min; an
	// active row has none.
	_, body, _ = get(t, hc, s.url+"/?sort=since")
	mustContain(t, "since of silent and active", body, `title="silent since `, `<td data-field="since">—</td>`)
	// The header links keep the filters, and sorted pages the search.
	_, body, _ = get(t, hc, s.url+"/?q=ann&verdict=stalled")
	mustContain(t, "links", body, `href="/?q=ann&amp;sort=agent&amp;verdict=stalled"`, `name="q" value="ann"`)

	// Durations: the CLI's way, never Go's.
	for _, bad := range []string{"0m0s", "h0m", "m 0", "12h0m0s"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page writes a duration as %q", bad)
		}
	}
	_, hostsBody, _ := get(t, hc, s.url+"/hosts")
	mustContain(t, "hosts page window", hostsBody, "heartbeats in the last 1d00h")

	for _, bad := range []string{"/?sort=bogus", "/?q=" + strings.Repeat("x", 300)} {
		if code, _, _ := get(t, hc, s.url+bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad[:min(len(bad), 20)], code)
		}
	}
}

// /hosts shows what warp hosts prints: per host its held leases by verdict
// (linking to them), hook health, adoption and alarm (issue 46).
func TestHostsPageVerdictsAndHooks(t *testing.T) {
	s := startServer(t)
	stuckFleet(t, s)
	hc := &http.Client{}
	_, body, _ := get(t, hc, s.url+"/hosts")
	mustContain(t, "vm3", body, `<tr data-host="vm3">`,
		`<td data-verdict="active"><a href="/?host=vm3&amp;verdict=active">1</a></td>`,
		`<td data-verdict="stalled"><a href="/?host=vm3&amp;verdict=stalled">1</a></td>`,
		`<td data-verdict="silent">0</td>`)
	mustContain(t, "vm2", body, `<tr data-host="vm2">`, `<td data-field="leases">2</td>`,
		`<td data-verdict="silent"><a href="/?host=vm2&amp;verdict=silent">1</a></td>`)
	// The link lists what it counts.
	_, list, _ := get(t, hc, s.url+"/?host=vm2&verdict=silent")
	if order, _ := rows(list); strings.Join(order, ",") != "Q" {
		t.Errorf("vm2's silent tickets: %v", order)
	}
	// The hook's health as the loops report it.
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "A", Epoch: 1,
		Host: "vm3", ActivityAgeS: ptr(0.0), HookSeen: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = get(t, hc, s.url+"/hosts")
	mustContain(t, "hook health", body, `<td data-field="hook">1/0/1</td>`)
}

// In the browser: the search box narrows the table, a header sorts it, and
// the script writes durations as the server does.
func TestBrowserClaimedTable(t *testing.T) {
	s := startServer(t, withDashboard(dashboardConfigForBrowser()))
	stuckFleet(t, s)
	ctx := browser(t)
	shots := shotsDir(t)
	do(t, ctx, "open the dashboard", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#claimed")))
	ids := func() string {
		return strings.Join(eval[[]string](t, ctx, `[...document.querySelectorAll('#claimed tbody tr[data-ticket]')].map(r => r.dataset.ticket)`), ",")
	}
	do(t, ctx, "search for bob", chromedp.SendKeys(chromedp.CSS("#search"), "bob"), chromedp.Click(chromedp.CSS("#filter")),
		chromedp.WaitVisible(chromedp.CSS("#clear")))
	if got := ids(); got != "S1,Q" {
		t.Errorf("searching bob: %s", got)
	}
	do(t, ctx, "sort by verdict since", chromedp.Click(chromedp.CSS(`a.sort[data-sort="since"]`)), chromedp.WaitVisible(chromedp.CSS(`#claimed[data-sort="since"]`)))
	if got := ids(); got != "Q,S1" {
		t.Errorf("bob's by since (Q silent since 12m, S1 stalled since 18m): %s", got)
	}
	do(t, ctx, "clear", chromedp.Click(chromedp.CSS("#clear")), chromedp.WaitVisible(chromedp.CSS("#claimed")))
	do(t, ctx, "sort by since", chromedp.Click(chromedp.CSS(`a.sort[data-sort="since"]`)), chromedp.WaitVisible(chromedp.CSS(`#claimed[data-sort="since"]`)))
	if got := ids(); got != "Q,S2,S1,S3,A" {
		t.Errorf("all by since: %s", got)
	}
	screenshot(t, ctx, shots, "claimed-by-since.png")
	for _, d := range []time.Duration{0, 45 * time.Second, 4*time.Minute + 12*time.Second, 3*time.Hour + 5*time.Minute, 50 * time.Hour} {
		if got := eval[string](t, ctx, `window.warpFmtDur(`+strconvMS(d)+`)`); got != age.Format(d) {
			t.Errorf("the script writes %s as %q, the server %q", d, got, age.Format(d))
		}
	}
}
