package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/bench"
)

var gyrum string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "bench-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		mod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "go env GOMOD:", err)
			return 1
		}
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/gyrum")
		build.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build gyrum: %v\n%s", err, out)
			return 1
		}
		gyrum = filepath.Join(dir, "gyrum")
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
	res, err := bench.Run(ctx, bench.Config{Gyrum: gyrum, Requests: 200, Concurrency: 4, IngestLeases: 20,
		SweepSizes: []int{2000}, Due: 100, Sweeps: 3, Execs: 5, Ticks: 10, TickInterval: 20 * time.Millisecond, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ingest) != 2 || res.IngestRatio <= 0 {
		t.Fatalf("ingest: got %+v ratio %v, want warp and the no-op handler", res.Ingest, res.IngestRatio)
	}
	for _, in := range res.Ingest {
		if in.Requests != 200 || in.Errors != 0 || in.PerSecond <= 0 || in.P50Ms > in.P90Ms || in.P90Ms > in.P99Ms {
			t.Errorf("ingest %s: got %+v, want 200 requests, no error, ordered percentiles", in.Target, in)
		}
	}
	if len(res.Sweep) != 1 || res.Sweep[0].Active != 2000 || res.Sweep[0].Sweeps != 3 || res.Sweep[0].P50Ms > res.Sweep[0].MaxMs {
		t.Errorf("sweep: got %+v", res.Sweep)
	}
	if len(res.Exec) != 2 || res.Exec[0].N != 5 || res.Exec[1].N != 5 {
		t.Errorf("exec: got %+v", res.Exec)
	}
	if len(res.Loop) != 2 {
		t.Fatalf("loops: got %+v", res.Loop)
	}
	for _, l := range res.Loop {
		if l.Ticks < 10 || l.RSSKiB <= 0 || l.CPUPerTickMs < 0 {
			t.Errorf("loop %s: got %+v, want 10 ticks or more and an RSS", l.Loop, l)
		}
	}
	if res.Loop[1].CurlRSSKiB <= 0 {
		t.Errorf("bash loop: no curl RSS")
	}
	var md bytes.Buffer
	if err := res.WriteMarkdown(&md, "go run ./cmd/warpbench"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Heartbeat ingest", "no-op Go handler", "### Expiry sweep", "| 2000 |", "gyrum touch-activity", "| touch |", "bash: while sleep"} {
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
