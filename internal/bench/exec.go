package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// ExecResult is the cost of exec'ing one command N times, one after the other.
type ExecResult struct {
	Command string  `json:"command"`
	N       int     `json:"n"`
	MeanMs  float64 `json:"mean_ms"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	// CPUMs is the mean user+system CPU of one exec (its rusage). The
	// rusage's max RSS is not reported: with vfork it counts the parent's.
	CPUMs float64 `json:"cpu_ms"`
}

// benchExec exec's `gyrum touch-activity` with a PostToolUse payload on
// stdin in a worktree with a .gyrum/ directory, and `touch` on the same
// activity file, Execs times each.
func benchExec(ctx context.Context, cfg Config, root string) ([]ExecResult, error) {
	wt := filepath.Join(root, "hook")
	if err := mkdir(wt); err != nil {
		return nil, err
	}
	// What start-work leaves: .gyrum/ with a lease (the hook looks for it).
	d, err := gyrumdir.Create(wt)
	if err == nil {
		err = d.WriteLease(gyrumdir.Lease{Ticket: "B-1", Epoch: 1, WarpURL: "http://127.0.0.1:1", Agent: "bench", Host: "bench", ClaimedAt: time.Now()})
	}
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	payload := fmt.Appendf(nil, `{"session_id":"bench","transcript_path":"%s/t.jsonl","cwd":"%s","hook_event_name":"PostToolUse",`+
		`"tool_name":"Bash","tool_input":{"command":"true"},"tool_use_id":"toolu_bench","tool_response":{"stdout":""}}`, wt, wt)
	touch, err := exec.LookPath("touch")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	hook, err := execN(ctx, cfg.Execs, "gyrum touch-activity (PostToolUse on stdin)", func() *exec.Cmd {
		c := exec.Command(cfg.Gyrum, "touch-activity")
		c.Dir, c.Stdin, c.Env = wt, bytes.NewReader(payload), append(os.Environ(), "GYRUM_HOME="+filepath.Join(root, "home"))
		return c
	})
	if err != nil {
		return nil, err
	}
	if _, err := d.LastActivity(); err != nil {
		return nil, fmt.Errorf("bench: touch-activity did not touch the activity file: %w", err)
	}
	tch, err := execN(ctx, cfg.Execs, "touch", func() *exec.Cmd {
		return exec.Command(touch, d.File(gyrumdir.ActivityFile))
	})
	if err != nil {
		return nil, err
	}
	return []ExecResult{hook, tch}, nil
}

func execN(ctx context.Context, n int, name string, mk func() *exec.Cmd) (ExecResult, error) {
	var walls []time.Duration
	var cpu time.Duration
	for range n {
		if err := ctx.Err(); err != nil {
			return ExecResult{}, err
		}
		c := mk()
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		start := time.Now()
		err := c.Run()
		walls = append(walls, time.Since(start))
		if err != nil || out.Len() > 0 {
			return ExecResult{}, fmt.Errorf("bench: %s: err=%v output=%q", name, err, out.String())
		}
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	var sum time.Duration
	for _, w := range walls {
		sum += w
	}
	slices.Sort(walls)
	return ExecResult{Command: name, N: n, MeanMs: ms(sum / time.Duration(n)), P50Ms: ms(percentile(walls, 0.5)),
		P99Ms: ms(percentile(walls, 0.99)), CPUMs: ms(cpu / time.Duration(n))}, nil
}
