package gyrumcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// DefaultStopGrace is how long a loop gets between SIGTERM and SIGKILL.
const DefaultStopGrace = 5 * time.Second

// registerTimeout bounds the wait for a spawned loop to register.
const registerTimeout = 10 * time.Second

// passedEnv returns the variables a spawned loop needs; App.Getenv's values
// win over the process environment, so in-process tests configure the child.
func passedEnv() []string {
	return []string{"WARP_URL", "WARP_TOKEN", "GYRUM_HOME", "HOME", "GYRUM_AGENT", "GYRUM_HOST",
		"HEARTBEAT_INTERVAL_SECS", "HEARTBEAT_ACTIVITY_STALENESS_SECS", "HEARTBEAT_INFLIGHT_MAX_SECS", "HEARTBEAT_HUNG_CALL_SECS"}
}

func (a *App) childEnv() []string {
	env := os.Environ()
	if a.Getenv == nil {
		return env
	}
	for _, k := range passedEnv() {
		v := a.Getenv(k)
		out := env[:0]
		for _, kv := range env {
			if !strings.HasPrefix(kv, k+"=") {
				out = append(out, kv)
			}
		}
		env = out
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// loopEnv is env for a loop: GOMAXPROCS=1 unless it names one. A loop runs
// one goroutine's worth of work; with one P the runtime keeps no idle
// threads spinning for work at each wake-up (measured: 4-8 % less CPU per
// tick, 160-500 KiB less RSS). Set at exec because the
// runtime sizes its per-P state at start.
func loopEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env
		}
	}
	return append(env, "GOMAXPROCS=1")
}

// loopArgv is the command line of a loop for worktree d: exe (gyrum
// itself) heartbeat run, the words by which loops are recognised
// (watchdog.LoopDir).
func loopArgv(exe string, d gyrumdir.Dir, schema int) []string {
	return []string{exe, "heartbeat", "run", "--dir", d.Worktree, "--schema-version", strconv.Itoa(schema)}
}

// spawnLoop starts `gyrum heartbeat run --dir D` (loopArgv) in a new session with
// every standard stream on /dev/null, so whatever started gyrum (a hook, a
// Bash tool call) is never held open, and waits until the loop has
// registered (heartbeat.pid names it). A loop that exits or does not
// register in time is reaped and reported with the tail of its log.
func (a *App) spawnLoop(ctx context.Context, d gyrumdir.Dir, schema int) (proc.Identity, error) {
	exe, err := a.executable()
	if err != nil {
		return proc.Identity{}, err
	}
	argv := loopArgv(exe, d, schema)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = loopEnv(a.childEnv())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := withInheritedFDsClosed(cmd.Start); err != nil {
		return proc.Identity{}, fmt.Errorf("start the heartbeat loop: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps the loop if it ends while gyrum runs
	pid := cmd.Process.Pid
	deadline := time.NewTimer(registerTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if id, err := d.ReadPID(gyrumdir.LoopPIDFile); err == nil && id.PID == pid {
			return id, nil
		}
		select {
		case err := <-exited:
			return proc.Identity{}, fmt.Errorf("the heartbeat loop exited before registering (%v)%s", err, logTail(d))
		case <-deadline.C:
			_ = cmd.Process.Kill()
			return proc.Identity{}, fmt.Errorf("the heartbeat loop did not register within %s%s", registerTimeout, logTail(d))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return proc.Identity{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// logTail returns the last lines of heartbeat.log (of its last 4 KiB),
// formatted for an error, without escapes that act on a terminal.
func logTail(d gyrumdir.Dir) string {
	data, err := d.LogTail(4 << 10)
	if err != nil || len(data) == 0 {
		return ""
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return "; its log says:\n  " + clikit.CleanLines(string(bytes.Join(lines, []byte("\n  "))))
}

// stopped says what stopLoop did.
type stopped struct {
	PID    int    `json:"pid,omitempty"`
	Result string `json:"result"` // "none", "not running", "terminated", "killed"
}

func (s stopped) String() string {
	switch s.Result {
	case "none":
		return "no loop"
	case "not running":
		return fmt.Sprintf("loop pid %d was not running", s.PID)
	}
	return fmt.Sprintf("loop pid %d %s", s.PID, s.Result)
}

func (a *App) stopGrace() time.Duration {
	if a.StopGrace > 0 {
		return a.StopGrace
	}
	return DefaultStopGrace
}

// stopLoop stops the loop named by d's heartbeat.pid: identity check (pid
// and start time, and a command line of gyrum heartbeat run), SIGTERM,
// SIGKILL after the grace period. It then removes the pid file and the
// registry entry if the loop could not (SIGKILL). A pid file naming a dead
// or recycled pid is just removed: that process is never signalled.
func (a *App) stopLoop(ctx context.Context, d gyrumdir.Dir) (stopped, error) {
	reg, rerr := a.registry()
	id, err := d.ReadPID(gyrumdir.LoopPIDFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Corrupt: nobody can be identified by it, nobody is signalled.
		_ = os.Remove(d.File(gyrumdir.LoopPIDFile))
	}
	if err != nil {
		// Without a pid file the registry may still know the worktree's
		// loop (the file was deleted under it): that one is stopped.
		found := false
		if rerr == nil {
			id, found = registeredLoop(reg, d.Worktree)
		}
		if !found {
			return stopped{Result: "none"}, nil
		}
	}
	cleanup := func() {
		_, _ = d.RemovePIDIf(gyrumdir.LoopPIDFile, id)
		if rerr == nil {
			_, _ = reg.Remove(id)
		}
	}
	if !id.Alive() {
		cleanup()
		return stopped{PID: id.PID, Result: "not running"}, nil
	}
	if !isLoop(id.PID) {
		if ending(ctx, id, a.stopGrace()) {
			cleanup()
			return stopped{PID: id.PID, Result: "not running"}, nil
		}
		return stopped{PID: id.PID}, fmt.Errorf("pid %d in %s is not a gyrum heartbeat loop: not signalled",
			id.PID, d.File(gyrumdir.LoopPIDFile))
	}
	res, err := proc.Stop(ctx, id, a.stopGrace())
	if err == nil || !id.Alive() {
		// A loop still running (ctx ended first, or it survived SIGKILL in
		// an uninterruptible wait) keeps its pid file and registry entry:
		// without them release would find no loop and the watchdog could
		// not see it.
		cleanup()
	}
	if err != nil {
		return stopped{PID: id.PID, Result: res.String()}, fmt.Errorf("stop loop pid %d: %w", id.PID, err)
	}
	return stopped{PID: id.PID, Result: res.String()}, nil
}

// registeredLoop returns the live loop the registry names for worktree.
func registeredLoop(reg gyrumdir.Registry, worktree string) (proc.Identity, bool) {
	entries, _, err := reg.List()
	if err != nil {
		return proc.Identity{}, false
	}
	for _, e := range entries {
		if gyrumdir.SamePath(e.Dir, worktree) && e.Identity().Alive() {
			return e.Identity(), true
		}
	}
	return proc.Identity{}, false
}

// isLoop reports whether process pid runs `... heartbeat run ...`.
// ending reports whether process id, found without a command line, was
// ending on its own: a loop that exits (its agent gone, its lease ended)
// loses its command line before it is gone, and it is gone within grace.
// A process with a command line is another program, not ending.
func ending(ctx context.Context, id proc.Identity, grace time.Duration) bool {
	if args, err := proc.Cmdline(id.PID); err == nil && len(args) > 0 {
		return false
	}
	w := proc.NewWatch(id)
	defer w.Close()
	exited := w.Exited()
	if exited == nil {
		return !w.Alive()
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return !w.Alive()
}

func isLoop(pid int) bool {
	args, err := proc.Cmdline(pid)
	if err != nil {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "heartbeat" && args[i+1] == "run" {
			return true
		}
	}
	return false
}
