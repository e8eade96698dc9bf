package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/setup"
)

// Timeouts of the commands the simulator runs.
const (
	startWorkTimeout = 30 * time.Second
	hookTimeout      = 5 * time.Second // Claude Code's hook timeout as gyrum setup writes it
	stopGrace        = 2 * time.Second
)

// agent is one simulated agent at run time.
type agent struct {
	plan AgentPlan
	r    *run
	dir  string // the worktree
	// cwd is the session's working directory and every hook payload's cwd:
	// the worktree, or for ClassProjectCwd a project directory without
	// .gyrum/ (Claude Code resets the shell's cwd to the project).
	cwd string

	mu          sync.Mutex
	watched     *exec.Cmd
	watchedID   proc.Identity
	watchedDone chan struct{}
	toStandIn   *os.File        // commands to the stand-in; nil once closed
	children    []proc.Identity // processes the stand-in started
	loopID      proc.Identity

	// Written while the agent runs (under mu where tool calls race); read
	// after it ended.
	startErr     error
	startedAt    time.Time
	failedAt     time.Time // actual failure (kill, last activity, denied call)
	killedAt     time.Time
	deletedAt    time.Time
	releasedAt   time.Time // an operator released the lease
	lastActivity time.Time
	// lastHookEnd is when the latest hook that started while the agent was
	// alive finished: a hook running at the kill may write after it.
	lastHookEnd time.Time
	// postStarts are the starts of the Post hooks, for the told claim;
	// toldAt is the start of the one whose output told the agent its
	// lease had ended (the agent stops working then).
	postStarts   []time.Time
	toldAt       time.Time
	notices      int
	loopNotices  int // outputs telling the agent it loops (issue 44)
	spinNotices  int // outputs telling the agent it makes no progress (issue 44)
	hookCalls    int
	hookFailures int
	hookProblem  string // the first failure, for the report

	// repo is the agent's repository, of which its worktree is a linked
	// git worktree (so what gyrum saves under refs/gyrum/ outlives the
	// worktree); edits are the uncommitted files its tool calls wrote.
	repo  string
	edits []edit
}

// edit is one file a tool call wrote into the worktree, uncommitted.
type edit struct {
	path, content string
	at            time.Time
}

// run plays the agent's script until it ends or ctx is cancelled. Each
// tool call (PreToolUse, its process, PostToolUse) runs on its own
// goroutine, as Claude Code runs hooks per call, so a slow exec never
// delays the rest of the schedule: failures are injected on time at any
// time scale. No hook runs once the agent is dead or has been told its
// lease ended.
func (a *agent) run(ctx context.Context) {
	acts := a.plan.Actions
	if len(acts) == 0 || acts[0].Kind != ActStart || !a.wait(ctx, acts[0].At) {
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
			calls.Go(func() { a.toolCall(ctx, act, end, hasEnd) })
		case ActKill:
			if !a.wait(ctx, act.At) {
				return
			}
			a.kill()
		case ActDeleteWorktree:
			if !a.wait(ctx, act.At) {
				return
			}
			if err := removeAll(a.dir); err != nil {
				a.r.log.Error("delete worktree", "agent", a.plan.Name, "err", err)
			}
			a.mu.Lock()
			a.deletedAt = time.Now()
			a.mu.Unlock()
		case ActRelease:
			if !a.wait(ctx, act.At) {
				return
			}
			a.release(ctx)
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

// wait sleeps until the scheduled offset at and records how late it woke:
// the simulator's own lateness, judged by the timing verdict. Actions due
// while the agent was still starting (start-work takes real time, which
// the scale does not shrink) run as soon as it has started and are not
// counted: their lateness is the start's, not the machine's load; nor are
// those of an agent that is dead or stopped (they do nothing).
func (a *agent) wait(ctx context.Context, at time.Duration) bool {
	planned := a.r.at(at)
	if !sleepUntil(ctx, planned) {
		return false
	}
	a.mu.Lock()
	stopped := !a.killedAt.IsZero() || !a.toldAt.IsZero()
	a.mu.Unlock()
	if !stopped && !a.startedAt.IsZero() && planned.After(a.startedAt) {
		a.r.timing.add(seriesInjection, time.Since(planned))
	}
	return true
}

// toolCall plays one tool call: PreToolUse; for Bash the call's process,
// a child of the stand-in (sleep for a foreground call, a CPU-using job for
// a background one); PostToolUse (or PostToolUseFailure) when the call
// ends, after its foreground process is gone. A denied call fires
// PreToolUse only and runs nothing.
func (a *agent) toolCall(ctx context.Context, pre, post Action, hasPost bool) {
	if !a.wait(ctx, pre.At) || !a.hook(ctx, "PreToolUse", pre) {
		return
	}
	if pre.Denied {
		if a.plan.Class == ClassWedgedDenied {
			// Its failure is the denied call: the marker's mtime is the
			// last evidence the loop has.
			at := time.Now()
			if ms, err := a.gdir().InFlight(); err == nil {
				for _, m := range ms {
					if m.Name == gyrumdir.MarkerName(pre.ToolUseID) {
						at = m.Since
					}
				}
			}
			a.mu.Lock()
			a.failedAt = at
			a.mu.Unlock()
		}
		return
	}
	if !pre.Explore {
		a.edit(pre.ToolUseID)
	}
	bash := pre.Tool == "Bash" && hasPost
	if bash {
		if pre.Background > 0 {
			s := a.r.job
			a.send("bg %s %s %s %s", pre.ToolUseID, secs(a.r.real(pre.Background).Seconds()), ms(s.Burst), ms(s.Period))
		} else {
			a.send("fg %s %s", pre.ToolUseID, secs(a.r.real(post.At-pre.At).Seconds()))
		}
	}
	if !hasPost || !a.wait(ctx, post.At) {
		return
	}
	if bash && pre.Background == 0 {
		a.send("end %s", pre.ToolUseID)
	}
	event := "PostToolUse"
	if post.Failed {
		event = "PostToolUseFailure"
	}
	a.hook(ctx, event, post)
}

// start spawns the watched stand-in and runs gyrum start-work for it as
// Claude Code's Bash tool would: CLAUDE_PID names the session.
func (a *agent) start(ctx context.Context) error {
	for _, d := range []string{a.dir, a.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create worktree: %w", err)
		}
	}
	if err := a.startStandIn(); err != nil {
		return err
	}
	a.mu.Lock()
	id := a.watchedID
	a.mu.Unlock()

	args := []string{"start-work", a.plan.Ticket, "--dir", a.dir, "--agent", a.plan.Name}
	if a.plan.Client == ClientV1 {
		args = append(args, "--schema-version", "1")
	}
	sctx, cancel := context.WithTimeout(ctx, startWorkTimeout)
	defer cancel()
	cmd := exec.CommandContext(sctx, a.r.cfg.Gyrum, args...)
	cmd.Dir = a.cwd
	cmd.Env = append(a.r.gyrumEnv(a.plan), a.claudeEnv(id)...)
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

// makeWorktree makes the agent's repository (one commit) under the
// simulation's repos/ and its worktree as a linked git worktree of it, on
// the branch gyrum/<ticket>, as start-work --worktree would.
func (a *agent) makeWorktree(ctx context.Context) error {
	a.repo = filepath.Join(a.r.root, "repos", a.plan.Name)
	if err := os.MkdirAll(a.repo, 0o700); err != nil {
		return fmt.Errorf("create repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(a.repo, "README"), []byte("simulated project of "+a.plan.Name+"\n"), 0o600); err != nil {
		return fmt.Errorf("create repository: %w", err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "README"},
		{"commit", "-q", "-m", "start"},
		{"worktree", "add", "-q", "-b", "gyrum/" + a.plan.Ticket, a.dir},
	} {
		if _, err := simGit(ctx, a.repo, args...); err != nil {
			return err
		}
	}
	return nil
}

// simGit runs git in dir with a fixed identity and no global config.
func simGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=warpsim", "GIT_AUTHOR_EMAIL=warpsim@localhost",
		"GIT_COMMITTER_NAME=warpsim", "GIT_COMMITTER_EMAIL=warpsim@localhost", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// edit writes the tool call's work into the worktree, uncommitted: a
// file of its own under work/ (the worktree may be gone: nothing then).
// A killed agent edits nothing: under a.mu, as kill takes it, a call
// whose hook ran late (its own goroutine) cannot write after the kill, as
// no agent writes after its death.
func (a *agent) edit(toolUseID string) {
	path := filepath.Join("work", toolUseID+".txt")
	content := "edit of " + toolUseID + "\n"
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.killedAt.IsZero() {
		return
	}
	if err := os.MkdirAll(filepath.Join(a.dir, "work"), 0o700); err != nil {
		return
	}
	if err := os.WriteFile(filepath.Join(a.dir, path), []byte(content), 0o600); err != nil {
		return
	}
	a.edits = append(a.edits, edit{path: path, content: content, at: time.Now()})
}

// startStandIn starts the watched process: this executable as the agent
// helper (agentHelper), named claude, in its own process group (a Ctrl-C
// in the terminal reaches the simulator, which then stops it itself, by
// pid). It reads its commands from a pipe and reports the children it
// starts on another.
func (a *agent) startStandIn() error {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start watched process: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return fmt.Errorf("start watched process: %w", err)
	}
	w := exec.Command(a.r.claudeBin, StandInFlag, helperAgent, a.r.jobBin)
	w.Args[0] = "claude"
	w.Dir = a.cwd
	w.Env = childEnv(a.r.markerEnv())
	w.Stdin, w.Stdout = cmdR, repW
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = w.Start()
	cmdR.Close()
	repW.Close()
	if err != nil {
		cmdW.Close()
		repR.Close()
		return fmt.Errorf("start watched process: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = w.Wait()
		close(done)
	}()
	go a.readReports(repR)
	id, err := proc.Lookup(w.Process.Pid)
	a.mu.Lock()
	a.watched, a.watchedDone, a.toStandIn = w, done, cmdW
	if err == nil {
		a.watchedID = id
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("identify watched process %d: %w", w.Process.Pid, err)
	}
	return nil
}

// readReports records the children the stand-in reports, so cleanup can
// stop what an orphaned stand-in left behind (by identity).
func (a *agent) readReports(r *os.File) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "started":
			pid, err1 := strconv.Atoi(f[2])
			st, err2 := strconv.ParseUint(f[3], 10, 64)
			if err1 == nil && err2 == nil {
				a.mu.Lock()
				a.children = append(a.children, proc.Identity{PID: pid, StartTime: st})
				a.mu.Unlock()
			}
		case len(f) == 3 && f[0] == "late":
			if ns, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				a.r.timing.add(seriesJob, time.Duration(ns))
			}
		case len(f) > 0 && f[0] == "error":
			a.r.log.Error("the watched stand-in could not start a process", "agent", a.plan.Name, "report", sc.Text())
		}
	}
}

// send writes one command to the stand-in; nothing once it is gone.
func (a *agent) send(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.toStandIn == nil || !a.killedAt.IsZero() {
		return
	}
	_, _ = fmt.Fprintf(a.toStandIn, format+"\n", args...)
}

// claudeEnv is what Claude Code puts in the environment of its hooks and
// Bash commands.
func (a *agent) claudeEnv(id proc.Identity) []string {
	return []string{"CLAUDE_PID=" + strconv.Itoa(id.PID), "CLAUDECODE=1", "CLAUDE_PROJECT_DIR=" + a.cwd,
		"CLAUDE_CODE_SESSION_ID=sim-" + a.plan.Name}
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
// as Claude Code would: in the session's cwd, with CLAUDE_PID, within the
// hook's timeout. The hook's contract is exit 0 and no output, except on a
// Post event one line of hook JSON whose additionalContext tells the agent
// its lease ended; anything else is recorded as a hook failure. After that
// notice the agent stops working.
//
// It returns false, running nothing, when the agent is dead or stopped, or
// ctx ended.
func (a *agent) hook(ctx context.Context, event string, act Action) bool {
	a.mu.Lock()
	stopped := !a.killedAt.IsZero() || !a.toldAt.IsZero()
	id := a.watchedID
	a.mu.Unlock()
	if stopped || ctx.Err() != nil {
		return false
	}
	post := event != "PreToolUse"
	payload := map[string]any{
		"session_id":      "sim-" + a.plan.Name,
		"transcript_path": a.dir + "/.transcript.jsonl",
		"cwd":             a.cwd,
		"permission_mode": "default",
		"hook_event_name": event,
		"tool_name":       act.Tool,
		"tool_input":      toolInput(act.Tool, callKey(act)),
		"tool_use_id":     act.ToolUseID,
	}
	switch event {
	case "PostToolUse":
		// Each call's output is its own: a healthy agent gets somewhere
		// (issue 44: the same call with the same result is a loop).
		payload["tool_response"] = map[string]any{"stdout": "ok " + act.ToolUseID, "stderr": "", "interrupted": false}
	case "PostToolUseFailure":
		payload["error"], payload["is_interrupt"] = "Exit code 1\nFAIL "+callKey(act), false
	}
	body, _ := json.Marshal(payload)
	started := time.Now()
	hctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	argv := setup.HookArgv(a.r.cfg.Gyrum) // the hook gyrum setup installs for this gyrum
	cmd := exec.CommandContext(hctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Dir = a.cwd
	cmd.Env = append(a.r.gyrumEnv(a.plan), a.claudeEnv(id)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	took := time.Since(started)
	if ctx.Err() != nil {
		return false // the run is ending: not the hook's fault
	}
	a.r.timing.add(seriesHook, took)
	if os.Getenv("SIMDBG") != "" {
		fmt.Fprintf(os.Stderr, "DBG hook %s %s took %s at +%.1fmin\n", a.plan.Name, event, took.Round(time.Millisecond), float64(started.Sub(a.r.t0))*a.r.scale/float64(time.Minute))
	}
	var mtime time.Time
	if post {
		mtime, _ = a.gdir().LastActivity()
	}
	told, loopTold, spinTold, problem := false, false, false, ""
	switch {
	case stdout.Len() > 0 && post && isLoopNotice(stdout.Bytes(), event):
		loopTold = true
	case stdout.Len() > 0 && post && isSpinNotice(stdout.Bytes(), event, a.plan.Ticket):
		spinTold = true
	case err != nil:
		problem = fmt.Sprintf("%s: exit: %v", event, err)
	case stderr.Len() > 0:
		problem = fmt.Sprintf("%s: stderr %q", event, clip(stderr.String(), 200))
	case stdout.Len() > 0:
		if told = post && isNotice(stdout.Bytes(), event, a.plan.Ticket); !told {
			problem = fmt.Sprintf("%s: output %q", event, clip(stdout.String(), 200))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.killedAt.IsZero() || started.Before(a.killedAt) {
		a.lastHookEnd = time.Now()
	}
	a.hookCalls++
	if post {
		a.postStarts = append(a.postStarts, started)
	}
	if problem != "" {
		a.hookFailures++
		if a.hookProblem == "" {
			a.hookProblem = problem
		}
	}
	if loopTold {
		a.loopNotices++
	}
	if spinTold {
		a.spinNotices++
	}
	if told {
		a.notices++
		if a.toldAt.IsZero() {
			a.toldAt = started
			a.r.log.Info("agent told its lease ended; it stops", "agent", a.plan.Name, "ticket", a.plan.Ticket)
		}
	}
	if mtime.After(a.lastActivity) {
		a.lastActivity = mtime
	}
	return true
}

// isNotice reports whether out is the hook's one legitimate output: one
// line of Claude Code hook JSON for event whose additionalContext tells
// the agent its lease on ticket ended.
func isNotice(out []byte, event, ticket string) bool {
	line, rest, _ := bytes.Cut(out, []byte("\n"))
	if len(bytes.TrimSpace(rest)) > 0 {
		return false
	}
	var n struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if dec.Decode(&n) != nil {
		return false
	}
	h := n.HookSpecificOutput
	return h.HookEventName == event && strings.HasPrefix(h.AdditionalContext, "gyrum: your lease on ticket "+ticket+" ")
}

// isLoopNotice reports whether out is the hook's loop notice (issue 44):
// one line of Claude Code hook JSON for event telling the agent it loops.
func isLoopNotice(out []byte, event string) bool {
	c, ok := hookContext(out, event)
	return ok && strings.HasPrefix(c, "gyrum: you are looping on ")
}

// isSpinNotice reports whether out is the hook's no-progress notice
// (issue 44, the loop's nudge once warp said spinning): one line of
// Claude Code hook JSON for event telling the agent its lease on ticket
// makes no progress.
func isSpinNotice(out []byte, event, ticket string) bool {
	c, ok := hookContext(out, event)
	return ok && strings.HasPrefix(c, "gyrum: no progress on ticket "+ticket+" ")
}

// hookContext returns the additional context of out, one line of Claude
// Code hook JSON for event.
func hookContext(out []byte, event string) (string, bool) {
	var n struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	line, rest, _ := bytes.Cut(out, []byte("\n"))
	if len(bytes.TrimSpace(rest)) > 0 || json.Unmarshal(line, &n) != nil || n.HookSpecificOutput.HookEventName != event {
		return "", false
	}
	return n.HookSpecificOutput.AdditionalContext, true
}

// callKey names what a call works on: its own id, or, for the looping
// agent's repeated call, the same thing every time.
func callKey(act Action) string {
	if act.Repeat {
		return "the-same-package"
	}
	return act.ToolUseID
}

// toolInput is the input of call id of tool: each call works on its own
// package, file, page or pattern, as a healthy agent's calls do (issue
// 44: the same call with the same result again and again is a loop).
func toolInput(tool, id string) map[string]any {
	switch tool {
	case "Bash":
		return map[string]any{"command": "go test ./" + id + "/...", "description": "run the tests"}
	case "Read", "Edit":
		return map[string]any{"file_path": id + ".go"}
	case "WebFetch":
		return map[string]any{"url": "https://example.com/" + id, "prompt": "summarise"}
	}
	return map[string]any{"pattern": "TODO " + id}
}

// kill SIGKILLs the watched process: the agent session dies. What it
// started lives on, as the processes of a crashed session do.
func (a *agent) kill() {
	// Under a.mu throughout: an edit (edit) is either before the kill or
	// not made.
	a.mu.Lock()
	defer a.mu.Unlock()
	id := a.watchedID
	if id.IsZero() {
		return
	}
	err := proc.Signal(id, syscall.SIGKILL)
	now := time.Now()
	if err != nil {
		a.r.log.Error("kill watched process", "agent", a.plan.Name, "err", err)
		return
	}
	a.killedAt, a.failedAt = now, now
}

// release ends the agent's lease as an operator would (warp release),
// through the embedded warp's service; the agent is not told.
func (a *agent) release(ctx context.Context) {
	srv := a.r.server()
	if _, err := srv.svc.Release(ctx, a.plan.Ticket, 0, "operator"); err != nil {
		if ctx.Err() == nil {
			a.r.log.Error("operator release", "agent", a.plan.Name, "ticket", a.plan.Ticket, "err", err)
		}
		return
	}
	a.mu.Lock()
	a.releasedAt = time.Now()
	a.mu.Unlock()
}

// watchedAlive reports whether the watched process still runs.
func (a *agent) watchedAlive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.watchedID.IsZero() && a.watchedID.Alive()
}

// cleanup stops the agent's loop (identity checked), its watched stand-in
// (which kills its children when its command pipe closes) and whatever
// processes of the stand-in survived it.
func (a *agent) cleanup(ctx context.Context) {
	a.mu.Lock()
	loop, watched, done, pipe := a.loopID, a.watchedID, a.watchedDone, a.toStandIn
	a.toStandIn = nil
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
	if pipe != nil {
		pipe.Close()
	}
	if done != nil {
		select {
		case <-done:
		case <-time.After(stopGrace):
		}
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
	a.mu.Lock()
	children := a.children
	a.mu.Unlock()
	for _, c := range children {
		if err := proc.Signal(c, syscall.SIGKILL); err != nil && !errors.Is(err, proc.ErrNoProcess) {
			a.r.log.Error("stop a process of the watched stand-in", "agent", a.plan.Name, "err", err)
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

// removeAll removes dir like rm -r. The loop may write a file into it
// while it goes (its state, an exit report's bookkeeping), which makes one
// pass fail with "directory not empty": a few more passes finish the job.
func removeAll(dir string) error {
	var err error
	for range 5 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return err
}

// ms renders a duration as decimal milliseconds.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
