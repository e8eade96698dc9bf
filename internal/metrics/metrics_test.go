package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/metrics"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

const adminToken = "metrics-test-admin"

// startServer runs warp in-process (one sweep at start; the tests sweep
// themselves) with the admin token and no startup grace.
func startServer(t *testing.T) *warpclitest.Server {
	t.Helper()
	return warpclitest.Start(t, func(c *warpcli.ServeConfig) {
		c.Policy.StartupGrace = 0
		c.ReleaseOnExit = false // an exit report's lease lapses (agent-exited), one of the reasons counted
		c.AdminToken = adminToken
	})
}

// scrape reads /metrics and returns every sample as "name{labels}" → value;
// histograms give their _count and _sum.
func scrape(t *testing.T, m *warpclitest.Server) map[string]float64 {
	t.Helper()
	fams := m.Metrics(t, adminToken)
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name + labels(m)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labels(m)] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labels(m)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func labels(m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(ls)
	if len(ls) == 0 {
		return ""
	}
	return "{" + strings.Join(ls, ",") + "}"
}

func ptr[T any](v T) *T { return &v }

// TestMetricsAfterAKnownSequence drives warp through a sequence whose
// every count is known and checks each series' value exactly.
func TestMetricsAfterAKnownSequence(t *testing.T) {
	m := startServer(t)
	clk, c := m.Clock, m.Client(adminToken)
	ctx := context.Background()
	// The job's first sweep runs at start; wait for it so the counts are exact.
	deadline := time.Now().Add(10 * time.Second)
	for scrape(t, m)[metrics.NameSweeps] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the start sweep was not counted within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	claim := func(id, host string) {
		t.Helper()
		if _, err := c.CreateTicket(ctx, client.CreateTicketRequest{ID: id, Title: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Claim(ctx, id, client.ClaimRequest{Agent: "O", Host: host}); err != nil {
			t.Fatal(err)
		}
	}
	hb := func(r client.HeartbeatRequest, wantCode string) {
		t.Helper()
		_, err := c.Heartbeat(ctx, r)
		var apiErr *client.APIError
		switch {
		case wantCode == "ok" && err != nil:
			t.Fatalf("heartbeat %+v: %v", r, err)
		case wantCode != "ok" && (!errors.As(err, &apiErr) || apiErr.Code != wantCode):
			t.Fatalf("heartbeat %+v: got %v, want %s", r, err, wantCode)
		}
	}
	v2 := func(id string, epoch int64, host string, age float64) client.HeartbeatRequest {
		return client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id, Epoch: epoch, Host: host, ActivityAgeS: ptr(age)}
	}

	for id, host := range map[string]string{"A": "alpha", "B": "beta", "C": "gamma", "D": "delta", "E": "delta"} {
		claim(id, host)
	}
	clk.Advance(time.Minute)
	hb(v2("A", 1, "alpha", 0), "ok")
	// B is a v1 loop on the legacy path.
	legacy, err := http.NewRequest(http.MethodPost, m.URL()+"/heartbeat", strings.NewReader(`{"ticket":"B","host":"beta","agent":"O"}`))
	if err != nil {
		t.Fatal(err)
	}
	legacy.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(legacy)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("legacy heartbeat: %v %v", resp, err)
	}
	resp.Body.Close()
	exit := v2("C", 1, "gamma", 0)
	exit.Exit = "parent-exited"
	hb(exit, "ok")
	hb(v2("NOPE", 1, "alpha", 0), "not_found")
	hb(v2("A", 9, "alpha", 0), "stale_epoch")
	hb(v2("A", 1, "alpha", -1), "invalid")
	hb(client.HeartbeatRequest{SchemaVersion: ptr(7), Ticket: "A"}, "unsupported_schema_version")
	if _, err := c.Complete(ctx, "D", client.CompleteRequest{Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	hb(v2("D", 1, "delta", 0), "lease_ended")
	hb(client.HeartbeatRequest{Ticket: "D", Host: "delta"}, "lease_ended")

	clk.Advance(13 * time.Minute) // t0+14m
	claim("H", "eta")
	clk.Advance(6 * time.Minute) // t0+20m
	claim("F", "alpha")
	clk.Advance(11*time.Minute + time.Second) // t0+31m1s
	hb(v2("H", 1, "eta", 17*60+1), "ok")      // alive, idle since its claim: stalled
	claim("G", "beta")

	res, err := m.Expiry.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.Ops.OnSweep(res)
	if len(res.Lapsed) != 4 || len(res.VerdictChanges) != 2 {
		t.Fatalf("sweep: %d lapsed, %d verdict changes; want 4 and 2", len(res.Lapsed), len(res.VerdictChanges))
	}

	if _, err := c.SetMode(ctx, "activity", false); !errors.Is(err, client.ErrAdoptionIncomplete) {
		t.Fatalf("activity mode with a v1 host: got %v, want adoption incomplete", err)
	}
	if _, err := c.SetMode(ctx, "activity", true); err != nil {
		t.Fatal(err)
	}
	hb(client.HeartbeatRequest{Ticket: "G", Host: "beta"}, "ok") // recorded, not extended

	got := scrape(t, m)
	want := map[string]float64{
		`warp_heartbeats_total{outcome="ok",schema_version="2"}`:                                   3,
		`warp_heartbeats_total{outcome="ok",schema_version="1"}`:                                   2,
		`warp_heartbeats_total{outcome="not_found",schema_version="2"}`:                            1,
		`warp_heartbeats_total{outcome="stale_epoch",schema_version="2"}`:                          1,
		`warp_heartbeats_total{outcome="lease_ended",schema_version="2"}`:                          1,
		`warp_heartbeats_total{outcome="lease_ended",schema_version="1"}`:                          1,
		`warp_heartbeats_total{outcome="invalid",schema_version="other"}`:                          1,
		`warp_heartbeats_total{outcome="unsupported_schema_version",schema_version="other"}`:       1,
		`warp_heartbeats_not_extended_total{schema_version="1"}`:                                   1,
		`warp_exit_reports_total{exit="parent-exited"}`:                                            1,
		`warp_lapses_total{reason="no-activity"}`:                                                  2,
		`warp_lapses_total{reason="no-heartbeat"}`:                                                 1,
		`warp_lapses_total{reason="agent-exited"}`:                                                 1,
		`warp_lapses_fallback_extended_total`:                                                      1,
		`warp_sweep_due_leases`:                                                                    4,
		`warp_sweeps_total`:                                                                        2,
		`warp_sweep_errors_total`:                                                                  0,
		`warp_sweep_duration_seconds_count`:                                                        2,
		`warp_verdict_changes_total{from="active",to="silent"}`:                                    1,
		`warp_verdict_changes_total{from="active",to="stalled"}`:                                   1,
		`warp_claimed_leases{verdict="active"}`:                                                    1,
		`warp_claimed_leases{verdict="stalled"}`:                                                   1,
		`warp_claimed_leases{verdict="silent"}`:                                                    1,
		`warp_claimed_leases{verdict="exited"}`:                                                    0,
		`warp_claimed_leases{verdict="unwired"}`:                                                   0,
		`warp_hosts{schema_version="1"}`:                                                           1,
		`warp_hosts{schema_version="2"}`:                                                           3,
		`warp_mode{mode="activity"}`:                                                               1,
		`warp_mode{mode="transition"}`:                                                             0,
		`warp_mode{mode="legacy"}`:                                                                 0,
		`warp_http_request_duration_seconds_count{code="200",route="POST /v1/heartbeat"}`:          4,
		`warp_http_request_duration_seconds_count{code="200",route="POST /heartbeat"}`:             1,
		`warp_http_request_duration_seconds_count{code="404",route="POST /v1/heartbeat"}`:          1,
		`warp_http_request_duration_seconds_count{code="409",route="POST /v1/heartbeat"}`:          1,
		`warp_http_request_duration_seconds_count{code="400",route="POST /v1/heartbeat"}`:          2,
		`warp_http_request_duration_seconds_count{code="410",route="POST /v1/heartbeat"}`:          2,
		`warp_http_request_duration_seconds_count{code="200",route="POST /v1/tickets/{id}/claim"}`: 8,
		`warp_http_request_duration_seconds_count{code="201",route="POST /v1/tickets"}`:            8,
		`warp_http_request_duration_seconds_count{code="409",route="PUT /v1/mode"}`:                1,
		`warp_http_request_duration_seconds_count{code="200",route="PUT /v1/mode"}`:                1,
		// One at a time, every heartbeat that reached the service was a
		// group-commit transaction of its own: the five accepted and the
		// four refused there (not found, stale, ended twice), not the two
		// refused at decoding.
		`warp_heartbeat_batch_size_count`:             9,
		`warp_heartbeat_batch_size_sum`:               9,
		`warp_heartbeat_batch_duration_seconds_count`: 9,
		`warp_heartbeat_batch_failures_total`:         0,
		// The test's clock never stepped back.
		`warp_clock_ahead_seconds`: 0,
	}
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("%s: missing", k)
			continue
		}
		if v != w {
			t.Errorf("%s: got %v, want %v", k, v, w)
		}
	}
	// Every other heartbeat outcome, verdict-change and lapse series is
	// still at 0 (they exist from the start: TestMetricsExistFromTheFirstScrape).
	for k := range got {
		if (strings.HasPrefix(k, metrics.NameHeartbeats+"{") || strings.HasPrefix(k, metrics.NameVerdictChanges+"{") ||
			strings.HasPrefix(k, metrics.NameLapses+"{")) && want[k] == 0 && got[k] != 0 {
			t.Errorf("unexpected series %s = %v", k, got[k])
		}
	}
	if got[`warp_sweep_duration_seconds_sum`] <= 0 {
		t.Errorf("sweep duration sum %v, want > 0", got[`warp_sweep_duration_seconds_sum`])
	}
	// /metrics needs the admin token.
	resp, err = http.Get(m.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: got %d, want 401", resp.StatusCode)
	}
}

// TestRegistriesAreSeparate checks two servers in one process never share
// series (no package-level registry).
func TestRegistriesAreSeparate(t *testing.T) {
	m1 := startServer(t)
	m2 := startServer(t)
	m1.Ops.Metrics.ObserveHeartbeat(2, "ok", "", true)
	a, b := scrape(t, m1), scrape(t, m2)
	k := `warp_heartbeats_total{outcome="ok",schema_version="2"}`
	if a[k] != 1 || b[k] != 0 {
		t.Errorf("%s: server 1 has %v, server 2 has %v; want 1 and 0", k, a[k], b[k])
	}
	if m1.Ops.Metrics.Registry() == m2.Ops.Metrics.Registry() {
		t.Error("two servers share a registry")
	}
}

func TestSchemaLabelIsBounded(t *testing.T) {
	for v, want := range map[int]string{0: "other", 1: "1", 2: "2", 3: "other", -1: "other", 1 << 30: "other"} {
		if got := metrics.SchemaLabel(v); got != want {
			t.Errorf("SchemaLabel(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := metrics.New(nil, metrics.Config{}); err == nil {
		t.Error("nil service accepted")
	}
	m := startServer(t)
	if _, err := metrics.New(m.Service, metrics.Config{AdoptionWindow: -time.Hour}); !errors.Is(err, warp.ErrInvalid) {
		t.Errorf("negative window: got %v, want ErrInvalid", err)
	}
}

// TestMetricsExistFromTheFirstScrape: a warp that has seen nothing exposes
// every counter with its known label values at 0 (issue 46: Grafana said
// "No data" on a fresh warp, and rate() misses a series' first event).
func TestMetricsExistFromTheFirstScrape(t *testing.T) {
	got := scrape(t, startServer(t))
	var want []string
	for _, sv := range []string{"1", "2"} {
		for _, o := range metrics.HeartbeatOutcomes {
			want = append(want, `warp_heartbeats_total{outcome="`+o+`",schema_version="`+sv+`"}`)
		}
		want = append(want, `warp_heartbeats_not_extended_total{schema_version="`+sv+`"}`)
	}
	want = append(want, `warp_heartbeats_total{outcome="unsupported_schema_version",schema_version="other"}`,
		`warp_exit_reports_total{exit="parent-exited"}`, `warp_exit_reports_total{exit="worktree-gone"}`,
		`warp_lapses_fallback_extended_total`, `warp_sweep_errors_total`, `warp_sweep_due_leases`, `warp_hosts_in_alarm`,
		`warp_http_request_duration_seconds_count{code="200",route="POST /v1/heartbeat"}`)
	for _, r := range metrics.LapseReasons {
		want = append(want, `warp_lapses_total{reason="`+r+`"}`)
	}
	n := 0
	for _, from := range warp.Verdicts() {
		for _, to := range warp.Verdicts() {
			if from != to {
				want = append(want, `warp_verdict_changes_total{from="`+string(from)+`",to="`+string(to)+`"}`)
				n++
			}
		}
	}
	if n != 42 {
		t.Errorf("%d verdict pairs, want 42 (7 verdicts)", n)
	}
	for _, k := range []string{`warp_sweeps_total`, `warp_sweep_duration_seconds_count`} { // warp serve sweeps at its start
		if _, ok := got[k]; !ok {
			t.Errorf("%s: missing on a fresh warp", k)
		}
	}
	for _, k := range want {
		if v, ok := got[k]; !ok || v != 0 {
			t.Errorf("%s: %v, %v on a fresh warp; want 0", k, v, ok)
		}
	}
}
