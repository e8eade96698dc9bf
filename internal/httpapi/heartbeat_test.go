package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// curlV1 sends a heartbeat exactly as the unmigrated bash loop does:
//
//	curl -s -X POST -d '{"ticket":"T-1"}' "$WARP_URL/heartbeat"
//
// curl -d sets Content-Type application/x-www-form-urlencoded and the body
// carries the ticket only.
func (e *env) curlV1(ticket string) response {
	e.t.Helper()
	return e.request("POST", "/heartbeat", "", "application/x-www-form-urlencoded", []byte(`{"ticket":"`+ticket+`"}`))
}

func (e *env) sweeper() *expiry.Job {
	e.t.Helper()
	j, err := expiry.New(e.svc, expiry.Config{Interval: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func TestLegacyV1ClientLivesOnInTransitionMode(t *testing.T) {
	e := newEnv(t, envOptions{mode: warp.ModeTransition})
	job := e.sweeper()
	ctx := context.Background()
	e.create("T-1")
	e.claim("T-1", "old-host")
	window := e.svc.Policy().LeaseWindow

	// Two hours of the old loop, one POST every 240 s, with the expiry job
	// sweeping after each: four lease windows, and the lease lives on.
	for elapsed := time.Duration(0); elapsed < 4*window; elapsed += warp.DefaultHeartbeatInterval {
		e.clock.Advance(warp.DefaultHeartbeatInterval)
		r := e.mustStatus(e.curlV1("T-1"), http.StatusOK)
		if r.errorCode() != "" {
			t.Fatalf("heartbeat answer %s", r.body)
		}
		res, err := job.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Lapsed) != 0 {
			t.Fatalf("after %s of v1 heartbeats the lease lapsed", elapsed)
		}
	}
	v := e.ticket("T-1")
	if v.Ticket.State != warp.TicketClaimed || v.Lease.SchemaVersion != 1 || !v.Lease.LastHeartbeatAt.Equal(e.clock.Now()) {
		t.Fatalf("after 2h of v1: state %s schema %d last heartbeat %s (now %s)", v.Ticket.State, v.Lease.SchemaVersion, v.Lease.LastHeartbeatAt, e.clock.Now())
	}
	if got := e.clock.Now().Sub(v.Lease.ClaimedAt); got <= window {
		t.Fatalf("test did not outlive the lease window: %s", got)
	}

	// The loop dies: one window after its last POST the lease lapses,
	// recorded as no-heartbeat with the v1 fallback having extended it.
	e.clock.Advance(window + time.Second)
	res, err := job.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lapsed) != 1 {
		t.Fatalf("lapsed %d leases, want 1", len(res.Lapsed))
	}
	evs, err := e.svc.Events(ctx, "T-1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Kind != warp.EventLapsed || last.Data.(warp.LapsedData).Reason != warp.LapseNoHeartbeat || !last.Data.(warp.LapsedData).FallbackExtended {
		t.Fatalf("last event %+v, want lapsed no-heartbeat fallback_extended", last)
	}
	// And the loop, if it comes back, is told the lease ended.
	r := e.curlV1("T-1")
	if r.status != http.StatusGone || r.errorCode() != httpapi.CodeLeaseEnded {
		t.Fatalf("late v1 heartbeat: %d %s", r.status, r.body)
	}
}

func TestLegacyV1ClientLapsesInActivityMode(t *testing.T) {
	e := newEnv(t, envOptions{mode: warp.ModeActivity})
	job := e.sweeper()
	ctx := context.Background()
	e.create("T-1")
	claimed := e.claim("T-1", "old-host")
	window := e.svc.Policy().LeaseWindow

	lapsedAt := time.Duration(-1)
	for elapsed := time.Duration(0); elapsed < 2*window; {
		e.clock.Advance(warp.DefaultHeartbeatInterval)
		elapsed += warp.DefaultHeartbeatInterval
		r := e.curlV1("T-1")
		if r.status == http.StatusGone {
			break
		}
		var hb httpapi.HeartbeatResponse
		e.mustStatus(r, http.StatusOK)
		if err := json.Unmarshal(r.body, &hb); err != nil {
			t.Fatal(err)
		}
		// Accepted and recorded, but it says it no longer extends the lease.
		if hb.Extended || hb.Note == "" || hb.Mode != "activity" {
			t.Fatalf("v1 answer in activity mode: %+v", hb)
		}
		if !hb.ExpiresAt.Equal(claimed.Lease.ClaimedAt.Add(window)) {
			t.Fatalf("expires_at moved to %s, want claim + window %s", hb.ExpiresAt, claimed.Lease.ClaimedAt.Add(window))
		}
		// expires_in_s is expires_at counted from the server's clock: what
		// a loop holds its lease on, whatever its own clock says.
		if want := max(hb.ExpiresAt.Sub(e.clock.Now()), 0).Seconds(); hb.ExpiresInS != want {
			t.Fatalf("expires_in_s %v, want expires_at less the server's now: %v", hb.ExpiresInS, want)
		}
		res, err := job.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Lapsed) == 1 {
			lapsedAt = elapsed
			break
		}
	}
	if lapsedAt < window || lapsedAt > window+warp.DefaultHeartbeatInterval {
		t.Fatalf("lease lapsed after %s, want one window (%s) after the claim despite the v1 heartbeats", lapsedAt, window)
	}
	v := e.ticket("T-1")
	if v.Ticket.State != warp.TicketOpen || v.Lease.State != warp.LeaseLapsed || v.Lease.EndReason != warp.LapseNoActivity {
		t.Fatalf("after the lapse: ticket %s lease %s reason %q", v.Ticket.State, v.Lease.State, v.Lease.EndReason)
	}
	// The heartbeats were still recorded for the adoption query.
	a, err := e.svc.Adoption(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Hosts) != 1 || a.Hosts[0].Host != "old-host" || a.Hosts[0].V1Count == 0 {
		t.Fatalf("adoption %+v", a)
	}
	r := e.curlV1("T-1")
	if r.status != http.StatusGone || r.errorCode() != httpapi.CodeLeaseEnded {
		t.Fatalf("v1 heartbeat after the lapse: %d %s", r.status, r.body)
	}
}

// TestHostClockSkewChangesNothing: the loop reports the *age* of the last
// activity, measured on its own clock; the server subtracts it from its
// own now. Two hosts whose agents were last active 42.5 s ago get the same
// last_activity_at though one host's clock runs an hour ahead (and says so
// in its Date header and an extra field a future loop might add).
func TestHostClockSkewChangesNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.create("ON-TIME")
	e.create("AHEAD")
	e.claim("ON-TIME", "h-ok")
	e.claim("AHEAD", "h-skew")
	e.clock.Advance(5 * time.Minute)
	serverNow := e.clock.Now()

	send := func(ticket, host string, skew time.Duration) httpapi.HeartbeatResponse {
		hostNow := serverNow.Add(skew)
		lastActivity := hostNow.Add(-42500 * time.Millisecond) // the activity file's mtime, host clock
		age := hostNow.Sub(lastActivity).Seconds()
		body := fmt.Sprintf(`{"schema_version":2,"ticket":%q,"epoch":1,"host":%q,"activity_age_s":%v,"sent_at":%q}`,
			ticket, host, age, hostNow.Format(time.RFC3339))
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/heartbeat", strings.NewReader(body))
		req.Header.Set("Date", hostNow.Format(http.TimeFormat))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var hb httpapi.HeartbeatResponse
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", ticket, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&hb); err != nil {
			t.Fatal(err)
		}
		return hb
	}
	okAns := send("ON-TIME", "h-ok", 0)
	skewAns := send("AHEAD", "h-skew", time.Hour)

	want := serverNow.Add(-42500 * time.Millisecond)
	for _, id := range []string{"ON-TIME", "AHEAD"} {
		l := e.ticket(id).Lease
		if !l.LastActivityAt.Equal(want) {
			t.Errorf("%s: last_activity_at %s, want server now - 42.5s = %s", id, l.LastActivityAt, want)
		}
		if !l.LastHeartbeatAt.Equal(serverNow) {
			t.Errorf("%s: last_heartbeat_at %s, want server now %s", id, l.LastHeartbeatAt, serverNow)
		}
	}
	if !okAns.ExpiresAt.Equal(skewAns.ExpiresAt) || !okAns.ExpiresAt.Equal(want.Add(e.svc.Policy().LeaseWindow)) {
		t.Errorf("expires_at %s vs %s, want both %s", okAns.ExpiresAt, skewAns.ExpiresAt, want.Add(e.svc.Policy().LeaseWindow))
	}
}

func TestLateHeartbeatAfterLapseGets410AndDoesNotRevive(t *testing.T) {
	e := newEnv(t, envOptions{})
	job := e.sweeper()
	ctx := context.Background()
	e.create("T-1")
	e.claim("T-1", "h1")
	e.mustStatus(e.json("POST", "/v1/heartbeat", "", v2Body("T-1", 1, 0), nil), http.StatusOK)
	e.clock.Advance(e.svc.Policy().LeaseWindow + time.Second)
	if res, err := job.RunOnce(ctx); err != nil || len(res.Lapsed) != 1 {
		t.Fatalf("sweep: %v, lapsed %d", err, len(res.Lapsed))
	}
	before := e.snapshot()
	for _, body := range []map[string]any{v2Body("T-1", 1, 0), {"ticket": "T-1"}, {"schema_version": 2, "ticket": "T-1", "epoch": 1, "activity_age_s": 0, "exit": "parent-exited"}} {
		r := e.json("POST", "/v1/heartbeat", "", body, nil)
		if r.status != http.StatusGone || r.errorCode() != httpapi.CodeLeaseEnded {
			t.Fatalf("late heartbeat %v: %d %s", body, r.status, r.body)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("a late heartbeat changed the database:\nbefore %s\nafter %s", before, after)
	}
	v := e.ticket("T-1")
	if v.Ticket.State != warp.TicketOpen || v.Lease.State != warp.LeaseLapsed {
		t.Fatalf("ticket %s lease %s, want open and lapsed", v.Ticket.State, v.Lease.State)
	}
}

func TestPreviousEpochAfterReclaimGets409(t *testing.T) {
	e := newEnv(t, withTokens())
	e.create("T-1")
	e.claim("T-1", "h1")
	e.mustStatus(e.json("POST", "/v1/tickets/T-1/release", agentToken, httpapi.ReleaseRequest{Epoch: 1}, nil), http.StatusOK)
	second := e.claim("T-1", "h2")
	if second.Lease.Epoch != 2 {
		t.Fatalf("re-claim epoch %d, want 2", second.Lease.Epoch)
	}
	e.clock.Advance(time.Minute)
	before := e.snapshot()
	for _, req := range []struct{ path, body string }{
		{"/v1/heartbeat", `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":0}`},
		{"/v1/tickets/T-1/release", `{"epoch":1}`},
		{"/v1/tickets/T-1/complete", `{"epoch":1}`},
	} {
		r := e.request("POST", req.path, agentToken, "application/json", []byte(req.body))
		if r.status != http.StatusConflict || r.errorCode() != httpapi.CodeStaleEpoch {
			t.Fatalf("%s with the old epoch: %d %s", req.path, r.status, r.body)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("a stale write changed the database:\nbefore %s\nafter %s", before, after)
	}
	if l := e.ticket("T-1").Lease; l.Epoch != 2 || !l.LastHeartbeatAt.Equal(second.Lease.LastHeartbeatAt) {
		t.Fatalf("lease 2 after stale writes: epoch %d heartbeat %s", l.Epoch, l.LastHeartbeatAt)
	}
}

func TestExitReportRecordsExitedVerdict(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.create("T-1")
	e.claim("T-1", "h1")
	var hb httpapi.HeartbeatResponse
	body := map[string]any{"schema_version": 2, "ticket": "T-1", "epoch": 1, "activity_age_s": 12, "exit": "parent-exited"}
	e.mustStatus(e.json("POST", "/v1/heartbeat", "", body, &hb), http.StatusOK)
	if hb.Verdict != "exited" {
		t.Fatalf("verdict %q, want exited", hb.Verdict)
	}
	if l := e.ticket("T-1").Lease; l.Exit != warp.ExitParentExited || !l.Held() {
		t.Fatalf("lease exit %q held %v: the lease lapses on schedule, not at once", l.Exit, l.Held())
	}
}

// The wire for the real client: a stale report ("stale": true) is
// answered as recorded but not extended, and every answer tells the loop
// the longest gap it may leave between attempts (90 % of the startup grace).
func TestHeartbeatStaleReportAndRetryGap(t *testing.T) {
	e := newEnv(t, envOptions{mode: warp.ModeTransition})
	e.create("T-1")
	e.claim("T-1", "h")
	e.clock.Advance(20 * time.Minute)
	r := e.mustStatus(e.request("POST", "/v1/heartbeat", "", "application/json",
		[]byte(`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1200,"stale":true}`)), http.StatusOK)
	var res httpapi.HeartbeatResponse
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Extended || !strings.Contains(res.Note, "stale report") || res.Verdict != "stalled" {
		t.Errorf("stale report answer: %s", r.body)
	}
	want := (e.svc.Policy().StartupGrace * 9 / 10).Seconds()
	if res.MaxRetryGapS != want {
		t.Errorf("max_retry_gap_s = %v, want %v (90 %% of the grace)", res.MaxRetryGapS, want)
	}
	if v := e.svc.Policy(); v.StartupGrace != warp.DefaultStartupGrace {
		t.Fatalf("policy grace %v", v.StartupGrace)
	}
}

// Host listings are paged: a fleet of 1,200 hosts comes back 500 at a
// time with a cursor, every host exactly once, the summary on every page;
// the Go client follows the pages.
func TestHostListingsArePaged(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.create("T-1")
	e.claim("T-1", "h")
	const n = 1200
	for i := range n {
		if _, err := e.svc.Heartbeat(context.Background(), warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", Host: fmt.Sprintf("host-%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/v1/adoption", "/v1/hosts"} {
		seen := map[string]bool{}
		cursor, pages := "", 0
		for {
			r := e.mustStatus(e.request("GET", path+"?cursor="+cursor, "", "", nil), http.StatusOK)
			var page struct {
				Hosts []struct {
					Host string `json:"host"`
				} `json:"hosts"`
				NextCursor string `json:"next_cursor"`
				Summary    *struct {
					Hosts int `json:"hosts"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(r.body, &page); err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page.Hosts) > httpkit.DefaultPageSize {
				t.Fatalf("%s: a page of %d hosts", path, len(page.Hosts))
			}
			if page.Summary != nil && page.Summary.Hosts < n {
				t.Errorf("%s: summary counts %d hosts on a page, want all", path, page.Summary.Hosts)
			}
			for _, h := range page.Hosts {
				if seen[h.Host] {
					t.Fatalf("%s: %s on two pages", path, h.Host)
				}
				seen[h.Host] = true
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if len(seen) < n || pages != 3 {
			t.Errorf("%s: %d hosts in %d pages, want %d+ in 3", path, len(seen), pages, n)
		}
	}
	if r := e.request("GET", "/v1/hosts?limit=0", "", "", nil); r.status != http.StatusBadRequest {
		t.Errorf("limit=0: %d", r.status)
	}
	cl := client.NewClient(e.srv.URL, "")
	a, err := cl.Adoption(context.Background(), 0)
	if err != nil || len(a.Hosts) < n || a.NextCursor != "" {
		t.Errorf("client Adoption: %d hosts, next %q, %v", len(a.Hosts), a.NextCursor, err)
	}
	hl, err := cl.Hosts(context.Background(), 0)
	if err != nil || len(hl.Hosts) < n {
		t.Errorf("client Hosts: %d hosts, %v", len(hl.Hosts), err)
	}
}
