package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrum-labs/warp/internal/metrics"
	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// The fleet figure: warp as `warp serve` composes it, holding FleetLeases
// leases, takes the heartbeats of a fleet at FleetRate a second, open
// loop (each request leaves at its scheduled time whatever the answers
// before it did, and its latency counts from that time), while the
// expiry job ticks every FleetTickEvery. Targets (docs/BENCHMARKS.md):
// p99 ≤ 50 ms, no errors, a mean tick ≤ 100 ms.

// Fleet defaults: 100k held leases; 1M agents heartbeating every 240 s
// (the default interval); a tick a second, so the run holds some twenty.
const (
	DefaultFleetLeases    = 100_000
	DefaultFleetRate      = 1_000_000.0 / 240
	DefaultFleetDuration  = 20 * time.Second
	DefaultFleetTickEvery = time.Second
	// fleetConns bounds the load generator's connections per server: a
	// request that finds them all busy waits for one, and its wait counts
	// in its latency.
	fleetConns = 128
)

// FleetResult is one fleet run.
type FleetResult struct {
	Target   string  `json:"target"`
	Replicas int     `json:"replicas"`
	Leases   int     `json:"leases"`
	Rate     float64 `json:"rate"`
	Seconds  float64 `json:"seconds"`
	// Sent heartbeats, Answered with 200, Errors the rest (a failure or
	// any other status).
	Sent     int     `json:"sent"`
	Answered int     `json:"answered"`
	Errors   int     `json:"errors"`
	Achieved float64 `json:"achieved"`
	// Latency from each request's scheduled time to its answer.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Ticks of the expiry job (sweep and verdict pass) during the run, as
	// warp_sweep_duration_seconds counts them, over every replica.
	Ticks      int     `json:"ticks"`
	TickMeanMs float64 `json:"tick_mean_ms"`
	LoadSecs   float64 `json:"load_seconds"`
	FirstError string  `json:"first_error,omitempty"`
}

// Met reports whether r meets the fleet targets.
func (r FleetResult) Met() bool {
	return r.Errors == 0 && r.P99Ms <= 50 && r.TickMeanMs <= 100 && r.Ticks > 0
}

// FleetConfig configures RunFleet; zero fields take the defaults.
type FleetConfig struct {
	Leases    int
	Rate      float64
	Duration  time.Duration
	TickEvery time.Duration
	// PostgresURL, when set, adds PostgreSQL with one warp and with two
	// replicas (each in a schema of its own, dropped after).
	PostgresURL string
	// NoSQLite skips the SQLite run.
	NoSQLite bool
	TempDir  string
	// Logger receives progress; discarded when nil.
	Logger *slog.Logger
}

func (c *FleetConfig) defaults() {
	if c.Leases <= 0 {
		c.Leases = DefaultFleetLeases
	}
	if c.Rate <= 0 {
		c.Rate = DefaultFleetRate
	}
	if c.Duration <= 0 {
		c.Duration = DefaultFleetDuration
	}
	if c.TickEvery <= 0 {
		c.TickEvery = DefaultFleetTickEvery
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// RunFleet runs the fleet figure on SQLite and, with a PostgreSQL URL, on
// PostgreSQL with one warp and with two replicas.
func RunFleet(ctx context.Context, cfg FleetConfig) ([]FleetResult, error) {
	cfg.defaults()
	root, err := os.MkdirTemp(cfg.TempDir, "warp-fleet-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	var out []FleetResult
	if !cfg.NoSQLite {
		cfg.Logger.Info("fleet", "store", "SQLite", "leases", cfg.Leases, "rate", cfg.Rate)
		r, err := fleetOn(ctx, cfg, "warp (SQLite)", 1, func(context.Context) (warp.Store, error) {
			return sqlite.Open(ctx, filepath.Join(root, "fleet.db"))
		})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if cfg.PostgresURL == "" {
		return out, nil
	}
	for _, replicas := range []int{1, 2} {
		cfg.Logger.Info("fleet", "store", "PostgreSQL", "replicas", replicas, "leases", cfg.Leases, "rate", cfg.Rate)
		schema := fmt.Sprintf("warpfleet_%d_%d", os.Getpid(), time.Now().UnixNano())
		r, err := fleetOn(ctx, cfg, fmt.Sprintf("warp (PostgreSQL, %d replica(s))", replicas), replicas, func(ctx context.Context) (warp.Store, error) {
			return postgres.Open(ctx, cfg.PostgresURL, postgres.Options{Schema: schema})
		})
		if err := dropSchema(cfg.PostgresURL, schema); err != nil {
			cfg.Logger.Warn("could not drop the bench schema", "schema", schema, "err", err)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// fleetOn loads cfg.Leases held leases into a store of open, serves it
// with replicas warps (each on a store of its own from open, all on one
// database) and runs the load against them in turn.
func fleetOn(ctx context.Context, cfg FleetConfig, target string, replicas int, open func(context.Context) (warp.Store, error)) (FleetResult, error) {
	res := FleetResult{Target: target, Replicas: replicas, Leases: cfg.Leases, Rate: cfg.Rate}
	db, err := open(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: open store: %w", err)
	}
	start := time.Now()
	err = loadFleet(ctx, db, cfg.Leases, start)
	res.LoadSecs = time.Since(start).Seconds()
	if err != nil {
		db.Close()
		return res, err
	}
	var mains []*warpcli.Main
	defer func() {
		for _, m := range mains {
			m.Close()
		}
	}()
	for i := range replicas {
		if i > 0 {
			if db, err = open(ctx); err != nil {
				return res, fmt.Errorf("bench: open store: %w", err)
			}
		}
		sc := warpcli.DefaultServeConfig()
		// Replicas on one host: the instance name carries the address as
		// given, so each needs its own (the port 0 of each is the same).
		sc.Addr, sc.DB, sc.Store, sc.AdminToken = "127.0.0.1:0", fmt.Sprintf("warpbench-fleet-%d", i), db, benchToken
		sc.SweepInterval = cfg.TickEvery
		m := warpcli.NewMain(sc)
		if err := m.Run(ctx); err != nil {
			return res, fmt.Errorf("bench: start warp: %w", err)
		}
		mains = append(mains, m)
	}
	urls := make([]string, len(mains))
	for i, m := range mains {
		urls[i] = m.URL()
	}
	return res, runFleetLoad(ctx, cfg, urls, &res)
}

// fleetTicket is the id of fleet lease i.
func fleetTicket(i int) string { return "F-" + strconv.Itoa(i) }

// loadFleet fills db with n held leases as claims at now-1m would have
// left them (v2 loops, 1000 hosts).
func loadFleet(ctx context.Context, db warp.Store, n int, now time.Time) error {
	pol := warp.DefaultPolicy()
	at := now.Add(-time.Minute)
	return loadHeld(ctx, db, n, func(i int) warp.Lease {
		l := warp.Lease{Ticket: fleetTicket(i), Epoch: 1, Agent: "bench", Host: fmt.Sprintf("host-%d", i%1000), State: warp.LeaseHeld,
			ClaimedAt: at, LastHeartbeatAt: at, LastActivityAt: at, SchemaVersion: 2, FirstV2At: at, RefreshedAt: at}
		l.ExpiresAt = pol.ExpiresAt(warp.DefaultMode, l)
		l.VerdictDueAt = pol.VerdictDue(l, now)
		return l
	})
}

// runFleetLoad sends cfg.Rate heartbeats a second for cfg.Duration, open
// loop, spread over the servers at urls in turn, over the fleet's leases
// in a scattered order (a fleet's heartbeats arrive in no order), and
// reads the expiry job's ticks from the servers' metrics around it.
func runFleetLoad(ctx context.Context, cfg FleetConfig, urls []string, res *FleetResult) error {
	tr := &http.Transport{MaxIdleConnsPerHost: fleetConns, MaxConnsPerHost: fleetConns, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	before, err := sweepTotals(ctx, hc, urls)
	if err != nil {
		return err
	}
	var (
		errs     atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	total := int(cfg.Rate * cfg.Duration.Seconds())
	start := time.Now()
	for i := range total {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		// Stride 7919 (prime to any lease count without that factor)
		// walks every lease once, scattered.
		k := (i * 7919) % cfg.Leases
		url := urls[i%len(urls)] + "/v1/heartbeat"
		body := fmt.Appendf(nil, `{"schema_version":2,"ticket":"%s","epoch":1,"host":"host-%d","agent":"bench","activity_age_s":3.5}`, fleetTicket(k), k%1000)
		wg.Go(func() {
			err := postOnce(ctx, hc, url, benchToken, body)
			d := time.Since(at)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if errs.Add(1) == 1 {
					firstErr = err
				}
				return
			}
			lat = append(lat, d)
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	after, err := sweepTotals(ctx, hc, urls)
	if err != nil {
		return err
	}
	res.Sent, res.Answered, res.Errors = total, len(lat), int(errs.Load())
	res.Achieved = float64(len(lat)) / res.Seconds
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	slices.Sort(lat)
	res.P50Ms, res.P99Ms = ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99))
	if len(lat) > 0 {
		res.MaxMs = ms(lat[len(lat)-1])
	}
	res.Ticks = int(after.count - before.count)
	if res.Ticks > 0 {
		res.TickMeanMs = (after.sum - before.sum) * 1000 / float64(res.Ticks)
	}
	return nil
}

// sweeps is the sum and count of warp_sweep_duration_seconds.
type sweeps struct {
	sum   float64
	count float64
}

// sweepTotals adds up the expiry job's tick histogram over the servers.
func sweepTotals(ctx context.Context, hc *http.Client, urls []string) (sweeps, error) {
	var t sweeps
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/metrics", nil)
		if err != nil {
			return t, err
		}
		req.Header.Set("Authorization", "Bearer "+benchToken)
		resp, err := hc.Do(req)
		if err != nil {
			return t, fmt.Errorf("bench: scrape: %w", err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := 0
		for sc.Scan() {
			name, v, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			var dst *float64
			switch name {
			case metrics.NameSweepDuration + "_sum":
				dst = &t.sum
			case metrics.NameSweepDuration + "_count":
				dst = &t.count
			default:
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				resp.Body.Close()
				return t, fmt.Errorf("bench: scrape: %s %q: %w", name, v, err)
			}
			*dst += f
			found++
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return t, fmt.Errorf("bench: scrape: %w", err)
		}
		if resp.StatusCode != http.StatusOK || found != 2 {
			return t, fmt.Errorf("bench: scrape of %s answered %d without %s", u, resp.StatusCode, metrics.NameSweepDuration)
		}
	}
	return t, nil
}

// WriteFleetMarkdown writes fleet results as a markdown table; command is
// the command line that produced them.
func WriteFleetMarkdown(w io.Writer, rs []FleetResult, command string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### Fleet: heartbeats open loop while the expiry job ticks\n\nMeasured %s with `%s`.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), command)
	b.WriteString("| target | held leases | asked/s | answered/s | sent | errors | p50 ms | p99 ms | max ms | ticks | mean tick ms | targets met |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		met := "yes"
		if !r.Met() {
			met = "no"
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %d | %d | %.2f | %.2f | %.1f | %d | %.2f | %s |\n",
			r.Target, r.Leases, r.Rate, r.Achieved, r.Sent, r.Errors, r.P50Ms, r.P99Ms, r.MaxMs, r.Ticks, r.TickMeanMs, met)
	}
	b.WriteString("\nTargets: p99 ≤ 50 ms, no errors, mean tick (sweep and verdict pass, `warp_sweep_duration_seconds`) ≤ 100 ms. " +
		"Latency counts from each request's scheduled time; the load generator runs in the same process as warp.\n")
	for _, r := range rs {
		if r.FirstError != "" {
			fmt.Fprintf(&b, "\n%s, first error: %s\n", r.Target, r.FirstError)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
