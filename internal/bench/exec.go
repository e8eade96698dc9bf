package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/setup"
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
	// What start-work leaves: .gyrum/ with a lease (the hook looks for it),
	// recorded as prepared in GYRUM_HOME (the hook writes only there).
	d, err := gyrumdir.Create(wt)
	if err == nil {
		err = d.WriteLease(gyrumdir.Lease{Ticket: "B-1", Epoch: 1, WarpURL: "http://127.0.0.1:1", Agent: "bench", Host: "bench", ClaimedAt: time.Now()})
	}
	if err == nil {
		err = gyrumdir.NewPrepared(filepath.Join(root, "home")).Add(d.Worktree)
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
	mkTouch := func() *exec.Cmd { return exec.Command(touch, d.File(gyrumdir.ActivityFile)) }
	tch, err := execN(ctx, cfg.Execs, "touch", mkTouch)
	if err != nil {
		return nil, err
	}
	out := []ExecResult{hook, tch}
	// gyrum-hook, the hook alone (what gyrum setup installs when it sits
	// beside gyrum), timed against touch interleaved: A B A B.
	small := filepath.Join(filepath.Dir(cfg.Gyrum), "gyrum-hook")
	if _, err := os.Stat(small); err == nil {
		pair, err := execPairs(ctx, cfg.Execs, "gyrum-hook (PostToolUse on stdin), interleaved with touch", func() *exec.Cmd {
			c := exec.Command(small)
			c.Dir, c.Stdin, c.Env = wt, bytes.NewReader(payload), append(os.Environ(), "GYRUM_HOME="+filepath.Join(root, "home"))
			return c
		}, "touch, interleaved with gyrum-hook", mkTouch)
		if err != nil {
			return nil, err
		}
		out = append(out, pair...)
	}
	// As Claude Code runs a hook: `/bin/sh -c CMD`, the payload on stdin,
	// CLAUDE_PID naming the agent (here this process, the hook's
	// grandparent as claude is its parent), CMD the command gyrum setup
	// writes into settings.json; touch run the same way, the same payload on
	// its stdin. The sh is in both, as it is in every hook the agent runs.
	hookCmd := setup.HookCommand(cfg.Gyrum)
	shEnv := append(os.Environ(), "GYRUM_HOME="+filepath.Join(root, "home"), fmt.Sprintf("CLAUDE_PID=%d", os.Getpid()),
		"CLAUDE_PROJECT_DIR="+wt, "CLAUDECODE=1")
	viaSh := func(cmd string) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command("/bin/sh", "-c", cmd)
			c.Dir, c.Stdin, c.Env = wt, bytes.NewReader(payload), shEnv
			return c
		}
	}
	// The hook run this way must record activity, or the pair times nothing.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(d.File(gyrumdir.ActivityFile), old, old); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if _, err := execN(ctx, 1, "sh -c hook", viaSh(hookCmd)); err != nil {
		return nil, err
	}
	if at, err := d.LastActivity(); err != nil || !at.After(old.Add(time.Minute)) {
		return nil, fmt.Errorf("bench: sh -c %s did not touch the activity file (last activity %v, %v)", hookCmd, at, err)
	}
	argv := setup.HookArgv(cfg.Gyrum)
	label := strings.Join(append([]string{filepath.Base(argv[0])}, argv[1:]...), " ")
	pair, err := execPairs(ctx, cfg.Execs, "sh -c '"+label+"' (as Claude Code runs the hook), interleaved with touch", viaSh(hookCmd),
		"sh -c 'touch activity', interleaved with the hook", viaSh("touch "+d.File(gyrumdir.ActivityFile)))
	if err != nil {
		return nil, err
	}
	return append(out, pair...), nil
}

// HookRatio is the hook's median wall time over touch's, both exec'd the
// way Claude Code runs a hook (the last pair benchExec measures); 0 when
// that pair was not measured.
func HookRatio(rs []ExecResult) float64 {
	for i := range rs {
		if strings.Contains(rs[i].Command, "as Claude Code runs the hook") && i+1 < len(rs) && rs[i+1].P50Ms > 0 {
			return rs[i].P50Ms / rs[i+1].P50Ms
		}
	}
	return 0
}

// execPairs exec's a and b in turn, n times each (A B A B ...), so a
// machine whose speed drifts weighs on both alike.
func execPairs(ctx context.Context, n int, nameA string, a func() *exec.Cmd, nameB string, b func() *exec.Cmd) ([]ExecResult, error) {
	var ra, rb []ExecResult
	for range n {
		x, err := execN(ctx, 1, nameA, a)
		if err != nil {
			return nil, err
		}
		y, err := execN(ctx, 1, nameB, b)
		if err != nil {
			return nil, err
		}
		ra, rb = append(ra, x), append(rb, y)
	}
	return []ExecResult{merge(nameA, ra), merge(nameB, rb)}, nil
}

// merge folds single-exec results into one.
func merge(name string, rs []ExecResult) ExecResult {
	walls := make([]time.Duration, len(rs))
	var sum, cpu float64
	for i, r := range rs {
		walls[i] = time.Duration(r.MeanMs * float64(time.Millisecond))
		sum += r.MeanMs
		cpu += r.CPUMs
	}
	slices.Sort(walls)
	n := float64(len(rs))
	return ExecResult{Command: name, N: len(rs), MeanMs: sum / n, P50Ms: ms(percentile(walls, 0.5)),
		P99Ms: ms(percentile(walls, 0.99)), CPUMs: cpu / n}
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
