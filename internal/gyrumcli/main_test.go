package gyrumcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/watchdog"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	bin, remove, err := warptest.BuildGyrum()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gyrumBin = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

// env is one test's world: a real warp on 127.0.0.1:0, a GYRUM_HOME, the
// scaled-time settings, and helpers to run gyrum as a process or in-process.
type env struct {
	t    *testing.T
	ws   *warpServer
	home string
	vars map[string]string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ws: newWarp(t), home: t.TempDir()}
	e.vars = map[string]string{
		"WARP_URL":                          e.ws.URL(),
		"GYRUM_HOME":                        e.home,
		"HEARTBEAT_INTERVAL_SECS":           "0.2",
		"HEARTBEAT_ACTIVITY_STALENESS_SECS": "30",
		"HEARTBEAT_INFLIGHT_MAX_SECS":       "60",
		"CLAUDE_PID":                        "",
		"OPENCODE_PID":                      "",
		"KILO_PID":                          "",
		"GYRUM_AGENT_PROCESS":               "",
		"GYRUM_AGENT":                       "",
		"GYRUM_WORKTREE_ROOT":               "",
	}
	t.Cleanup(e.reapLoops)
	return e
}

// reapLoops kills every loop still registered (by identity), so no test
// leaves one behind even when it fails half-way.
func (e *env) reapLoops() {
	entries, _, _ := gyrumdir.NewRegistry(e.home).List()
	for _, en := range entries {
		if id := en.Identity(); id.Alive() {
			proc.Stop(context.Background(), id, time.Second)
		}
	}
	// A loop whose agent the test's cleanup just killed has left the
	// registry but may still be writing its last state into the worktree,
	// which t.TempDir is about to remove: wait for every process that runs
	// with this env's GYRUM_HOME.
	pids, _ := proc.List()
	mine := "GYRUM_HOME=" + e.home
	for _, pid := range pids {
		if vars, err := proc.Environ(pid); err == nil && slices.Contains(vars, mine) {
			if id, err := proc.Lookup(pid); err == nil {
				proc.Stop(context.Background(), id, time.Second)
			}
		}
	}
}

// prepared records d as a worktree start-work prepared in the env's
// GYRUM_HOME: the hook writes only into those.
func (e *env) prepared(d gyrumdir.Dir) {
	e.t.Helper()
	if err := gyrumdir.NewPrepared(e.home).Add(d.Worktree); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := e.vars[k]; !ours {
			out = append(out, kv)
		}
	}
	for k, v := range e.vars {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func (e *env) getenv(k string) string {
	if v, ok := e.vars[k]; ok {
		return v
	}
	return os.Getenv(k)
}

type result struct {
	stdout, stderr string
	code           int
}

// gyrum runs the gyrum binary as a process in dir with stdin and waits.
// Output() semantics: it returns only once every holder of the pipes has
// closed them, so a detached loop that kept them would hang it (10 s limit).
func (e *env) gyrum(dir, stdin string, args ...string) result {
	e.t.Helper()
	return e.binary(gyrumBin, dir, stdin, args...)
}

// binary runs bin (gyrum, or gyrum-hook beside it) in dir with the env's
// variables and stdin.
func (e *env) binary(bin, dir, stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = e.environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		e.t.Fatalf("gyrum %v did not finish: %v\nstderr: %s", args, err, errb.String())
	}
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState == nil {
		e.t.Fatalf("gyrum %v: %v", args, err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// inproc runs the command tree in this process, with the binary as the
// loop to spawn.
func (e *env) inproc(dir string, args ...string) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	app := &gyrumcli.App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: e.getenv,
		Executable: gyrumBin, Getwd: func() (string, error) { return dir, nil }}
	code := app.Run(context.Background(), args)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// startResult decodes start-work --json.
func (e *env) startResult(r result) gyrumcli.StartResult {
	e.t.Helper()
	if r.code != 0 {
		e.t.Fatalf("start-work exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var sr gyrumcli.StartResult
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil {
		e.t.Fatalf("start-work --json printed %q: %v", r.stdout, err)
	}
	return sr
}

// loopsRunning returns the live loops of the registry.
func (e *env) loopsRunning() []gyrumdir.Entry {
	entries, _, _ := gyrumdir.NewRegistry(e.home).List()
	var live []gyrumdir.Entry
	for _, en := range entries {
		if en.Identity().Alive() {
			live = append(live, en)
		}
	}
	return live
}

// heartbeatProcesses returns the pids of processes running a heartbeat
// loop of dir (`gyrum heartbeat run --dir dir`), registered or not.
func heartbeatProcesses(dir string) []int {
	pids, _ := proc.List()
	var out []int
	for _, pid := range pids {
		args, err := proc.Cmdline(pid)
		if err != nil {
			continue
		}
		if _, err := proc.Lookup(pid); err != nil {
			continue // zombie
		}
		if d, ok := watchdog.LoopDir(args); ok && filepath.Clean(d) == filepath.Clean(dir) {
			out = append(out, pid)
		}
	}
	return out
}

// agent starts a real process standing in for the agent; it is killed and
// reaped at the end of the test.
func agent(t *testing.T, name string, args ...string) (*exec.Cmd, proc.Identity) {
	return warptest.StartProcess(t, name, args...)
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	warptest.WaitFor(t, what, cond)
}

func mkdir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "wt")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}
