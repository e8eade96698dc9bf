package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// Timeouts of the commands the simulator runs.
const (
	startWorkTimeout = 30 * time.Second
	hookTimeout      = 5 * time.Second // Claude Code's hook timeout as gyrum setup writes it
	stopGrace        = 2 * time.Second
)

// watchedSleep is how long the watched stand-in process would live on its
// own: far beyond any run, the simulator ends it.
const watchedSleep = "1000000"

// agent is one simulated agent at run time.
type agent struct {
	plan AgentPlan
	r    *run
	dir  string // the worktree

	mu          sync.Mutex
	watched     *exec.Cmd
	watchedID   proc.Identity
	watchedDone chan struct{}
	loopID      proc.Identity

	// Written while the agent runs (under mu where tool calls race); read
	// after it ended.
	startErr     error
	startedAt    time.Time
	failedAt     time.Time // actual failure (kill, last activity)
	killedAt     time.Time
	deletedAt    time.Time
	lastActivity time.Time
	// lastHookEnd is when the latest hook that started while the agent was
	// alive finished: a hook running at the kill may write after it.
	lastHookEnd  time.Time
	hookCalls    int
	hookFailures int
	hookProblem  string // the first failure, for the report
}

// run plays the agent's script until it ends or ctx is cancelled. Each
// tool call (PreToolUse, then PostToolUse) runs on its own goroutine, as
// Claude Code runs hooks per call, so a slow exec never delays the rest of
// the schedule: failures are injected on time at any time scale. No hook
// runs once the agent is dead.
func (a *agent) run(ctx context.Context) {
	acts := a.plan.Actions
	if len(acts) == 0 || acts[0].Kind != ActStart || !sleepUntil(ctx, a.r.at(acts[0].At)) {
		return
	}
	if err := a.start(ctx); err != nil {
		if ctx.Err() == nil {
			a.startErr = err
			a.r.log.Error("agent did not start", "agent", a.plan.Name, "err", err)
		} else {
			a.startErr = ctx.Err()
		}
		return
	}
	post := map[string]Action{}
	for _, act := range acts[1:] {
		if act.Kind == ActPostTool {
			post[act.ToolUseID] = act
		}
	}
	var calls sync.WaitGroup
	defer calls.Wait()
	for _, act := range acts[1:] {
		switch act.Kind {
		case ActPreTool:
			end, hasEnd := post[act.ToolUseID]
			calls.Go(func() {
				if !sleepUntil(ctx, a.r.at(act.At)) || !a.hook(ctx, "PreToolUse", act) || !hasEnd {
					return
				}
				if sleepUntil(ctx, a.r.at(end.At)) {
					a.hook(ctx, "PostToolUse", end)
				}
			})
		case ActKill:
			if !sleepUntil(ctx, a.r.at(act.At)) {
				return
			}
			a.kill()
		case ActDeleteWorktree:
			if !sleepUntil(ctx, a.r.at(act.At)) {
				return
			}
			if err := os.RemoveAll(a.dir); err != nil {
				a.r.log.Error("delete worktree", "agent", a.plan.Name, "err", err)
			}
			a.mu.Lock()
			a.deletedAt = time.Now()
			a.mu.Unlock()
		}
	}
	calls.Wait()
	if a.plan.Class == ClassWedged {
		// The wedged agent's last sign of life is the activity file's mtime:
		// exactly what its loop measures the age from.
		a.mu.Lock()
		a.failedAt = a.lastActivity
		a.mu.Unlock()
	}
}

// start spawns the watched process and runs gyrum start-work for it.
func (a *agent) start(ctx context.Context) error {
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return fmt.Errorf("create worktree: %w", err)
	}
	w := exec.Command("sleep", watchedSleep)
	w.Dir = a.dir
	w.Env = childEnv(a.r.markerEnv())
	// Its own process group: a Ctrl-C in the terminal reaches the
	// simulator, which then stops this process itself, by pid.
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start watched process: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = w.Wait()
		close(done)
	}()
	id, err := proc.Lookup(w.Process.Pid)
	a.mu.Lock()
	a.watched, a.watchedDone = w, done
	if err == nil {
		a.watchedID = id
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("identify watched process %d: %w", w.Process.Pid, err)
	}

	args := []string{"start-work", a.plan.Ticket, "--dir", a.dir, "--watch-pid", fmt.Sprint(id.PID), "--agent", a.plan.Name}
	if a.plan.Client == ClientV1 {
		args = append(args, "--schema-version", "1")
	}
	sctx, cancel := context.WithTimeout(ctx, startWorkTimeout)
	defer cancel()
	cmd := exec.CommandContext(sctx, a.r.cfg.Gyrum, args...)
	cmd.Dir = a.dir
	cmd.Env = a.r.gyrumEnv(a.plan)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// start-work may have spawned the loop before failing; the pid file
		// lets cleanup find it.
		a.readLoopID(0)
		return fmt.Errorf("gyrum %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	a.startedAt = time.Now()
	if err := a.readLoopID(2 * time.Second); err != nil {
		return fmt.Errorf("gyrum start-work %s: no loop: %w", a.plan.Ticket, err)
	}
	return nil
}

// readLoopID reads the loop's identity from heartbeat.pid, waiting up to
// wait for the file to appear.
func (a *agent) readLoopID(wait time.Duration) error {
	d := a.gdir()
	deadline := time.Now().Add(wait)
	for {
		id, err := d.ReadPID(gyrumdir.LoopPIDFile)
		if err == nil {
			a.mu.Lock()
			a.loopID = id
			a.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gdir is the agent's .gyrum/ directory (a.dir is absolute).
func (a *agent) gdir() gyrumdir.Dir {
	return gyrumdir.Dir{Worktree: a.dir, Path: filepath.Join(a.dir, gyrumdir.DirName)}
}

// hook runs `gyrum touch-activity` with a Claude Code hook payload on stdin,
// as Claude Code would: cwd the worktree, the hook's timeout. The hook's
// contract is exit 0 and no output, whatever happens; anything else is
// recorded as a hook failure.
//
// It returns false, running nothing, when the agent is dead or ctx ended.
func (a *agent) hook(ctx context.Context, event string, act Action) bool {
	a.mu.Lock()
	dead := !a.killedAt.IsZero()
	a.mu.Unlock()
	if dead || ctx.Err() != nil {
		return false
	}
	payload := map[string]any{
		"session_id":      "sim-" + a.plan.Name,
		"transcript_path": a.dir + "/.transcript.jsonl",
		"cwd":             a.dir,
		"permission_mode": "default",
		"hook_event_name": event,
		"tool_name":       act.Tool,
		"tool_input":      toolInput(act.Tool),
		"tool_use_id":     act.ToolUseID,
	}
	if event == "PostToolUse" {
		payload["tool_response"] = map[string]any{"stdout": "ok", "stderr": "", "interrupted": false}
	}
	body, _ := json.Marshal(payload)
	started := time.Now()
	hctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	cmd := exec.CommandContext(hctx, a.r.cfg.Gyrum, "touch-activity")
	cmd.Stdin = bytes.NewReader(body)
	cmd.Dir = a.dir
	cmd.Env = a.r.gyrumEnv(a.plan)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return false // the run is ending: not the hook's fault
	}
	var mtime time.Time
	if event == "PostToolUse" {
		mtime, _ = a.gdir().LastActivity()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.killedAt.IsZero() || started.Before(a.killedAt) {
		a.lastHookEnd = time.Now()
	}
	a.hookCalls++
	if err != nil || out.Len() > 0 {
		a.hookFailures++
		if a.hookProblem == "" {
			a.hookProblem = fmt.Sprintf("%s: err=%v output=%q", event, err, clip(out.String(), 200))
		}
	}
	if mtime.After(a.lastActivity) {
		a.lastActivity = mtime
	}
	return true
}

func toolInput(tool string) map[string]any {
	switch tool {
	case "Bash":
		return map[string]any{"command": "go test ./...", "description": "run the tests"}
	case "Read", "Edit":
		return map[string]any{"file_path": "main.go"}
	case "WebFetch":
		return map[string]any{"url": "https://example.com", "prompt": "summarise"}
	}
	return map[string]any{"pattern": "TODO"}
}

// kill SIGKILLs the watched process: the agent session dies.
func (a *agent) kill() {
	a.mu.Lock()
	id := a.watchedID
	a.mu.Unlock()
	if id.IsZero() {
		return
	}
	err := proc.Signal(id, syscall.SIGKILL)
	now := time.Now()
	if err != nil {
		a.r.log.Error("kill watched process", "agent", a.plan.Name, "err", err)
		return
	}
	a.mu.Lock()
	a.killedAt, a.failedAt = now, now
	a.mu.Unlock()
}

// watchedAlive reports whether the watched process still runs.
func (a *agent) watchedAlive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.watchedID.IsZero() && a.watchedID.Alive()
}

// cleanup stops the agent's loop (identity checked) and its watched process.
func (a *agent) cleanup(ctx context.Context) {
	a.mu.Lock()
	loop, watched, done := a.loopID, a.watchedID, a.watchedDone
	a.mu.Unlock()
	if loop.IsZero() {
		_ = a.readLoopID(0) // start-work may have spawned it after all
		a.mu.Lock()
		loop = a.loopID
		a.mu.Unlock()
	}
	if !loop.IsZero() {
		a.r.stopProcess(ctx, loop)
	}
	if !watched.IsZero() {
		if err := proc.Signal(watched, syscall.SIGKILL); err != nil && !errors.Is(err, proc.ErrNoProcess) {
			a.r.log.Error("stop watched process", "agent", a.plan.Name, "err", err)
		}
	}
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
}

// stopProcess ends a process the run started, after checking its identity.
func (r *run) stopProcess(ctx context.Context, id proc.Identity) {
	if _, err := proc.Stop(ctx, id, stopGrace); err != nil {
		r.log.Error("stop process", "process", id.String(), "err", err)
	}
}

// markerEnv marks every process of the run, so a leftover can be traced
// back to it (the interrupt test looks for it).
func (r *run) markerEnv() string { return "WARP_SIM_ROOT=" + r.root }

// gyrumEnv is the environment of every gyrum command of agent p: the
// embedded warp, the run's own GYRUM_HOME and the scaled loop settings.
func (r *run) gyrumEnv(p AgentPlan) []string {
	t := r.cfg.Timing
	return childEnv(
		r.markerEnv(),
		"WARP_URL="+r.url,
		"GYRUM_HOME="+r.home,
		"GYRUM_AGENT="+p.Name,
		"GYRUM_HOST="+p.Host,
		"HEARTBEAT_INTERVAL_SECS="+secs(t.Interval.Seconds()/r.scale),
		"HEARTBEAT_ACTIVITY_STALENESS_SECS="+secs(t.Staleness.Seconds()/r.scale),
		"HEARTBEAT_INFLIGHT_MAX_SECS="+secs(t.InFlightMax.Seconds()/r.scale),
	)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
