// Package bench measures warp and gyrum on this machine in one run, behind
// `go run ./cmd/warpbench`:
//
//   - heartbeat ingest: warp as `warp serve` composes it (warpcli.Main) on
//     a SQLite file (and, when asked, PostgreSQL) against the same Go load
//     generator hitting a no-op handler, with latency percentiles, CPU per
//     request and the ratio of the two;
//   - one expiry sweep over 10k (and, when asked, 1M) active leases;
//   - `gyrum touch-activity` (the agent hook) against `touch`, each exec'd N
//     times;
//   - the heartbeat loop's RSS and CPU per tick against the pre-ADR bash loop
//     (`while sleep; do curl ...; done`).
//
// Everything runs on 127.0.0.1 and is bounded in count and time; every
// process it starts is stopped by identity and every file removed.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"
)

// Config configures a run. Zero fields take the defaults.
type Config struct {
	// Gyrum is the gyrum binary (touch-activity and the loop). Required.
	Gyrum string
	// Ingest: requests per target, concurrent clients, time cap per target,
	// and held leases the heartbeats spread over.
	Requests     int
	Concurrency  int
	MaxDuration  time.Duration
	IngestLeases int
	// IngestHosts are the host counts warp's ingest is measured at (the
	// leases spread over them); DefaultIngestHosts when empty.
	IngestHosts []int
	// IngestPairs is how many times each warp target is measured, each
	// time right after the no-op handler; its figures are those of the
	// pair with the median ratio (DefaultIngestPairs when 0).
	IngestPairs int
	// PostgresURL, when set, adds warp on PostgreSQL (one server, 50
	// hosts, a schema of its own dropped after) to the ingest targets.
	PostgresURL string
	// Sweep sizes (active leases); DefaultSweepSizes when empty. Due is the
	// number of leases each measured sweep lapses; Sweeps the sweeps per size.
	SweepSizes []int
	Due        int
	Sweeps     int
	// Under load, per sweep size: heartbeats per second (0: skip the
	// phase), for how long, and how often a tick runs meanwhile.
	LoadRate      float64
	LoadDuration  time.Duration
	LoadTickEvery time.Duration
	// Execs is how many times touch-activity and touch are each exec'd.
	Execs int
	// Ticks is how many heartbeats each loop sends while measured, and
	// TickInterval the interval both loops run at.
	Ticks        int
	TickInterval time.Duration
	// TempDir holds the run's files; os.TempDir when empty.
	TempDir string
	// Logger receives progress; discarded when nil.
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultRequests     = 20000
	DefaultConcurrency  = 32
	DefaultMaxDuration  = 30 * time.Second
	DefaultIngestLeases = 1000
	// DefaultIngestPairs: the no-op handler's own rate moved by a third
	// between runs minutes apart on the shared CI host, so one pair's
	// ratio carried ±15 %.
	DefaultIngestPairs = 3
	DefaultDue         = 1000
	DefaultSweeps      = 5
	DefaultExecs       = 300
	// DefaultLoadRate is 1M held leases heartbeating every 240 s, the
	// default interval.
	DefaultLoadRate      = 1_000_000.0 / 240
	DefaultLoadDuration  = 10 * time.Second
	DefaultLoadTickEvery = time.Second
	DefaultTicks         = 20
	DefaultTickInterval  = 500 * time.Millisecond
)

// DefaultIngestHosts is the ingest's host count without --large;
// LargeIngestHosts the axis with it.
var (
	DefaultIngestHosts = []int{50}
	LargeIngestHosts   = []int{1, 50, 1000}
)

// DefaultSweepSizes are the sweep sizes without --large; LargeSweepSize is
// added with it.
var DefaultSweepSizes = []int{10_000}

// LargeSweepSize is the 1M case (minutes to load).
const LargeSweepSize = 1_000_000

func (c *Config) defaults() error {
	if c.Gyrum == "" {
		return fmt.Errorf("bench: the gyrum binary is required (build it with 'go build -o bin/ ./cmd/...')")
	}
	if c.Requests <= 0 {
		c.Requests = DefaultRequests
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = DefaultMaxDuration
	}
	if c.IngestLeases <= 0 {
		c.IngestLeases = DefaultIngestLeases
	}
	if c.IngestPairs <= 0 {
		c.IngestPairs = DefaultIngestPairs
	}
	if len(c.IngestHosts) == 0 {
		c.IngestHosts = DefaultIngestHosts
	}
	for _, h := range c.IngestHosts {
		if h <= 0 || h > c.IngestLeases {
			return fmt.Errorf("bench: %d ingest hosts: want 1..%d (the ingest leases)", h, c.IngestLeases)
		}
	}
	if len(c.SweepSizes) == 0 {
		c.SweepSizes = DefaultSweepSizes
	}
	if c.Due <= 0 {
		c.Due = DefaultDue
	}
	if c.Sweeps <= 0 {
		c.Sweeps = DefaultSweeps
	}
	for _, n := range c.SweepSizes {
		if n < c.Due*(c.Sweeps+1) {
			return fmt.Errorf("bench: sweep size %d is too small for %d sweeps of %d due leases", n, c.Sweeps, c.Due)
		}
	}
	if c.LoadRate < 0 {
		return fmt.Errorf("bench: load rate %v is negative", c.LoadRate)
	}
	if c.LoadDuration <= 0 {
		c.LoadDuration = DefaultLoadDuration
	}
	if c.LoadTickEvery <= 0 {
		c.LoadTickEvery = DefaultLoadTickEvery
	}
	if c.Execs <= 0 {
		c.Execs = DefaultExecs
	}
	if c.Ticks <= 0 {
		c.Ticks = DefaultTicks
	}
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Results are the figures of one run.
type Results struct {
	Machine Machine        `json:"machine"`
	Ingest  []IngestResult `json:"ingest"`
	// IngestRatio is warp's throughput on SQLite (at 50 hosts, else the
	// first host count) divided by the no-op handler's measured right
	// before it (IngestResult.Anchor), the median of Config.IngestPairs
	// pairs; PostgresRatio the same on PostgreSQL (0 when not measured).
	IngestRatio   float64       `json:"ingest_ratio"`
	PostgresRatio float64       `json:"postgres_ratio,omitempty"`
	Sweep         []SweepResult `json:"sweep"`
	Exec          []ExecResult  `json:"exec"`
	// HookRatio is the hook's p50 over the touch-activity.sh script's,
	// both run as Claude Code runs a hook (HookRatio of Exec; target < 1).
	HookRatio float64 `json:"hook_ratio"`
	// HookVsMinimalGo is gyrum-hook's p50 over a minimal static Go
	// binary's, both exec'd directly (HookVsMinimalGo of Exec; target
	// <= 1.1); 0 when no Go toolchain was found to build that binary.
	HookVsMinimalGo float64      `json:"hook_vs_minimal_go"`
	Loop            []LoopResult `json:"loop"`
}

// Machine describes where the figures come from.
type Machine struct {
	GOOS      string    `json:"goos"`
	GOARCH    string    `json:"goarch"`
	CPUs      int       `json:"cpus"`
	GoVersion string    `json:"go_version"`
	Hostname  string    `json:"hostname"`
	At        time.Time `json:"at"`
}

// Run runs every measurement in turn.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(cfg.TempDir, "warp-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	host, _ := os.Hostname()
	res := &Results{Machine: Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GoVersion: runtime.Version(), Hostname: host, At: time.Now().UTC().Truncate(time.Second)}}

	cfg.Logger.Info("heartbeat ingest", "requests", cfg.Requests, "concurrency", cfg.Concurrency)
	if res.Ingest, err = benchIngest(ctx, cfg, root); err != nil {
		return nil, err
	}
	if k := len(res.Ingest); k >= 2 {
		w := res.Ingest[0]
		for _, x := range res.Ingest[:k-1] {
			if x.Postgres {
				res.PostgresRatio = x.Ratio()
			} else if x.Hosts == 50 {
				w = x
			}
		}
		res.IngestRatio = w.Ratio()
	}
	for _, n := range cfg.SweepSizes {
		cfg.Logger.Info("sweep", "active_leases", n, "due", cfg.Due)
		s, err := benchSweep(ctx, cfg, root, n)
		if err != nil {
			return nil, err
		}
		res.Sweep = append(res.Sweep, s)
	}
	cfg.Logger.Info("hook exec", "execs", cfg.Execs)
	if res.Exec, err = benchExec(ctx, cfg, root); err != nil {
		return nil, err
	}
	res.HookRatio, res.HookVsMinimalGo = HookRatio(res.Exec), HookVsMinimalGo(res.Exec)
	cfg.Logger.Info("loop cost", "ticks", cfg.Ticks, "interval", cfg.TickInterval)
	if res.Loop, err = benchLoops(ctx, cfg, root); err != nil {
		return nil, err
	}
	return res, nil
}
