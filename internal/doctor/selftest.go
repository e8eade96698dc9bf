package doctor

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
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/setup"
)

// DefaultHookTimeout is how long Claude Code lets a command hook without a
// "timeout" run (60 s); the self-test allows the same.
const DefaultHookTimeout = 60 * time.Second

// SelfTestTicket names the lease of the self-test's scratch worktree. No
// loop and no server ever see it.
const SelfTestTicket = "gyrum-doctor-selftest"

// hookSettings are the hook entries of one settings file; project marks
// a file of the project (its .claude/), which the repository may have
// committed.
type hookSettings struct {
	byEvent map[string][]setup.HookEntry
	project bool
}

// hookRun is one distinct hook command to self-test; projectOnly when no
// settings file but the project's names it.
type hookRun struct {
	setup.HookEntry
	projectOnly bool
}

// hookCommands merges the hook entries of the effective settings into one
// entry per distinct command line, with the shortest timeout any entry of
// it sets (the strictest the agent applies).
func hookCommands(files []hookSettings) []hookRun {
	var out []hookRun
	idx := map[string]int{}
	for _, f := range files {
		for _, ev := range setup.HookEvents() {
			for _, e := range f.byEvent[ev] {
				i, ok := idx[e.Command]
				if !ok {
					idx[e.Command] = len(out)
					out = append(out, hookRun{HookEntry: e, projectOnly: f.project})
					continue
				}
				if e.Timeout > 0 && (out[i].Timeout == 0 || e.Timeout < out[i].Timeout) {
					out[i].Timeout = e.Timeout
				}
				out[i].projectOnly = out[i].projectOnly && f.project
			}
		}
	}
	return out
}

// checkHookRuns runs each hook command as Claude Code would and checks
// that it moved the activity signal. A command only the project's
// settings name runs only when its program is this gyrum (binary) or the
// gyrum-hook beside it: a repository can commit .claude/settings.json
// naming a program of its own called gyrum-hook, and doctor must not run
// the repository's code (Claude Code asks before it trusts a project).
func checkHookRuns(ctx context.Context, entries []hookRun, prepared gyrumdir.Prepared, binary string) []Check {
	if len(entries) == 0 {
		return []Check{{Name: "hook-run", Status: StatusSkip, Detail: "no hook command to run"}}
	}
	var out []Check
	for _, e := range entries {
		if e.projectOnly && !ownHook(e.Command, binary) {
			prog, _ := setup.HookBinary(e.Command)
			out = append(out, Check{Name: "hook-run", Status: StatusSkip,
				Detail: fmt.Sprintf("not run: only the project's settings name %q, and %s is not this gyrum (%s) nor the gyrum-hook beside it", e.Command, prog, binary)})
			continue
		}
		out = append(out, checkHookRun(ctx, e.HookEntry, prepared))
	}
	return out
}

// ownHook reports whether hook command cmd runs binary (this gyrum) or the
// gyrum-hook beside it: the same file, whatever the path or links.
func ownHook(cmd, binary string) bool {
	prog, ok := setup.HookBinary(cmd)
	if !ok || binary == "" {
		return false
	}
	if !strings.ContainsRune(prog, '/') {
		p, err := exec.LookPath(prog)
		if err != nil {
			return false
		}
		prog = p
	}
	st, err := os.Stat(prog)
	if err != nil {
		return false
	}
	for _, own := range []string{binary, filepath.Join(filepath.Dir(binary), setup.HookBinaryName)} {
		if o, err := os.Stat(own); err == nil && os.SameFile(st, o) {
			return true
		}
	}
	return false
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// firstLine is the first non-empty line of s, for details.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// checkHookRun is the live self-test of one hook command: in a scratch
// worktree whose .gyrum/ holds a lease and a last-activity an hour old, it
// runs the command line through sh -c with a sample PostToolUse payload on
// stdin (cwd the scratch worktree, as Claude Code sends it), in its own
// process group, and kills that group when the hook outlives its timeout.
// The hook passes when it exits 0 within the timeout and last-activity
// moved.
func checkHookRun(ctx context.Context, e setup.HookEntry, prepared gyrumdir.Prepared) Check {
	timeout := DefaultHookTimeout
	if e.Timeout > 0 {
		timeout = time.Duration(e.Timeout * float64(time.Second))
	}
	s, f := makeScratch(prepared)
	if f != nil {
		return f.check()
	}
	defer s.remove()
	run, f := runHook(ctx, s, e.Command, timeout)
	if f == nil {
		f = run.fault()
	}
	if f != nil {
		return f.check()
	}
	rec, ok, mtime, err := s.d.ReadActivity()
	if err != nil || !mtime.After(s.old) {
		return hookFault{fmt.Sprintf("the hook %q exited 0 in %s but did not move %s: it is not the activity hook, or it looks for .gyrum/ elsewhere",
			e.Command, run.took, gyrumdir.ActivityFile), "run gyrum setup to wire gyrum's hook", "gyrum setup"}.check()
	}
	c := Check{Name: "hook-run", Status: StatusOK,
		Detail: fmt.Sprintf("ran %q with a PostToolUse payload: exit 0 in %s (timeout %s), %s moved", e.Command, run.took, timeout, gyrumdir.ActivityFile)}
	if !ok || rec.Source != gyrumdir.SourceHook {
		c.Detail += "; it wrote no hook record (a gyrum from before hook reporting: upgrade it so loops report hook_seen)"
	}
	return c
}

// hookFault is why a hook's self-test failed, and what to do about it.
// hookFault is a failed self-test: what happened, the fix, and the
// command that fixes it on its own (empty when a person must look).
type hookFault struct{ detail, fix, command string }

func (f hookFault) check() Check {
	return Check{Name: "hook-run", Status: StatusFail, Detail: f.detail, Fix: f.fix, Command: f.command}
}

// scratch is the self-test's worktree: a temporary directory whose .gyrum/
// holds a lease and a last-activity from old, recorded as prepared (the
// hook writes only into worktrees a start-work prepared) for the length of
// the test.
type scratch struct {
	dir      string
	d        gyrumdir.Dir
	old      time.Time
	prepared gyrumdir.Prepared // zero when not recorded
}

// makeScratch makes the scratch worktree; on a fault nothing is left.
func makeScratch(prepared gyrumdir.Prepared) (_ *scratch, f *hookFault) {
	unwritable := func(err error) *hookFault {
		return &hookFault{"cannot make a scratch worktree: " + err.Error(), "make the temporary directory (" + os.TempDir() + ") writable", ""}
	}
	dir, err := os.MkdirTemp("", "gyrum-doctor-selftest-")
	if err != nil {
		return nil, unwritable(err)
	}
	s := &scratch{dir: dir}
	defer func() {
		if f != nil {
			s.remove()
		}
	}()
	if s.d, err = gyrumdir.Create(dir); err != nil {
		return nil, unwritable(err)
	}
	if prepared != (gyrumdir.Prepared{}) {
		if err := prepared.Add(s.d.Worktree); err != nil {
			return nil, &hookFault{"cannot record the scratch worktree in $GYRUM_HOME: " + err.Error(), "make $GYRUM_HOME (default ~/.gyrum) writable", ""}
		}
		s.prepared = prepared
	}
	s.old = time.Now().Add(-time.Hour).Truncate(time.Second)
	host, _ := os.Hostname()
	if err := s.d.WriteLease(gyrumdir.Lease{Ticket: SelfTestTicket, Epoch: 1, WarpURL: "http://127.0.0.1:1", Agent: "gyrum-doctor", Host: host, ClaimedAt: s.old}); err != nil {
		return nil, unwritable(err)
	}
	if err := s.d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceStartWork, At: s.old}); err != nil {
		return nil, unwritable(err)
	}
	return s, nil
}

// remove takes the scratch worktree back: out of the prepared ones, then
// off the disk.
func (s *scratch) remove() {
	if s.prepared != (gyrumdir.Prepared{}) {
		_ = s.prepared.Remove(s.d.Worktree)
	}
	os.RemoveAll(s.dir)
}

// command is the hook command line run as Claude Code runs it for a Bash call
// in the scratch worktree: sh -c, a PostToolUse payload on stdin, in its
// own process group.
func (s *scratch) command(line string) *exec.Cmd {
	payload, _ := json.Marshal(map[string]any{
		"session_id": "gyrum-doctor-selftest", "transcript_path": "", "cwd": s.dir, "permission_mode": "default",
		"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "true"},
		"tool_response": map[string]any{"stdout": "", "stderr": "", "interrupted": false}, "tool_use_id": "toolu_gyrum_doctor_selftest",
	})
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = s.dir
	cmd.Stdin = bytes.NewReader(payload)
	// No CLAUDE_PID (nor any agent's pid: OPENCODE_PID, ...): run inside
	// an agent's session, the hook would credit that agent's own lease
	// instead of the scratch worktree.
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+s.dir)
	for _, k := range agent.PIDEnvs() {
		cmd.Env = append(cmd.Env, k+"=")
	}
	if s.prepared != (gyrumdir.Prepared{}) {
		cmd.Env = append(cmd.Env, "GYRUM_HOME="+s.prepared.Home())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second // a grandchild holding the pipes must not hold doctor
	return cmd
}

// hookOutcome is how a hook run that ended by itself went.
type hookOutcome struct {
	line   string // the command line
	code   int
	stderr string // its first 4 KiB
	took   time.Duration
}

// runHook runs the hook command line in s and waits for it, killing its
// process group when it outlives timeout or ctx ends: both are faults, as
// is a hook that could not be started or waited for.
func runHook(ctx context.Context, s *scratch, line string, timeout time.Duration) (hookOutcome, *hookFault) {
	cmd := s.command(line)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = 4096, 4096
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return hookOutcome{}, &hookFault{fmt.Sprintf("cannot run the hook %q: %v", line, err), "check that /bin/sh exists and runs", ""}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var runErr error
	timedOut := false
	select {
	case runErr = <-done:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		timedOut = true
	}
	if timedOut {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group: sh and whatever it started
		<-done
		if ctx.Err() != nil {
			return hookOutcome{}, &hookFault{fmt.Sprintf("the hook %q was still running when doctor was stopped", line), "run doctor again", ""}
		}
		return hookOutcome{}, &hookFault{fmt.Sprintf("the hook %q did not finish within its timeout of %s and was killed: the agent kills it the same way, and no activity is recorded",
			line, timeout), fmt.Sprintf("the hook must return in milliseconds: run it by hand (echo '{}' | %s) to see where it blocks, then gyrum setup to rewrite it", line), ""}
	}
	out := hookOutcome{line: line, took: time.Since(start).Round(time.Millisecond), stderr: stderr.b.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(runErr, &exitErr):
		out.code = exitErr.ExitCode()
	case runErr != nil && !errors.Is(runErr, exec.ErrWaitDelay):
		return out, &hookFault{fmt.Sprintf("the hook %q: %v", line, runErr), "run gyrum setup to rewrite the hook", "gyrum setup"}
	}
	return out, nil
}

// fault is the fault of a hook that exited other than 0, nil for 0.
func (o hookOutcome) fault() *hookFault {
	errLine := firstLine(o.stderr)
	if errLine != "" {
		errLine = ": " + errLine
	}
	switch o.code {
	case 0:
		return nil
	case 126, 127: // sh: not executable, not found
		return &hookFault{fmt.Sprintf("the hook %q cannot start its program (exit %d%s)", o.line, o.code, errLine),
			"run gyrum setup with the gyrum you use now: it rewrites the hook with that binary's absolute path", "gyrum setup"}
	}
	return &hookFault{fmt.Sprintf("the hook %q exited %d%s", o.line, o.code, errLine),
		fmt.Sprintf("run it by hand to see why (echo '{}' | %s); a gyrum that fails here is broken: reinstall it and run gyrum setup", o.line), ""}
}
