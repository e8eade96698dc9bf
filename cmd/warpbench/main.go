// Command warpbench measures warp and gyrum on this machine and prints
// markdown tables (see internal/tools/bench):
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... && bin/warpbench [--large] [--json]
//
// (static, as a release builds them: the loop's memory is measured as shipped)
//
// --large adds the sweep over 1M active leases (minutes to load).
// --fleet runs only the fleet figure: 100k held leases taking 4,200
// heartbeats a second open loop for 20 s while the expiry job ticks, on
// SQLite and, with --postgres, on PostgreSQL with one warp and with two
// replicas.
// --reclaim N runs only the reclaim figure: N agents killed, each time
// until its ticket is open again (warp --release-on-exit, default tick).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gyrum-labs/warp/internal/tools/bench"
	"github.com/gyrum-labs/warp/internal/tools/sim"
)

// options are warpbench's flags.
type options struct {
	cfg                  bench.Config
	fc                   bench.FleetConfig
	gyrum                string
	large, asJSON, fleet bool
	reclaim              int
}

func main() {
	o := parseFlags()
	if o.fleet {
		o.fc.PostgresURL = o.cfg.PostgresURL
		os.Exit(runFleet(o.fc, o.asJSON))
	}
	if o.gyrum == "" {
		if _, err := os.Stat("bin/gyrum"); err == nil {
			o.gyrum = "bin/gyrum"
		}
	}
	g, err := sim.FindGyrum(o.gyrum)
	if err != nil {
		fmt.Fprintln(os.Stderr, "warpbench:", err)
		os.Exit(2)
	}
	o.cfg.Gyrum = g
	if o.reclaim > 0 {
		os.Exit(runReclaim(g, o.reclaim, o.asJSON))
	}
	os.Exit(runBench(o))
}

// parseFlags reads warpbench's flags.
func parseFlags() options {
	var o options
	cfg, fc := &o.cfg, &o.fc
	flag.StringVar(&o.gyrum, "gyrum", "", "the gyrum binary (default: bin/gyrum, next to this executable, or PATH)")
	flag.BoolVar(&o.large, "large", false, "also sweep over 100k and 1M active leases (minutes to load), and ingest at 1, 50 and 1000 hosts")
	flag.BoolVar(&o.asJSON, "json", false, "print JSON instead of markdown")
	flag.BoolVar(&o.fleet, "fleet", false, "run only the fleet figure (100k held leases, 4,200 heartbeats/s open loop for 20 s)")
	flag.IntVar(&cfg.Requests, "requests", bench.DefaultRequests, "heartbeats per ingest target")
	flag.IntVar(&cfg.IngestPairs, "ingest-pairs", bench.DefaultIngestPairs, "times each warp ingest target runs, each right after the no-op handler (the median pair is reported)")
	flag.IntVar(&cfg.Concurrency, "concurrency", bench.DefaultConcurrency, "concurrent load-generator clients")
	flag.DurationVar(&cfg.MaxDuration, "max-duration", bench.DefaultMaxDuration, "time cap per ingest target")
	flag.StringVar(&cfg.PostgresURL, "postgres", "", "also measure ingest on PostgreSQL at this URL (a schema of its own, dropped after)")
	flag.Float64Var(&cfg.LoadRate, "load-rate", bench.DefaultLoadRate, "heartbeats per second while ticks are timed under load, per sweep size (0: skip)")
	flag.DurationVar(&cfg.LoadDuration, "load-duration", bench.DefaultLoadDuration, "how long each under-load phase lasts")
	flag.IntVar(&cfg.Execs, "execs", bench.DefaultExecs, "execs of touch-activity and of touch")
	flag.IntVar(&cfg.Ticks, "ticks", bench.DefaultTicks, "heartbeats measured per loop")
	flag.DurationVar(&cfg.TickInterval, "tick-interval", bench.DefaultTickInterval, "interval of both loops while measured")
	flag.IntVar(&fc.Leases, "fleet-leases", bench.DefaultFleetLeases, "held leases of the fleet figure")
	flag.Float64Var(&fc.Rate, "fleet-rate", bench.DefaultFleetRate, "heartbeats per second of the fleet figure")
	flag.DurationVar(&fc.Duration, "fleet-duration", bench.DefaultFleetDuration, "how long the fleet figure's load lasts")
	flag.IntVar(&o.reclaim, "reclaim", 0, "run only the reclaim figure: kill this many agents, each until its ticket is open again")
	flag.Parse()
	return o
}

// runBench runs and prints the benchmarks of o.cfg, and returns the exit
// code.
func runBench(o options) int {
	cfg := o.cfg
	if o.large {
		cfg.SweepSizes = append(append([]int{}, bench.DefaultSweepSizes...), 100_000, bench.LargeSweepSize)
		cfg.IngestHosts = bench.LargeIngestHosts
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "warpbench:", err)
		return 1
	}
	if o.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		// The command as it was run (go run names its build warpbench too).
		err = res.WriteMarkdown(os.Stdout, strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " "))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "warpbench:", err)
		return 1
	}
	return 0
}

// runFleet runs and prints the fleet figure, and returns the exit code.
func runFleet(fc bench.FleetConfig, asJSON bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fc.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	rs, err := bench.RunFleet(ctx, fc)
	if err == nil {
		if asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(rs)
		} else {
			err = bench.WriteFleetMarkdown(os.Stdout, rs, strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " "))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "warpbench:", err)
		return 1
	}
	return 0
}

// runReclaim runs and prints the reclaim figure, and returns the exit code.
func runReclaim(gyrum string, kills int, asJSON bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := bench.RunReclaim(ctx, gyrum, kills)
	if err == nil {
		if asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(r)
		} else {
			_, err = fmt.Printf("agent killed → ticket open again (warp --release-on-exit, loop tick %s), %d kills: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
				r.Interval, r.Kills, r.P50Ms, r.P99Ms, r.MaxMs)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "warpbench:", err)
		return 1
	}
	return 0
}
