package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	// Every run is another call, with its own id, as an agent sends them
	// (the hook credits a repeated event of one call once, cheaply).
	calls := 0
	payload := func() []byte {
		calls++
		// Each call its own command and output, as an agent that works
		// makes them: the same call again and again is a loop, and the
		// hook would tell it so.
		return fmt.Appendf(nil, `{"session_id":"bench","transcript_path":"%s/t.jsonl","cwd":"%s","hook_event_name":"PostToolUse",`+
			`"tool_name":"Bash","tool_input":{"command":"echo %d"},"tool_use_id":"toolu_bench_%d","tool_response":{"stdout":"%d\\n"}}`, wt, wt, calls, calls, calls)
	}
	touch, err := exec.LookPath("touch")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	hook, err := execN(ctx, cfg.Execs, "gyrum touch-activity (PostToolUse on stdin)", func() *exec.Cmd {
		c := exec.Command(cfg.Gyrum, "touch-activity")
		c.Dir, c.Stdin, c.Env = wt, bytes.NewReader(payload()), append(os.Environ(), "GYRUM_HOME="+filepath.Join(root, "home"))
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
	// beside gyrum), against the least a Go hook can be: a static binary
	// whose main touches the activity file. Both exec'd directly, A B A B.
	small := filepath.Join(filepath.Dir(cfg.Gyrum), "gyrum-hook")
	minimal, merr := buildMinimalHook(ctx, root)
	if _, err := os.Stat(small); err == nil && merr == nil {
		pair, err := execPairs(ctx, cfg.Execs, hookDirect, func() *exec.Cmd {
			c := exec.Command(small)
			c.Dir, c.Stdin, c.Env = wt, bytes.NewReader(payload()), append(os.Environ(), "GYRUM_HOME="+filepath.Join(root, "home"))
			return c
		}, minimalGo, func() *exec.Cmd { return exec.Command(minimal, d.File(gyrumdir.ActivityFile)) })
		if err != nil {
			return nil, err
		}
		out = append(out, pair...)
	} else if merr != nil {
		cfg.Logger.Warn("the hook is not timed against a minimal Go binary", "err", merr)
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
			c.Dir, c.Stdin, c.Env = wt, bytes.NewReader(payload()), shEnv
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
	// Against what it replaces: the decision record's touch-activity.sh, a
	// shell script that touches the activity file, run the same way.
	script := filepath.Join(root, "touch-activity.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+shellquoteArg(d.File(gyrumdir.ActivityFile))+"\n"), 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	argv := setup.HookArgv(cfg.Gyrum)
	label := strings.Join(append([]string{filepath.Base(argv[0])}, argv[1:]...), " ")
	pair, err := execPairs(ctx, cfg.Execs, "sh -c '"+label+"' (as Claude Code runs the hook), interleaved with the script", viaSh(hookCmd),
		shScript, viaSh(script))
	if err != nil {
		return nil, err
	}
	return append(out, pair...), nil
}

// Names of the compared commands (HookRatio and HookVsMinimalGo find
// their pairs by them).
const (
	hookDirect = "gyrum-hook exec'd directly (PostToolUse on stdin), interleaved with the minimal Go binary"
	minimalGo  = "a minimal static Go binary touching the activity file, exec'd directly"
	shScript   = "sh -c touch-activity.sh (a shell script touching the activity file), interleaved with the hook"
)

// buildMinimalHook builds, into root, the least a hook written in Go can
// be: a static binary (as releases build gyrum-hook: CGO_ENABLED=0,
// -trimpath) whose main sets the mtime of the file it is given.
func buildMinimalHook(ctx context.Context, root string) (string, error) {
	dir := filepath.Join(root, "minimal-hook")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := "package main\n\nimport (\n\t\"os\"\n\t\"time\"\n)\n\nfunc main() {\n\tnow := time.Now()\n\tif os.Chtimes(os.Args[1], now, now) != nil {\n\t\tos.Exit(1)\n\t}\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module minimalhook\n\ngo 1.21\n"), 0o644); err != nil {
		return "", err
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return "", fmt.Errorf("no Go toolchain to build the minimal hook: %w", err)
		}
	}
	bin := filepath.Join(dir, "minimal-hook")
	build := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the minimal hook: %v: %s", err, out)
	}
	return bin, nil
}

// shellquoteArg quotes s as one sh word.
func shellquoteArg(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// HookRatio is the hook's median wall time over the shell script's it
// replaces (touch-activity.sh), both run the way Claude Code runs a hook,
// through /bin/sh -c; 0 when that pair was not measured. Target: below 1.
func HookRatio(rs []ExecResult) float64 { return pairRatio(rs, shScript) }

// HookVsMinimalGo is gyrum-hook's median wall time over a minimal static
// Go binary's that touches one file, both exec'd directly; 0 when that
// pair was not measured. Target: at most 1.1.
func HookVsMinimalGo(rs []ExecResult) float64 { return pairRatio(rs, minimalGo) }

// pairRatio is the p50 of the result before the one named second over its
// own.
func pairRatio(rs []ExecResult, second string) float64 {
	for i := 1; i < len(rs); i++ {
		if rs[i].Command == second && rs[i].P50Ms > 0 {
			return rs[i-1].P50Ms / rs[i].P50Ms
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
