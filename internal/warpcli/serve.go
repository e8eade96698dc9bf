package warpcli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/groupcommit"
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
	// Timeouts and bounds of the HTTP server against slow or hostile
	// clients: headers within HeaderTimeout, the whole request within
	// ReadTimeout, the answer within WriteTimeout, headers of at most
	// MaxHeaderBytes.
	HeaderTimeout  = 5 * time.Second
	ReadTimeout    = 15 * time.Second
	WriteTimeout   = 30 * time.Second
	MaxHeaderBytes = 32 << 10
	// DefaultMaxHostsPerToken bounds the hosts one agent token may report
	// in a day: far above a real fleet per token, far below what floods
	// the adoption table.
	DefaultMaxHostsPerToken = 1000
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
	// MaxAttempts is the attempt cap (--max-attempts): after that many
	// attempts of a ticket ended without completing, it is blocked; 0: off.
	MaxAttempts int
	// HookAlarm holds the fleet alarm's thresholds (--hook-alarm-ratio,
	// --hook-alarm-min).
	HookAlarm warp.HookAlarm
	// TokenFile holds role:token lines; AdminToken (WARP_TOKEN) is one more
	// admin token. With neither, the server only listens on loopback
	// unless Insecure.
	TokenFile  string
	AdminToken string
	Insecure   bool
	// TokenFileOptional lets TokenFile name a file that does not exist
	// (--token-file-optional): the container image names a default path
	// that WARP_TOKEN alone may stand in for.
	TokenFileOptional bool
	// TokenPoll is how often the token file is checked for a change
	// (--token-poll): a changed file is read again as on SIGHUP, so a
	// container or a mounted secret needs no signal. 0: only SIGHUP.
	TokenPoll time.Duration
	// SessionTTL is how long a dashboard sign-in lasts (--session-ttl);
	// httpapi.DefaultSessionTTL when zero.
	SessionTTL time.Duration
	// MaxConns and MaxConnsPerClient bound open connections in total and
	// per client IP (--max-conns, --max-conns-per-client); 0: no bound.
	MaxConns          int
	MaxConnsPerClient int
	// MaxHostsPerToken bounds the distinct hosts one agent token may report
	// within a day (--max-hosts-per-token); 0: no bound.
	MaxHostsPerToken int
	// DatabaseTimeout bounds the database work of one API request
	// (httpapi.DefaultDatabaseTimeout when zero; no flag: tests shorten it).
	DatabaseTimeout time.Duration

	// Now is the service's wall clock (tests inject one, taken as it is).
	// Nil: the database's clock on PostgreSQL, time.Now on SQLite, either
	// kept on this process's elapsed time (warp.Config.Elapsed).
	Now func() time.Time
	// Logger receives the server's log; discarded when nil.
	Logger *slog.Logger
	// Dashboard tunes the dashboard and its event stream (page size,
	// coalescing, ping); zero values are the defaults. Its Logger is Logger.
	Dashboard dashboard.Config
	// Store, when set, is an open store to serve instead of opening DB
	// (which is then only logged): for warpbench, which measures warp as
	// this composes it on a PostgreSQL schema of its own. Main owns it
	// from Run on, and closes it, also when Run fails.
	Store warp.Store
}

// DefaultServeConfig returns the documented defaults (docs/DESIGN.md section 2).
func DefaultServeConfig() ServeConfig {
	return ServeConfig{
		Addr:          DefaultAddr,
		DB:            DefaultDB,
		Mode:          warp.DefaultMode,
		Policy:        warp.DefaultPolicy(),
		SweepInterval: warp.DefaultSweepInterval,
		HookAlarm:     warp.DefaultHookAlarm(),
		SessionTTL:    httpapi.DefaultSessionTTL,
		TokenPoll:     DefaultTokenPoll,

		MaxConns:          httpapi.DefaultMaxConns,
		MaxConnsPerClient: httpapi.DefaultMaxConnsPerClient,
		MaxHostsPerToken:  DefaultMaxHostsPerToken,
		// A loop's exit report frees its ticket at once: the loop watches
		// the agent, never a tool call's shell (an unknown agent is
		// watched above its call's shells), so a live agent sends none.
		ReleaseOnExit: true,
	}
}

// Main is one running warp server: store, service, HTTP API and expiry job.
// Run starts it; Close stops it. Tests run it in-process on 127.0.0.1:0.
type Main struct {
	Config ServeConfig

	Store   warp.Store
	Service *warp.Service
	// GroupCommit applies the Service's heartbeats in batches.
	GroupCommit *groupcommit.Committer
	API         *httpapi.Server
	Expiry      *expiry.Job
	// Ops is the dashboard, the event stream and the metrics.
	Ops *Ops

	log       *slog.Logger
	ln        net.Listener
	stopPoll  chan struct{}
	pollDone  chan struct{}
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
	m.log = m.Config.Logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.Store = m.Config.Store
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	tokens, err := m.Config.check()
	if err != nil {
		return err
	}
	// Bind before touching the database: a start that cannot serve (port
	// taken) must not rewrite the startup grace of the whole fleet.
	if err := m.listen(); err != nil {
		return err
	}
	if err := m.startService(ctx); err != nil {
		return err
	}
	if err := m.startAPI(ctx, tokens); err != nil {
		return err
	}
	// Everything that can fail happens before the first request is served:
	// once a client got an answer, the start has succeeded.
	if err := m.startExpiry(ctx); err != nil {
		return err
	}
	if err := m.serve(ctx, tokens); err != nil {
		return err
	}
	m.watchTokenFile()
	return nil
}

// check validates the configuration and returns its tokens.
func (cfg ServeConfig) check() ([]httpapi.Token, error) {
	tokens, err := cfg.tokens()
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 && !cfg.Insecure {
		if err := requireLoopback(cfg.Addr); err != nil {
			return nil, err
		}
	}
	if cfg.SweepInterval <= 0 {
		return nil, warp.Errorf(warp.ErrInvalid, "sweep interval must be positive, got %s", cfg.SweepInterval)
	}
	if cfg.SessionTTL < 0 {
		return nil, warp.Errorf(warp.ErrInvalid, "session TTL must not be negative, got %s", cfg.SessionTTL)
	}
	if cfg.MaxConns < 0 || cfg.MaxConnsPerClient < 0 {
		return nil, warp.Errorf(warp.ErrInvalid, "connection limits must not be negative (0 disables one), got %d and %d", cfg.MaxConns, cfg.MaxConnsPerClient)
	}
	return tokens, nil
}

// listen binds the address, behind the connection limits.
func (m *Main) listen() error {
	ln, err := net.Listen("tcp", m.Config.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", m.Config.Addr, err)
	}
	m.ln = httpapi.LimitListener(ln, m.Config.MaxConns, m.Config.MaxConnsPerClient)
	return nil
}

// startService opens the store (unless given one), builds the Service
// with its group commit and initialises the database.
func (m *Main) startService(ctx context.Context) error {
	cfg := m.Config
	if m.Store == nil {
		var err error
		if m.Store, err = openStore(ctx, cfg.DB, m.log); err != nil {
			return err
		}
	}
	scfg := warp.Config{
		Policy: cfg.Policy, InitialMode: cfg.Mode, ReleaseOnExit: cfg.ReleaseOnExit, HookAlarm: cfg.HookAlarm, MaxAttempts: cfg.MaxAttempts,
		MaxHostsPerToken: cfg.MaxHostsPerToken, SweepInterval: cfg.SweepInterval, Instance: instanceName(cfg.Addr),
		Now: cfg.Now, Logger: m.log,
	}
	// Replicas of one database keep the database's time (DESIGN.md
	// section 3, The server's clock), on this process's elapsed time.
	if c, ok := m.Store.(interface{ Now() time.Time }); ok && cfg.Now == nil {
		scfg.Now, scfg.Elapsed = c.Now, warp.MonotonicClock()
	}
	svc, err := warp.NewService(m.Store, scfg)
	if err != nil {
		return err
	}
	m.Service = svc
	m.GroupCommit = groupcommit.Start(svc, groupcommit.Config{Workers: groupcommit.Writers(m.Store), Logger: m.log})
	svc.UseGroupCommit(m.GroupCommit)
	if err := svc.Init(ctx); err != nil {
		return fmt.Errorf("initialise database: %w", err)
	}
	return nil
}

// startAPI builds the HTTP API with the dashboard, the event stream and
// the metrics mounted on it.
func (m *Main) startAPI(ctx context.Context, tokens []httpapi.Token) error {
	dcfg := m.Config.Dashboard
	dcfg.Logger = m.log
	dcfg.SessionTTL = m.Config.SessionTTL
	if len(tokens) > 0 {
		dcfg.SignOut = httpapi.SignOutPath
	}
	var err error
	if m.Ops, err = NewOps(m.Service, dcfg, metrics.Config{Logger: m.log}); err != nil {
		return err
	}
	// Sessions live in the served database: every replica accepts them,
	// and a restart keeps them.
	apiCfg := httpapi.ServerConfig{Tokens: tokens, Logger: m.log, AnyHost: m.Config.Insecure,
		Sessions: m.Store, SessionTTL: m.Config.SessionTTL, DatabaseTimeout: m.Config.DatabaseTimeout}
	m.Ops.Attach(&apiCfg)
	if m.API, err = httpapi.NewServer(m.Service, apiCfg); err != nil {
		return err
	}
	m.Ops.Mount(m.API)
	return m.Ops.Start(ctx)
}

// startExpiry starts the expiry job; replicas sharing a database sweep
// one per tick (the store's lock).
func (m *Main) startExpiry(ctx context.Context) error {
	jobCfg := expiry.Config{Interval: m.Config.SweepInterval, Logger: m.log,
		OnSweep: m.Ops.OnSweep, OnError: m.Ops.OnSweepError}
	if l, ok := m.Store.(expiry.SweepLocker); ok {
		jobCfg.Locker = l
	}
	var err error
	if m.Expiry, err = expiry.New(m.Service, jobCfg); err != nil {
		return err
	}
	return m.Expiry.Start(ctx)
}

// serve logs the start and serves HTTP in the background.
func (m *Main) serve(ctx context.Context, tokens []httpapi.Token) error {
	cfg := m.Config
	mode, err := m.Service.Mode(ctx)
	if err != nil {
		return err
	}
	m.http = &http.Server{
		Handler: m.API,
		// A client that sends its headers and then trickles (or never
		// sends) its body is cut off: every body warp takes is small.
		ReadHeaderTimeout: HeaderTimeout,
		ReadTimeout:       ReadTimeout,
		// Answers are small too; the event stream moves its own deadline
		// before every write.
		WriteTimeout:   WriteTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
	}
	p := m.Service.Policy()
	m.log.Info("warp listening on "+m.URL(), "addr", m.ln.Addr().String(), "db", redactDSN(cfg.DB), "mode", mode,
		"lease_window", p.LeaseWindow, "sweep_interval", cfg.SweepInterval, "startup_grace", p.StartupGrace,
		"hook_alarm_ratio", cfg.HookAlarm.Ratio, "hook_alarm_min", cfg.HookAlarm.Min, "auth", authSummary(tokens))
	go func() {
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errc <- fmt.Errorf("serve http: %w", err)
		}
	}()
	return nil
}

// ReloadTokens reads the token file (and WARP_TOKEN) again and puts the
// tokens in force, as at a start (what SIGHUP does to warp serve): a token
// removed from the file is refused from the next request on, and so is
// every dashboard session it opened. A file that cannot be read or parsed,
// or holds no token, changes nothing: the error says why, and the tokens
// in force stay.
func (m *Main) ReloadTokens() error {
	if m.API == nil {
		return errors.New("the server is not running")
	}
	if m.Config.TokenFile == "" {
		return errors.New("warp serve has no --token-file to read again")
	}
	tokens, err := m.Config.tokens()
	if err != nil {
		return err
	}
	if err := m.API.SetTokens(tokens); err != nil {
		return err
	}
	m.log.Info("tokens read again from "+m.Config.TokenFile, "auth", authSummary(tokens))
	return nil
}

// DefaultTokenPoll is how often warp serve checks its token file for a
// change by default.
const DefaultTokenPoll = 10 * time.Second

// watchTokenFile reads the token file again whenever its content changes,
// checked every Config.TokenPoll, as SIGHUP does: a rotated secret (a
// Kubernetes secret's symlink swap, a file rewritten in place, a copy
// moved over it) is in force within one poll, without a signal. A change
// that cannot be put in force (unparsable, no token) is logged once and
// the tokens in force stay, until the file changes again.
func (m *Main) watchTokenFile() {
	if m.Config.TokenFile == "" || m.Config.TokenPoll <= 0 {
		return
	}
	last, _ := fileSum(m.Config.TokenFile)
	m.stopPoll, m.pollDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.pollDone)
		tick := time.NewTicker(m.Config.TokenPoll)
		defer tick.Stop()
		for {
			select {
			case <-m.stopPoll:
				return
			case <-tick.C:
			}
			sum, err := fileSum(m.Config.TokenFile)
			if err != nil || sum == last {
				continue // gone for a moment (mid-rename): the tokens in force stay
			}
			last = sum
			if err := m.ReloadTokens(); err != nil {
				m.log.Error("the token file changed but was not read again; the tokens in force stay", "err", err)
			}
		}
	}()
}

// fileSum is the SHA-256 of the file at path.
func fileSum(path string) ([sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
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
		if m.stopPoll != nil {
			close(m.stopPoll)
			<-m.pollDone
		}
		if m.Ops != nil {
			m.Ops.Close() // end the event streams first, or Shutdown waits for them
		}
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
		if m.GroupCommit != nil {
			errs = append(errs, m.GroupCommit.Close()) // answers the heartbeats still queued
		}
		if m.Service != nil {
			errs = append(errs, m.Service.Close())
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
		if cfg.TokenFileOptional && errors.Is(err, fs.ErrNotExist) {
			return cfg.withAdminToken(nil)
		}
		if err != nil {
			return nil, err
		}
		if len(t) == 0 {
			return nil, fmt.Errorf("token file %s has no tokens: add lines like admin:SECRET and agent:SECRET", cfg.TokenFile)
		}
		tokens = t
	}
	return cfg.withAdminToken(tokens)
}

// withAdminToken adds AdminToken (WARP_TOKEN) to the token file's tokens.
func (cfg ServeConfig) withAdminToken(tokens []httpapi.Token) ([]httpapi.Token, error) {
	if cfg.AdminToken != "" {
		for _, t := range tokens {
			if t.Secret != cfg.AdminToken {
				continue
			}
			if t.Role == httpapi.RoleAdmin {
				return tokens, nil
			}
			// gyrum reads WARP_TOKEN too, as its agent token: a shell or unit
			// that exports an agent's token would make every agent using it
			// an admin.
			return nil, fmt.Errorf("WARP_TOKEN (warp serve's admin token) is also an %s token in %s: it would make that %s an admin. "+
				"Unset WARP_TOKEN for warp serve, or give the admin a secret of its own", t.Role, cfg.TokenFile, t.Role)
		}
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

// instanceName names this server among replicas: the host name and the
// configured listen address (as given: a restart with port 0 is the same
// instance).
func instanceName(addr string) string {
	h, _ := os.Hostname()
	return h + " " + addr
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
	db, err := sqlite.OpenWith(ctx, dsn, sqlite.Options{Logger: log})
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
	n := map[httpapi.Role]int{}
	for _, t := range tokens {
		n[t.Role]++
	}
	if n[httpapi.RoleViewer] > 0 {
		return fmt.Sprintf("%d admin, %d agent, %d viewer token(s)", n[httpapi.RoleAdmin], n[httpapi.RoleAgent], n[httpapi.RoleViewer])
	}
	return fmt.Sprintf("%d admin, %d agent token(s)", n[httpapi.RoleAdmin], n[httpapi.RoleAgent])
}

// Log formats and levels of warp serve (--log-format, --log-level).
const (
	DefaultLogFormat = "text"
	DefaultLogLevel  = "info"
)

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// serveLogger returns the server's logger on stderr: slog's text or JSON
// handler (--log-format) from --log-level up, both already bound to
// WARP_LOG_FORMAT / WARP_LOG_LEVEL. A bad value is a usage error naming the
// flag, and the variable when the value came from there.
func (c *CLI) serveLogger(fs *pflag.FlagSet, format, level string) (*slog.Logger, error) {
	from := func(flag string) string {
		if fs.Changed(flag) {
			return ""
		}
		return " (from " + EnvName(flag) + ")"
	}
	var newHandler func(io.Writer, *slog.HandlerOptions) slog.Handler
	switch format {
	case "text":
		newHandler = func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }
	case "json":
		newHandler = func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }
	default:
		return nil, clikit.Usagef("--log-format %q%s: want text or json", format, from("log-format"))
	}
	lv, ok := logLevels[level]
	if !ok {
		return nil, clikit.Usagef("--log-level %q%s: want debug, info, warn or error", level, from("log-level"))
	}
	return slog.New(newHandler(c.Stderr, &slog.HandlerOptions{Level: lv, ReplaceAttr: durationText})), nil
}

// durationText writes a duration as the flags take it ("30m0s"): slog's
// JSON handler would write nanoseconds (1800000000000), which a reader
// must divide, and the text handler already writes it so.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

func (c *CLI) serveCommand() *cobra.Command {
	cfg := DefaultServeConfig()
	var mode string
	logFormat, logLevel := DefaultLogFormat, DefaultLogLevel
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
holds one role:token a line (roles agent, admin and viewer, # comments
allowed); SIGHUP, or a change of its content (--token-poll), has it read
again without a restart. The log goes to stderr,
as slog text or JSON lines (--log-format) from --log-level up. SIGINT or
SIGTERM shut it down gracefully.`,
		Example: `  warp serve
  warp serve --addr 0.0.0.0:7077 --token-file /etc/warp/tokens --db /var/lib/warp/warp.db
  WARP_LEASE_WINDOW=45m warp serve --mode activity
  warp serve --log-format json --log-level warn`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if err := c.bindEnv(cmd.Flags()); err != nil {
				return err
			}
			if err := cfg.resolveFlags(mode); err != nil {
				return err
			}
			var err error
			cfg.AdminToken, _ = c.lookupEnv("WARP_TOKEN")
			if cfg.Logger, err = c.serveLogger(cmd.Flags(), logFormat, logLevel); err != nil {
				return err
			}
			return c.serve(cmd.Context(), cfg)
		}),
	}
	serveFlags(cmd.Flags(), &cfg, &mode, &logFormat, &logLevel)
	return cmd
}

// resolveFlags sets cfg's mode from --mode and checks the flags that bound
// the policy, the sweep and the host alarm.
func (cfg *ServeConfig) resolveFlags(mode string) error {
	m, err := warp.ParseMode(mode)
	if err != nil {
		return clikit.Usagef("--mode: %s", warp.ErrorMessage(err))
	}
	cfg.Mode = m
	if err := cfg.Policy.Validate(); err != nil {
		return clikit.Usagef("%s", warp.ErrorMessage(err))
	}
	if cfg.SweepInterval <= 0 {
		return clikit.Usagef("--sweep-interval must be positive, got %s", cfg.SweepInterval)
	}
	if err := cfg.HookAlarm.Validate(); err != nil {
		return clikit.Usagef("--hook-alarm-ratio/--hook-alarm-min: %s", warp.ErrorMessage(err))
	}
	return nil
}

// serveFlags defines warp serve's flags on f, into cfg and the strings
// the command parses itself.
func serveFlags(f *pflag.FlagSet, cfg *ServeConfig, mode, logFormat, logLevel *string) {
	f.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (port 0: any free port)")
	f.StringVar(&cfg.DB, "db", cfg.DB, "SQLite database file, or a postgres:// URL")
	f.StringVar(mode, "mode", string(cfg.Mode), "expiry mode stored when the database has none: legacy, transition or activity")
	f.DurationVar(&cfg.Policy.LeaseWindow, "lease-window", cfg.Policy.LeaseWindow, "a lease lapses this long after its effective activity")
	f.DurationVar(&cfg.SweepInterval, "sweep-interval", cfg.SweepInterval, "time between expiry sweeps")
	f.DurationVar(&cfg.Policy.StallAfter, "stall-after", cfg.Policy.StallAfter, "verdict stalled: no activity for longer than this")
	f.DurationVar(&cfg.Policy.SpinAfter, "spin-after", cfg.Policy.SpinAfter, "verdict spinning: active, but no progress reported for longer than this (0: never spinning)")
	f.DurationVar(&cfg.Policy.ProgressDeadline, "progress-deadline", cfg.Policy.ProgressDeadline, "lapse a looping or spinning lease this long after its last progress, reason no-progress (0: report only)")
	f.DurationVar(&cfg.Policy.SilentAfter, "silent-after", cfg.Policy.SilentAfter, "verdict silent: no heartbeat for longer than this")
	f.DurationVar(&cfg.Policy.StartupGrace, "startup-grace", cfg.Policy.StartupGrace, "after a start, leases refreshed before it do not lapse for this long (none while another replica sweeps; 0: none)")
	clikit.IntVar(f, &cfg.MaxConns, "max-conns", cfg.MaxConns, "most connections open at once; more get 503 (0: no limit)")
	clikit.IntVar(f, &cfg.MaxConnsPerClient, "max-conns-per-client", cfg.MaxConnsPerClient, "most connections open at once from one client IP; more get 429 (0: no limit)")
	clikit.IntVar(f, &cfg.MaxHostsPerToken, "max-hosts-per-token", cfg.MaxHostsPerToken, "most distinct hosts one agent token may report within a day; more get 429 (0: no limit)")
	clikit.IntVar(f, &cfg.MaxAttempts, "max-attempts", cfg.MaxAttempts, "block a ticket (claim-next skips it; warp ticket reopen puts it back) after this many of its attempts ended without completing (0: no cap)")
	f.BoolVar(&cfg.ReleaseOnExit, "release-on-exit", cfg.ReleaseOnExit, "release a lease as soon as its loop reports the agent exited (false: it lapses one lease window later)")
	f.Float64Var(&cfg.HookAlarm.Ratio, "hook-alarm-ratio", cfg.HookAlarm.Ratio,
		"host alarm: share of a host's held leases that turned stalled or unwired within one stall window (0 < r <= 1)")
	clikit.IntVar(f, &cfg.HookAlarm.Min, "hook-alarm-min", cfg.HookAlarm.Min, "host alarm: at least this many stale leases")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file of role:token lines (roles agent, admin, viewer); read again on SIGHUP and when it changes")
	f.DurationVar(&cfg.TokenPoll, "token-poll", cfg.TokenPoll, "how often the token file is checked for a change (0: only SIGHUP reads it again)")
	f.BoolVar(&cfg.TokenFileOptional, "token-file-optional", false, "start without --token-file when that file does not exist (WARP_TOKEN, or no tokens on loopback)")
	f.DurationVar(&cfg.SessionTTL, "session-ttl", cfg.SessionTTL, "how long a dashboard sign-in lasts (sessions are kept in the database: a restart keeps them)")
	f.BoolVar(&cfg.Insecure, "insecure", false, "allow a non-loopback --addr without tokens, and answer any Host")
	f.StringVar(logFormat, "log-format", *logFormat, "log format on stderr: text or json (slog)")
	f.StringVar(logLevel, "log-level", *logLevel, "least severe log level: debug, info, warn or error")
}

// serve runs a server until ctx is done (SIGINT/SIGTERM) or serving fails.
func (c *CLI) serve(ctx context.Context, cfg ServeConfig) error {
	m := NewMain(cfg)
	if err := m.Run(ctx); err != nil {
		return err
	}
	// SIGHUP reads the token file again (its default action would end the
	// process).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var serveErr error
wait:
	for {
		select {
		case <-ctx.Done():
			cfg.Logger.Info("warp shutting down")
			break wait
		case serveErr = <-m.Err():
			break wait
		case <-hup:
			if err := m.ReloadTokens(); err != nil {
				cfg.Logger.Error("SIGHUP: the tokens were not read again; those in force stay", "err", err)
			}
		}
	}
	closeErr := m.Close()
	if serveErr == nil && closeErr == nil {
		cfg.Logger.Info("warp stopped")
	}
	return errors.Join(serveErr, closeErr)
}
