package warpcli

import (
	"context"
	"time"

	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/metrics"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Ops is the operator's view of one server: the dashboard with its event
// stream, the Prometheus metrics, and the observers that feed both from the
// HTTP API and the expiry job. Main.Run composes one per process:
//
//	ops, _ := NewOps(svc, dashboard.Config{Logger: log}, metrics.Config{Logger: log})
//	cfg := httpapi.ServerConfig{Tokens: tokens}
//	ops.Attach(&cfg)
//	api, _ := httpapi.NewServer(svc, cfg)
//	ops.Mount(api)
//	job, _ := expiry.New(svc, expiry.Config{OnSweep: ops.OnSweep, OnError: ops.OnSweepError})
//	ops.Start(ctx) ... ops.Close() before the HTTP shutdown
type Ops struct {
	Dashboard *dashboard.Dashboard
	Metrics   *metrics.Metrics
}

// NewOps returns the dashboard and the metrics of svc.
func NewOps(svc *warp.Service, dcfg dashboard.Config, mcfg metrics.Config) (*Ops, error) {
	d, err := dashboard.New(svc, dcfg)
	if err != nil {
		return nil, err
	}
	m, err := metrics.New(svc, mcfg)
	if err != nil {
		return nil, err
	}
	return &Ops{Dashboard: d, Metrics: m}, nil
}

// Attach sets the server's observers that feed the metrics and the event
// stream, and the dashboard's sign-in page unless cfg has one. Observers
// already set in cfg keep running, before these.
func (o *Ops) Attach(cfg *httpapi.ServerConfig) {
	if cfg.SignInPage == nil {
		cfg.SignInPage = o.Dashboard.SignInPage(httpapi.SignInPath)
	}
	prevObserve, prevHeartbeat, prevChange := cfg.Observe, cfg.OnHeartbeat, cfg.OnChange
	cfg.Observe = func(route string, code int, d time.Duration) {
		if prevObserve != nil {
			prevObserve(route, code, d)
		}
		o.Metrics.ObserveHTTP(route, code, d)
		o.Dashboard.ObserveHTTP(route, code, d)
	}
	cfg.OnHeartbeat = func(h apiobserve.HeartbeatOutcome) {
		if prevHeartbeat != nil {
			prevHeartbeat(h)
		}
		o.Metrics.ObserveHeartbeat(h.SchemaVersion, h.Code, h.Exit, h.Extended)
		o.Dashboard.OnHeartbeat(h)
	}
	cfg.OnChange = func(c apiobserve.Change) {
		if prevChange != nil {
			prevChange(c)
		}
		o.Dashboard.OnChange(c)
	}
}

// Mount registers the dashboard's routes, the event stream among them,
// and GET /metrics on s. Everything but the dashboard's open routes (its
// static assets) needs the admin role when tokens are configured; a
// browser signs in once with an admin token (httpapi.SignInPath) and then
// holds a session cookie (httpapi.SessionCookie).
func (o *Ops) Mount(s *httpapi.Server) {
	for _, r := range o.Dashboard.Routes() {
		role := httpapi.RoleAdmin
		switch {
		case r.Action:
			s.MountAction(r.Pattern, r.Handler)
			continue
		case r.Open:
			role = httpapi.RoleOpen
		}
		s.Mount(r.Pattern, r.Handler, role)
	}
	s.Mount("GET /metrics", o.Metrics.Handler(), httpapi.RoleAdmin)
}

// sweepReadTimeout bounds the database read OnSweep may need.
const sweepReadTimeout = 5 * time.Second

// OnSweep records a sweep (and its verdict pass) in the metrics and sends
// its lapses and verdict changes to the event stream; it fits
// expiry.Config.OnSweep.
func (o *Ops) OnSweep(res warp.SweepResult) {
	ctx, cancel := context.WithTimeout(context.Background(), sweepReadTimeout)
	defer cancel()
	o.Metrics.ObserveSweep(ctx, res)
	o.Dashboard.OnSweep(res)
}

// OnSweepError counts a failed sweep; it fits expiry.Config.OnError.
func (o *Ops) OnSweepError(err error) { o.Metrics.ObserveSweepError(err) }

// Start starts the event stream's broker.
func (o *Ops) Start(ctx context.Context) error { return o.Dashboard.Start(ctx) }

// Close ends the event streams. Call it before shutting the HTTP server
// down gracefully: open streams would otherwise hold the shutdown up.
func (o *Ops) Close() error {
	if o == nil {
		return nil
	}
	return o.Dashboard.Close()
}
