package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

var t0 = warpclitest.T0

// server is a warp server running in-process on 127.0.0.1:0, on a fresh
// SQLite file, with a manual clock, no startup grace and default
// durations otherwise. The background sweep runs once at start and then
// hourly; tests sweep with Sweep.
type server struct {
	*warpclitest.Server
	clk    *storetest.Clock
	client *client.Client
	url    string
}

type option func(*warpcli.ServeConfig)

func withToken(admin string) option { return func(c *warpcli.ServeConfig) { c.AdminToken = admin } }

func withDashboard(d dashboard.Config) option {
	return func(c *warpcli.ServeConfig) { c.Dashboard = d }
}

func startServer(tb testing.TB, opts ...option) *server {
	tb.Helper()
	var admin string
	s := warpclitest.Start(tb, func(c *warpcli.ServeConfig) {
		c.Policy.StartupGrace = 0
		// The pages show an exit report's lease going exited, then
		// lapsing: what warp does without --release-on-exit.
		c.ReleaseOnExit = false
		for _, o := range opts {
			o(c)
		}
		admin = c.AdminToken
	})
	return &server{Server: s, clk: s.Clock, url: s.URL(), client: s.Client(admin)}
}

// Sweep runs one sweep and its verdict pass, and reports it to the
// dashboard and the metrics the way the background job does.
func (s *server) Sweep(tb testing.TB) warp.SweepResult {
	tb.Helper()
	res, err := s.Expiry.RunOnce(context.Background())
	if err != nil {
		tb.Fatalf("sweep: %v", err)
	}
	s.Ops.OnSweep(res)
	return res
}

func (s *server) create(tb testing.TB, id, title string) {
	tb.Helper()
	if _, err := s.client.CreateTicket(context.Background(), client.CreateTicketRequest{ID: id, Title: title}); err != nil {
		tb.Fatalf("create %s: %v", id, err)
	}
}

func (s *server) claim(tb testing.TB, id, agent, host string) client.Ticket {
	tb.Helper()
	t, err := s.client.Claim(context.Background(), id, client.ClaimRequest{Agent: agent, Host: host})
	if err != nil {
		tb.Fatalf("claim %s: %v", id, err)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

// heartbeat2 sends a v2 heartbeat.
func (s *server) heartbeat2(tb testing.TB, id string, epoch int64, host string, age float64, exit string) client.HeartbeatResponse {
	tb.Helper()
	r, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id,
		Epoch: epoch, Host: host, Agent: "agent", ActivityAgeS: ptr(age), Exit: exit})
	if err != nil {
		tb.Fatalf("heartbeat %s: %v", id, err)
	}
	return r
}

// get fetches path and returns status and body.
func get(tb testing.TB, hc *http.Client, url string) (int, string, http.Header) {
	tb.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// mustContain fails unless body holds every want.
func mustContain(tb testing.TB, what, body string, wants ...string) {
	tb.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			tb.Errorf("%s: %q not found in:\n%s", what, w, body)
		}
	}
}
