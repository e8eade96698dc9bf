package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

var t0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

// server is a warp server running in-process on 127.0.0.1:0, on a fresh
// SQLite file, with a manual clock and default durations. The background
// sweep runs once at start and then hourly; tests sweep with Sweep.
type server struct {
	*warpcli.Main
	clk    *storetest.Clock
	client *httpapi.Client
	url    string
}

type option func(*warpcli.ServeConfig)

func withToken(admin string) option { return func(c *warpcli.ServeConfig) { c.AdminToken = admin } }

func withDashboard(d dashboard.Config) option {
	return func(c *warpcli.ServeConfig) { c.Dashboard = d }
}

func startServer(tb testing.TB, opts ...option) *server {
	tb.Helper()
	clk := storetest.NewClock(t0)
	cfg := warpcli.DefaultServeConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = filepath.Join(tb.TempDir(), "warp.db")
	cfg.Policy.StartupGrace = 0
	cfg.SweepInterval = time.Hour
	cfg.Now = clk.Now
	for _, o := range opts {
		o(&cfg)
	}
	m := warpcli.NewMain(cfg)
	if err := m.Run(context.Background()); err != nil {
		tb.Fatalf("start warp: %v", err)
	}
	tb.Cleanup(func() { m.Close() })
	return &server{Main: m, clk: clk, url: m.URL(), client: httpapi.NewClient(m.URL(), cfg.AdminToken)}
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
	if _, err := s.client.CreateTicket(context.Background(), httpapi.CreateTicketRequest{ID: id, Title: title}); err != nil {
		tb.Fatalf("create %s: %v", id, err)
	}
}

func (s *server) claim(tb testing.TB, id, agent, host string) httpapi.Ticket {
	tb.Helper()
	t, err := s.client.Claim(context.Background(), id, httpapi.ClaimRequest{Agent: agent, Host: host})
	if err != nil {
		tb.Fatalf("claim %s: %v", id, err)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

// heartbeat2 sends a v2 heartbeat.
func (s *server) heartbeat2(tb testing.TB, id string, epoch int64, host string, age float64, exit string) httpapi.HeartbeatResponse {
	tb.Helper()
	r, err := s.client.Heartbeat(context.Background(), httpapi.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id,
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
