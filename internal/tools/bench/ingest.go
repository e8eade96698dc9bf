package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gyrum-labs/warp/internal/groupcommit"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// IngestResult is the load generator's view of one target.
type IngestResult struct {
	Target string `json:"target"`
	// Hosts the leases spread over (warp targets only); Postgres says
	// the store was PostgreSQL (else SQLite).
	Hosts     int     `json:"hosts,omitempty"`
	Postgres  bool    `json:"postgres,omitempty"`
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// Anchor is the no-op handler's rate measured right before this
	// target with the same generator (warp targets only): the machine's
	// speed drifts between runs, so each warp figure has its own anchor.
	Anchor float64 `json:"anchor_per_second,omitempty"`
	// Pairs is how many no-op/warp pairs were run (warp targets only):
	// the figures above are those of the pair with the median ratio,
	// RatioMin and RatioMax the lowest and highest pair's.
	Pairs    int     `json:"pairs,omitempty"`
	RatioMin float64 `json:"ratio_min,omitempty"`
	RatioMax float64 `json:"ratio_max,omitempty"`
	// CPUPerRequestUs is the CPU time (user and system) this whole process
	// spent per answered request during the measured run: the load
	// generator and the server under test (not a PostgreSQL server's own).
	// AnchorCPUPerRequestUs is the no-op run's. On a machine whose speed
	// drifts, their ratio moves less than the rates' do.
	CPUPerRequestUs       float64 `json:"cpu_us_per_request,omitempty"`
	AnchorCPUPerRequestUs float64 `json:"anchor_cpu_us_per_request,omitempty"`
	// PostgresCPUPerRequestUs is the CPU time the PostgreSQL server's
	// processes spent per answered request in the same run, when that
	// server runs on this machine (a loopback or socket address) and /proc
	// shows its processes; 0 otherwise.
	PostgresCPUPerRequestUs float64 `json:"postgres_cpu_us_per_request,omitempty"`
}

// CPURatioWithPostgres is CPURatio on PostgreSQL with the server's CPU
// counted beside the process's: the rate ratio warp and its PostgreSQL
// would reach sharing a machine of constant speed. 0 without the figures.
func (r IngestResult) CPURatioWithPostgres() float64 {
	if r.AnchorCPUPerRequestUs <= 0 || r.CPUPerRequestUs <= 0 || r.PostgresCPUPerRequestUs <= 0 {
		return 0
	}
	return r.AnchorCPUPerRequestUs / (r.CPUPerRequestUs + r.PostgresCPUPerRequestUs)
}

// ProcessCPURatio is the no-op run's CPU per request against this
// process's alone, PostgreSQL's server not counted: on PostgreSQL, the
// rate ratio one warp would reach with its database on other machines.
func (r IngestResult) ProcessCPURatio() float64 {
	if r.AnchorCPUPerRequestUs <= 0 || r.CPUPerRequestUs <= 0 {
		return 0
	}
	return r.AnchorCPUPerRequestUs / r.CPUPerRequestUs
}

// CPURatio is the no-op run's CPU per request against this one's, 0
// without both or on PostgreSQL (whose server's CPU is not in the figure):
// the rate ratio the process would reach on a machine of constant speed,
// its CPUs as busy in both runs.
func (r IngestResult) CPURatio() float64 {
	if r.AnchorCPUPerRequestUs <= 0 || r.CPUPerRequestUs <= 0 || r.Postgres {
		return 0
	}
	return r.AnchorCPUPerRequestUs / r.CPUPerRequestUs
}

// Ratio is PerSecond against Anchor, 0 without an anchor.
func (r IngestResult) Ratio() float64 {
	if r.Anchor <= 0 {
		return 0
	}
	return r.PerSecond / r.Anchor
}

// server is an HTTP server on 127.0.0.1:0 with its handler.
type server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

func serve(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: listen: %w", err)
	}
	s := &server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func (s *server) url() string { return "http://" + s.ln.Addr().String() }

func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	<-s.done
}

// warpServer is warp serving a store with n tickets B-1..B-n, claimed
// (epoch 1) when claim is set, over hosts hosts (host-i%hosts).
type warpServer struct {
	base string
	svc  *warp.Service
	stop func()
}

func (w *warpServer) url() string { return w.base }
func (w *warpServer) close()      { w.stop() }

// benchToken is the admin token the ingest targets are served with and
// the load generator sends to every target, the no-op handler too.
const benchToken = "warpbench-admin-token"

// startServe runs warp on store db as `warp serve` composes it
// (warpcli.Main: the API behind its connection limits and timeouts, the
// metrics' and the dashboard's hooks, the expiry job), with benchToken as
// its admin token. Main owns db from here on.
func startServe(ctx context.Context, db warp.Store, n, hosts int) (*warpServer, error) {
	cfg := warpcli.DefaultServeConfig()
	cfg.Addr, cfg.DB, cfg.Store, cfg.AdminToken = "127.0.0.1:0", "warpbench", db, benchToken
	m := warpcli.NewMain(cfg)
	if err := m.Run(ctx); err != nil {
		return nil, fmt.Errorf("bench: start warp: %w", err)
	}
	if err := claimAll(ctx, m.Service, n, hosts, true); err != nil {
		m.Close()
		return nil, err
	}
	return &warpServer{base: m.URL(), svc: m.Service, stop: func() { m.Close() }}, nil
}

// startWarp is startWarpOn on a new SQLite file in dir, with the group
// commit's defaults.
func startWarp(ctx context.Context, dir string, sc warp.Config, n, hosts int, claim bool, wrap func(http.Handler) http.Handler) (*warpServer, error) {
	db, err := sqlite.Open(ctx, filepath.Join(dir, "warp.db"))
	if err != nil {
		return nil, err
	}
	return startWarpOn(ctx, db, sc, groupcommit.Config{}, n, hosts, claim, wrap)
}

// startWarpOn serves the API alone on store db (a Service of configuration
// sc, its zero value warp's defaults, with a group commit of configuration
// gcc; no token, no metrics; wrap, when set, wraps the handler), and
// closes db with the server.
func startWarpOn(ctx context.Context, db warp.Store, sc warp.Config, gcc groupcommit.Config, n, hosts int, claim bool, wrap func(http.Handler) http.Handler) (*warpServer, error) {
	svc, err := warp.NewService(db, sc)
	var gc *groupcommit.Committer
	if err == nil {
		gc = groupcommit.Start(svc, gcc)
		svc.UseGroupCommit(gc)
		err = svc.Init(ctx)
	}
	if err == nil {
		err = claimAll(ctx, svc, n, hosts, claim)
	}
	var api *httpapi.Server
	if err == nil {
		api, err = httpapi.NewServer(svc, httpapi.ServerConfig{})
	}
	var s *server
	if err == nil {
		var h http.Handler = api
		if wrap != nil {
			h = wrap(h)
		}
		s, err = serve(h)
	}
	if err != nil {
		if gc != nil {
			gc.Close()
		}
		if svc != nil {
			svc.Close()
		}
		db.Close()
		return nil, err
	}
	return &warpServer{base: s.url(), svc: svc, stop: func() {
		s.close()
		gc.Close()
		svc.Close()
		db.Close()
	}}, nil
}

// claimAll creates tickets B-1..B-n and, when claim is set, claims each
// for host-i%hosts.
func claimAll(ctx context.Context, svc *warp.Service, n, hosts int, claim bool) error {
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("B-%d", i)
		_, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id})
		if err == nil && claim {
			_, err = svc.Claim(ctx, id, warp.ClaimRequest{Agent: "bench", Host: fmt.Sprintf("host-%d", i%hosts)})
		}
		if err != nil {
			return fmt.Errorf("bench: claim %s: %w", id, err)
		}
	}
	return nil
}

// noop answers every request as cheaply as a Go handler can, after reading
// the body as any handler must.
func noop() http.Handler {
	body := []byte(`{"ticket":"B-1","epoch":1,"verdict":"active","mode":"transition","extended":true}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

func benchIngest(ctx context.Context, cfg Config, root string) ([]IngestResult, error) {
	ns, err := serve(noop())
	if err != nil {
		return nil, err
	}
	defer ns.close()
	// anchor measures the no-op handler right before a warp target.
	anchor := func() (IngestResult, error) {
		return load(ctx, cfg, "no-op Go handler", ns.url(), benchToken, 1, nil)
	}
	var out []IngestResult
	for _, hosts := range cfg.IngestHosts {
		dir := filepath.Join(root, fmt.Sprintf("ingest-%d", hosts))
		if err := mkdir(dir); err != nil {
			return nil, err
		}
		db, err := sqlite.Open(ctx, filepath.Join(dir, "warp.db"))
		if err != nil {
			return nil, err
		}
		ws, err := startServe(ctx, db, cfg.IngestLeases, hosts)
		if err != nil {
			return nil, err
		}
		w, err := paired(ctx, cfg, anchor, fmt.Sprintf("warp (SQLite, POST /v1/heartbeat v2, %d hosts)", hosts), ws.url(), hosts, nil)
		ws.close()
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	if cfg.PostgresURL != "" {
		p, err := ingestPostgres(ctx, cfg, anchor)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	n, err := load(ctx, cfg, "no-op Go handler", ns.url(), benchToken, 1, nil)
	if err != nil {
		return nil, err
	}
	return append(out, n), nil
}

// paired measures target (at url, leases over hosts) cfg.IngestPairs
// times, each right after the no-op handler (anchor), and returns the
// pair with the median ratio, with the spread of the ratios. dbCPU, when
// set, is the database server's CPU time so far (see load).
func paired(ctx context.Context, cfg Config, anchor func() (IngestResult, error), target, url string, hosts int, dbCPU func() (time.Duration, error)) (IngestResult, error) {
	var rs []IngestResult
	for range max(cfg.IngestPairs, 1) {
		a, err := anchor()
		if err != nil {
			return IngestResult{}, err
		}
		w, err := load(ctx, cfg, target, url, benchToken, hosts, dbCPU)
		if err != nil {
			return IngestResult{}, err
		}
		w.Hosts, w.Anchor, w.AnchorCPUPerRequestUs = hosts, a.PerSecond, a.CPUPerRequestUs
		rs = append(rs, w)
	}
	return medianPair(rs), nil
}

// medianPair returns the result of rs (one or more pairs) with the median
// ratio (the upper one of an even count), with the count and the lowest
// and highest ratio.
func medianPair(rs []IngestResult) IngestResult {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(x, y IngestResult) int { return cmp.Compare(x.Ratio(), y.Ratio()) })
	m := rs[len(rs)/2]
	m.Pairs, m.RatioMin, m.RatioMax = len(rs), rs[0].Ratio(), rs[len(rs)-1].Ratio()
	return m
}

// ingestPostgres measures one warp on PostgreSQL at 50 hosts (fewer when
// there are fewer leases), in a schema of its own that it drops after,
// paired with the no-op handler as paired does.
func ingestPostgres(ctx context.Context, cfg Config, anchor func() (IngestResult, error)) (IngestResult, error) {
	schema := fmt.Sprintf("warpbench_%d_%d", os.Getpid(), time.Now().UnixNano())
	db, err := postgres.Open(ctx, cfg.PostgresURL, postgres.Options{Schema: schema})
	if err != nil {
		return IngestResult{}, fmt.Errorf("bench: postgres: %w", err)
	}
	defer func() {
		if err := dropSchema(cfg.PostgresURL, schema); err != nil {
			cfg.Logger.Warn("could not drop the bench schema", "schema", schema, "err", err)
		}
	}()
	hosts := min(50, cfg.IngestLeases)
	ws, err := startServe(ctx, db, cfg.IngestLeases, hosts)
	if err != nil {
		return IngestResult{}, err
	}
	var dbCPU func() (time.Duration, error)
	if local, err := localPostgres(cfg.PostgresURL); err == nil && local {
		dbCPU = func() (time.Duration, error) { return commandCPU("postgres") }
	}
	r, err := paired(ctx, cfg, anchor, fmt.Sprintf("warp (PostgreSQL, POST /v1/heartbeat v2, %d hosts)", hosts), ws.url(), hosts, dbCPU)
	ws.close()
	r.Postgres = true
	return r, err
}

// localPostgres reports whether url names a PostgreSQL server on this
// machine: a loopback address, localhost or a Unix socket (every host of
// a multi-host URL must be).
func localPostgres(url string) (bool, error) {
	c, err := pgx.ParseConfig(url)
	if err != nil {
		return false, err
	}
	hosts := []string{c.Host}
	for _, f := range c.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if strings.HasPrefix(h, "/") || h == "localhost" {
			continue
		}
		if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
			return false, nil
		}
	}
	return true, nil
}

// dropSchema drops the bench's schema with a connection of its own.
func dropSchema(url, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

// load runs the load generator against base: Concurrency clients send v2
// heartbeats round-robin over IngestLeases tickets (host-i%hosts) until Requests were
// sent or MaxDuration passed, after a warm-up that is not measured.
// dbCPU, when set, is a database server's CPU time so far: read around
// the measured run like this process's, it gives PostgresCPUPerRequestUs
// (nothing when either read fails).
func load(ctx context.Context, cfg Config, target, base, token string, hosts int, dbCPU func() (time.Duration, error)) (IngestResult, error) {
	tr := &http.Transport{MaxIdleConns: cfg.Concurrency, MaxIdleConnsPerHost: cfg.Concurrency, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	bodies := make([][]byte, cfg.IngestLeases)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"schema_version":2,"ticket":"B-%d","epoch":1,"host":"host-%d","agent":"bench","activity_age_s":3.5}`, i+1, (i+1)%hosts)
	}
	post := func(i int64) (time.Duration, error) {
		start := time.Now()
		err := postOnce(ctx, hc, base+"/v1/heartbeat", token, bodies[i%int64(len(bodies))])
		return time.Since(start), err
	}
	run := func(total int, deadline time.Time) ([]time.Duration, int, time.Duration, error) {
		var next atomic.Int64
		var errs atomic.Int64
		lat := make([][]time.Duration, cfg.Concurrency)
		var firstErr error
		var once sync.Once
		var wg sync.WaitGroup
		start := time.Now()
		for c := range cfg.Concurrency {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(total) || time.Now().After(deadline) || ctx.Err() != nil {
						return
					}
					d, err := post(i)
					if err != nil {
						errs.Add(1)
						once.Do(func() { firstErr = err })
						continue
					}
					lat[c] = append(lat[c], d)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		return all, int(errs.Load()), elapsed, firstErr
	}
	if _, _, _, err := run(min(500, cfg.Requests), time.Now().Add(cfg.MaxDuration)); err != nil {
		return IngestResult{}, fmt.Errorf("bench: warm-up against %s: %w", target, err)
	}
	var db0 time.Duration
	dbErr := errors.New("not measured")
	if dbCPU != nil {
		db0, dbErr = dbCPU()
	}
	cpu0 := processCPU()
	all, nerr, elapsed, firstErr := run(cfg.Requests, time.Now().Add(cfg.MaxDuration))
	cpu := processCPU() - cpu0
	var db time.Duration
	if dbErr == nil {
		var db1 time.Duration
		if db1, dbErr = dbCPU(); dbErr == nil {
			db = db1 - db0
		}
	}
	if ctx.Err() != nil {
		return IngestResult{}, ctx.Err()
	}
	if len(all) == 0 {
		return IngestResult{}, fmt.Errorf("bench: no request to %s succeeded: %w", target, errors.Join(firstErr))
	}
	slices.Sort(all)
	return IngestResult{
		Target: target, Requests: len(all), Errors: nerr, Seconds: elapsed.Seconds(),
		PerSecond: float64(len(all)) / elapsed.Seconds(),
		P50Ms:     ms(percentile(all, 0.50)), P90Ms: ms(percentile(all, 0.90)), P99Ms: ms(percentile(all, 0.99)),
		CPUPerRequestUs:         float64(cpu) / float64(time.Microsecond) / float64(len(all)),
		PostgresCPUPerRequestUs: max(float64(db)/float64(time.Microsecond)/float64(len(all)), 0),
	}, nil
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentile returns the nearest-rank q-quantile of sorted values.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
