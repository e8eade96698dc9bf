package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/tools/bench"
)

var gyrum string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		// gyrum with gyrum-hook beside it, as a release.
		path, remove, err := warptest.BuildGyrum()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer remove()
		gyrum = path
		return m.Run()
	}())
}

// A tiny run of every measurement: the figures must be consistent (no
// errors, ordered percentiles, the counts asked for). Speed itself is not
// asserted: it is what the tool reports.
func TestRunSmall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the loop measurement reads /proc: Linux only")
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, bench.Config{Gyrum: gyrum, Requests: 200, Concurrency: 4, IngestLeases: 20, IngestHosts: []int{1, 20},
		SweepSizes: []int{2000}, Due: 100, Sweeps: 3, LoadRate: 200, LoadDuration: time.Second, LoadTickEvery: 200 * time.Millisecond, Execs: 5, Ticks: 10, TickInterval: 20 * time.Millisecond, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ingest) != 3 || res.Ingest[0].Hosts != 1 || res.Ingest[1].Hosts != 20 || res.IngestRatio <= 0 {
		t.Fatalf("ingest: got %+v ratio %v, want warp at 1 and 20 hosts and the no-op handler", res.Ingest, res.IngestRatio)
	}
	// Each warp figure has the no-op run right before it as its anchor,
	// and the headline ratio is the first target's (no 50-host run here).
	if res.Ingest[0].Anchor <= 0 || res.Ingest[1].Anchor <= 0 || res.Ingest[2].Anchor != 0 || res.IngestRatio != res.Ingest[0].Ratio() {
		t.Fatalf("ingest anchors: %+v, ratio %v", res.Ingest, res.IngestRatio)
	}
	for _, in := range res.Ingest {
		if in.Requests != 200 || in.Errors != 0 || in.PerSecond <= 0 || in.P50Ms > in.P90Ms || in.P90Ms > in.P99Ms || in.CPUPerRequestUs <= 0 {
			t.Errorf("ingest %s: got %+v, want 200 requests, no error, ordered percentiles, CPU time spent", in.Target, in)
		}
	}
	// A warp target carries the CPU per request of its own anchor run.
	for _, in := range res.Ingest[:2] {
		if in.AnchorCPUPerRequestUs <= 0 || in.CPURatio() != in.AnchorCPUPerRequestUs/in.CPUPerRequestUs {
			t.Errorf("ingest %s: anchor CPU %v µs, CPU %v µs, ratio %v", in.Target, in.AnchorCPUPerRequestUs, in.CPUPerRequestUs, in.CPURatio())
		}
	}
	// Each warp target is the median of DefaultIngestPairs no-op/warp
	// pairs, its ratio within their spread.
	for _, in := range res.Ingest[:2] {
		if in.Pairs != bench.DefaultIngestPairs || in.RatioMin <= 0 || in.RatioMin > in.Ratio() || in.Ratio() > in.RatioMax {
			t.Errorf("ingest %s: %d pairs, ratio %v within %v..%v; want %d pairs and the ratio within", in.Target, in.Pairs, in.Ratio(), in.RatioMin, in.RatioMax, bench.DefaultIngestPairs)
		}
	}
	if len(res.Sweep) != 1 || res.Sweep[0].Active != 2000 || res.Sweep[0].Sweeps != 3 || res.Sweep[0].P50Ms > res.Sweep[0].MaxMs || res.Sweep[0].ScrapeMs <= 0 || res.Sweep[0].HostsMs <= 0 {
		t.Errorf("sweep: got %+v", res.Sweep)
	} else if u := res.Sweep[0].UnderLoad; u == nil || u.Achieved <= 0 || u.Ticks < 2 || u.TickP50Ms > u.TickMaxMs || u.P50Ms > u.P99Ms {
		t.Errorf("under load: got %+v, want heartbeats answered and ticks timed", u)
	}
	// touch-activity and touch, then gyrum-hook (beside gyrum) interleaved
	// with a minimal Go binary, then the hook and touch-activity.sh through
	// sh -c as Claude Code runs a hook.
	if len(res.Exec) != 6 || !strings.HasPrefix(res.Exec[2].Command, "gyrum-hook") || !strings.Contains(res.Exec[3].Command, "minimal static Go") ||
		!strings.Contains(res.Exec[4].Command, "gyrum-hook") || !strings.Contains(res.Exec[5].Command, "touch-activity.sh") {
		t.Errorf("exec: got %+v, want touch-activity, touch, gyrum-hook, minimal Go, sh -c gyrum-hook, sh -c touch-activity.sh", res.Exec)
	} else {
		if r := bench.HookRatio(res.Exec); r <= 0 || r != res.Exec[4].P50Ms/res.Exec[5].P50Ms || r != res.HookRatio {
			t.Errorf("hook ratio %v, want sh -c hook p50 over sh -c script p50", r)
		}
		if r := bench.HookVsMinimalGo(res.Exec); r <= 0 || r != res.Exec[2].P50Ms/res.Exec[3].P50Ms || r != res.HookVsMinimalGo {
			t.Errorf("hook vs minimal Go %v, want gyrum-hook p50 over the minimal binary's", r)
		}
	}
	for _, e := range res.Exec {
		if e.N != 5 {
			t.Errorf("exec %s: %d runs, want 5", e.Command, e.N)
		}
	}
	if len(res.Loop) != 2 || !strings.HasPrefix(res.Loop[0].Loop, "gyrum heartbeat run") || !strings.HasPrefix(res.Loop[1].Loop, "bash") {
		t.Fatalf("loops: got %+v, want gyrum heartbeat run, bash", res.Loop)
	}
	for _, l := range res.Loop {
		if l.Ticks < 10 || l.RSSKiB <= 0 || l.AnonKiB <= 0 || l.AnonKiB > l.RSSKiB || l.CPUPerTickMs < 0 {
			t.Errorf("loop %s: got %+v, want 10 ticks or more and an RSS with its own part", l.Loop, l)
		}
	}
	if res.Loop[1].CurlRSSKiB <= 0 {
		t.Errorf("bash loop: no curl RSS")
	}
	var md bytes.Buffer
	if err := res.WriteMarkdown(&md, "go run ./cmd/warpbench"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Heartbeat ingest", "no-op Go handler", "no-op run right before", "CPU µs/request", "as `warp serve` composes it", "### Expiry sweep", "| 2000 |", "gyrum touch-activity", "| touch |", "bash: while sleep"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the run left %d entries in its temp dir", len(ents))
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	if _, err := bench.Run(ctx, bench.Config{}); err == nil || !strings.Contains(err.Error(), "go build -o bin/ ./cmd/...") {
		t.Errorf("no gyrum: got %v, want an error saying how to build it", err)
	}
	_, err := bench.Run(ctx, bench.Config{Gyrum: gyrum, SweepSizes: []int{500}, Due: 100, Sweeps: 5})
	if err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("sweep size below the sweeps: got %v", err)
	}
}

func TestRunRejectsMoreHostsThanLeases(t *testing.T) {
	_, err := bench.Run(context.Background(), bench.Config{Gyrum: gyrum, IngestLeases: 10, IngestHosts: []int{50}})
	if err == nil || !strings.Contains(err.Error(), "50 ingest hosts: want 1..10") {
		t.Errorf("got %v", err)
	}
}

// The reclaim figure runs end to end: each crashed agent's ticket opens
// again, at the default tick (the figures are ordered; their size is what
// the tool reports).
func TestRunReclaimSmall(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no exit notification here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := bench.RunReclaim(ctx, gyrum, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kills != 3 || r.P50Ms <= 0 || r.P50Ms > r.P99Ms || r.P99Ms > r.MaxMs {
		t.Errorf("got %+v, want 3 kills and ordered figures", r)
	}
}
