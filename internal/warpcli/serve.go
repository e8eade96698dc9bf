package warpcli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/metrics"
	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Defaults of warp serve that the domain does not define.
const (
	DefaultAddr = "127.0.0.1:7077"
	DefaultDB   = "./warp.db"
	// ShutdownTimeout bounds the graceful shutdown: open requests get this
	// long to finish before their connections are closed.
	ShutdownTimeout = 5 * time.Second
)

// ServeConfig is the configuration of one server process.
type ServeConfig struct {
	Addr string // listen address; port 0 picks a free one
	DB   string // SQLite path, or postgres:// URL
	// Mode is stored as the expiry mode when the database has none.
	Mode          warp.Mode
	Policy        warp.Policy
	SweepInterval time.Duration
	ReleaseOnExit bool
	// HookAlarm holds the fleet alarm's thresholds (--hook-alarm-ratio,
	// --hook-alarm-min).
	HookAlarm warp.HookAlarm
	// TokenFile holds role:token lines; AdminToken (WARP_TOKEN) is one more
	// admin token. With neither, the server only listens on loopback
	// unless Insecure.
	TokenFile  string
	AdminToken string
	Insecure   bool

	// Now is the service clock; time.Now when nil (tests inject one).
	Now func() time.Time
	// Logger receives the server's log; discarded when nil.
	Logger *slog.Logger
	// Dashboard tunes the dashboard and its event stream (page size,
	// coalescing, ping); zero values are the defaults. Its Logger is Logger.
	Dashboard dashboard.Config
}

// DefaultServeConfig returns the documented defaults (DESIGN.md section 2).
func DefaultServeConfig() ServeConfig {
	return ServeConfig{
		Addr:          DefaultAddr,
		DB:            DefaultDB,
		Mode:          warp.DefaultMode,
		Policy:        warp.DefaultPolicy(),
		SweepInterval: warp.DefaultSweepInterval,
		HookAlarm:     warp.DefaultHookAlarm(),
	}
}

// Main is one running warp server: store, service, HTTP API and expiry job.
// Run starts it; Close stops it. Tests run it in-process on 127.0.0.1:0.
type Main struct {
	Config ServeConfig

	Store   warp.Store
	Service *warp.Service
	API     *httpapi.Server
	Expiry  *expiry.Job
	// Ops is the dashboard, the event stream and the metrics.
	Ops *dashboard.Ops

	log       *slog.Logger
	ln        net.Listener
	http      *http.Server
	errc      chan error
	closeOnce sync.Once
	closeErr  error
}

// NewMain returns a server for cfg; nothing runs until Run.
func NewMain(cfg ServeConfig) *Main {
	return &Main{Config: cfg, errc: make(chan error, 1)}
}

// Run opens the database, initialises the service (mode, startup grace),
// starts listening and serving and starts the expiry job. It returns once
// the server accepts connections; Err reports a later serving failure. On
// error everything opened so far is closed again.
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.Config
	m.log = cfg.Logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	tokens, err := cfg.tokens()
	if err != nil {
		return err
	}
	if len(tokens) == 0 && !cfg.Insecure {
		if err := requireLoopback(cfg.Addr); err != nil {
			return err
		}
	}
	if cfg.SweepInterval <= 0 {
		return warp.Errorf(warp.ErrInvalid, "sweep interval must be positive, got %s", cfg.SweepInterval)
	}

	m.Store, err = openStore(ctx, cfg.DB, m.log)
	if err != nil {
		return err
	}
	m.Service, err = warp.NewService(m.Store, warp.Config{
		Policy: cfg.Policy, InitialMode: cfg.Mode, ReleaseOnExit: cfg.ReleaseOnExit, HookAlarm: cfg.HookAlarm,
		Now: cfg.Now, Logger: m.log,
	})
	if err != nil {
		return err
	}
	if err := m.Service.Init(ctx); err != nil {
		return fmt.Errorf("initialise database: %w", err)
	}
	dcfg := cfg.Dashboard
	dcfg.Logger = m.log
	m.Ops, err = dashboard.NewOps(m.Service, dcfg, metrics.Config{Logger: m.log})
	if err != nil {
		return err
	}
	apiCfg := httpapi.ServerConfig{Tokens: tokens, Logger: m.log}
	m.Ops.Hook(&apiCfg)
	m.API, err = httpapi.NewServer(m.Service, apiCfg)
	if err != nil {
		return err
	}
	m.Ops.Mount(m.API)
	if err := m.Ops.Start(ctx); err != nil {
		return err
	}

	m.Expiry, err = expiry.New(m.Service, expiry.Config{Interval: cfg.SweepInterval, Logger: m.log,
		OnSweep: m.Ops.OnSweep, OnError: m.Ops.OnSweepError})
	if err != nil {
		return err
	}

	m.ln, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m.http = &http.Server{
		Handler:           m.API,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errc <- fmt.Errorf("serve http: %w", err)
		}
	}()
	if err := m.Expiry.Start(ctx); err != nil {
		return err
	}
	mode, err := m.Service.Mode(ctx)
	if err != nil {
		return err
	}
	p := m.Service.Policy()
	m.log.Info("warp listening on "+m.URL(), "addr", m.ln.Addr().String(), "db", redactDSN(cfg.DB), "mode", mode,
		"lease_window", p.LeaseWindow, "sweep_interval", cfg.SweepInterval, "startup_grace", p.StartupGrace,
		"hook_alarm_ratio", cfg.HookAlarm.Ratio, "hook_alarm_min", cfg.HookAlarm.Min, "auth", authSummary(tokens))
	return nil
}

// URL returns the server's base URL with the port actually bound; empty
// before Run.
func (m *Main) URL() string {
	if m.ln == nil {
		return ""
	}
	return "http://" + m.ln.Addr().String()
}

// Err delivers an error when serving stops on its own.
func (m *Main) Err() <-chan error { return m.errc }

// Close shuts the server down gracefully: it stops accepting, lets open
// requests finish (up to ShutdownTimeout), stops the expiry job and closes
// the database. It is safe to call more than once.
func (m *Main) Close() error {
	m.closeOnce.Do(func() {
		var errs []error
		m.Ops.Close() // end the event streams first, or Shutdown waits for them
		if m.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			if err := m.http.Shutdown(ctx); err != nil {
				m.http.Close()
			}
			cancel()
		} else if m.ln != nil {
			m.ln.Close()
		}
		if m.Expiry != nil {
			errs = append(errs, m.Expiry.Close())
		}
		if m.Store != nil {
			errs = append(errs, m.Store.Close())
		}
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}

func (cfg ServeConfig) tokens() ([]httpapi.Token, error) {
	var tokens []httpapi.Token
	if cfg.TokenFile != "" {
		t, err := httpapi.LoadTokenFile(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		if len(t) == 0 {
			return nil, fmt.Errorf("token file %s has no tokens: add lines like admin:SECRET and agent:SECRET", cfg.TokenFile)
		}
		tokens = t
	}
	if cfg.AdminToken != "" {
		tokens = append(tokens, httpapi.Token{Role: httpapi.RoleAdmin, Secret: cfg.AdminToken})
	}
	return tokens, nil
}

// requireLoopback refuses an address other hosts can reach, for a server
// without tokens.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q is invalid: want HOST:PORT like %s", addr, DefaultAddr)
	}
	if isLoopback(host) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without tokens: anyone who can reach it could claim and release tickets. "+
		"Configure tokens (--token-file FILE with lines admin:SECRET / agent:SECRET, or WARP_TOKEN), "+
		"listen on loopback (--addr %s), or pass --insecure on a network you trust", addr, DefaultAddr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openStore is the one place the store is chosen from --db: a postgres://
// or postgresql:// URL selects PostgreSQL, anything else is a SQLite path.
// The PostgreSQL pool size comes from the URL's pool_max_conns (see
// internal/postgres.Options).
func openStore(ctx context.Context, dsn string, log *slog.Logger) (warp.Store, error) {
	if dsn == "" {
		return nil, warp.Errorf(warp.ErrInvalid, "--db is empty: want a SQLite file path or a postgres:// URL")
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		db, err := postgres.Open(ctx, dsn, postgres.Options{Logger: log})
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	db, err := sqlite.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// redactDSN hides passwords in a database address before it is logged:
// the user:password@ part and a password= query parameter of a URL, and
// password=... in a libpq key=value string.
func redactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable database URL)"
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	fields := strings.Fields(dsn)
	for i, f := range fields {
		if k, _, ok := strings.Cut(f, "="); ok && k == "password" {
			fields[i] = "password=xxxxx"
		}
	}
	return strings.Join(fields, " ")
}

func authSummary(tokens []httpapi.Token) string {
	if len(tokens) == 0 {
		return "none (loopback or --insecure)"
	}
	var agents, admins int
	for _, t := range tokens {
		if t.Role == httpapi.RoleAdmin {
			admins++
		} else {
			agents++
		}
	}
	return fmt.Sprintf("%d admin, %d agent token(s)", admins, agents)
}

func (c *CLI) serveCommand() *cobra.Command {
	cfg := DefaultServeConfig()
	var mode string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the warp server",
		Long: `Run the warp server: the HTTP API agents claim tickets from and heartbeat to,
and the expiry job that lapses leases whose agents stopped working.

Every flag can also be set in the environment as WARP_ + the flag name in
upper snake case (WARP_DB, WARP_LEASE_WINDOW, ...); a flag on the command
line wins over the environment. WARP_TOKEN, when set, is one more admin token.
Durations use Go syntax (30m, 250ms).

Without tokens the server only listens on loopback addresses; a token file
holds one role:token a line (roles agent and admin, # comments allowed).
SIGINT or SIGTERM shut it down gracefully.`,
		Example: `  warp serve
  warp serve --addr 0.0.0.0:7077 --token-file /etc/warp/tokens --db /var/lib/warp/warp.db
  WARP_LEASE_WINDOW=45m warp serve --mode activity`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if err := c.bindEnv(cmd.Flags()); err != nil {
				return err
			}
			m, err := warp.ParseMode(mode)
			if err != nil {
				return usageErrorf("--mode: %s", warp.ErrorMessage(err))
			}
			cfg.Mode = m
			if err := cfg.Policy.Validate(); err != nil {
				return usageErrorf("%s", warp.ErrorMessage(err))
			}
			if cfg.SweepInterval <= 0 {
				return usageErrorf("--sweep-interval must be positive, got %s", cfg.SweepInterval)
			}
			if err := cfg.HookAlarm.Validate(); err != nil {
				return usageErrorf("--hook-alarm-ratio/--hook-alarm-min: %s", warp.ErrorMessage(err))
			}
			cfg.AdminToken, _ = c.lookupEnv("WARP_TOKEN")
			cfg.Logger = slog.New(slog.NewTextHandler(c.Stderr, nil))
			return c.serve(cmd.Context(), cfg)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (port 0: any free port)")
	f.StringVar(&cfg.DB, "db", cfg.DB, "SQLite database file, or a postgres:// URL")
	f.StringVar(&mode, "mode", string(cfg.Mode), "expiry mode stored when the database has none: legacy, transition or activity")
	f.DurationVar(&cfg.Policy.LeaseWindow, "lease-window", cfg.Policy.LeaseWindow, "a lease lapses this long after its effective activity")
	f.DurationVar(&cfg.SweepInterval, "sweep-interval", cfg.SweepInterval, "time between expiry sweeps")
	f.DurationVar(&cfg.Policy.StallAfter, "stall-after", cfg.Policy.StallAfter, "verdict stalled: no activity for longer than this")
	f.DurationVar(&cfg.Policy.SilentAfter, "silent-after", cfg.Policy.SilentAfter, "verdict silent: no heartbeat for longer than this")
	f.DurationVar(&cfg.Policy.StartupGrace, "startup-grace", cfg.Policy.StartupGrace, "after a start, leases refreshed before it do not lapse for this long")
	f.BoolVar(&cfg.ReleaseOnExit, "release-on-exit", false, "release a lease as soon as its loop reports the agent exited")
	f.Float64Var(&cfg.HookAlarm.Ratio, "hook-alarm-ratio", cfg.HookAlarm.Ratio,
		"host alarm: share of a host's held leases that turned stalled or unwired within one stall window (0 < r <= 1)")
	f.IntVar(&cfg.HookAlarm.Min, "hook-alarm-min", cfg.HookAlarm.Min, "host alarm: at least this many stale leases")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file of role:token lines (roles agent, admin)")
	f.BoolVar(&cfg.Insecure, "insecure", false, "allow a non-loopback --addr without tokens")
	return cmd
}

// serve runs a server until ctx is done (SIGINT/SIGTERM) or serving fails.
func (c *CLI) serve(ctx context.Context, cfg ServeConfig) error {
	m := NewMain(cfg)
	if err := m.Run(ctx); err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
		cfg.Logger.Info("warp shutting down")
	case serveErr = <-m.Err():
	}
	closeErr := m.Close()
	if serveErr == nil && closeErr == nil {
		cfg.Logger.Info("warp stopped")
	}
	return errors.Join(serveErr, closeErr)
}
