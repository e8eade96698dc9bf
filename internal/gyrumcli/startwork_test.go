package gyrumcli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// sessionOf reads the session id (field 6) of /proc/PID/stat.
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	sid, _ := strconv.Atoi(f[3])
	return sid
}

func TestStartWorkDetachedLoopOrphaned(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-1")
	cmd, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	// e.gyrum waits for stdout and stderr to close: it returns only because
	// the loop does not hold them.
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-1", "--watch-pid", strconv.Itoa(watched.PID), "--json", "--agent", "O"))
	if sr.Ticket != "T-1" || sr.Epoch != 1 || sr.Dir != wt || sr.WatchedPID != watched.PID || sr.WatchedHow != "--watch-pid" || sr.Agent != "O" {
		t.Fatalf("start-work printed %+v", sr)
	}
	loop, err := proc.Lookup(sr.LoopPID)
	if err != nil {
		t.Fatalf("loop pid %d: %v", sr.LoopPID, err)
	}
	if runtime.GOOS == "linux" {
		if sid := sessionOf(t, loop.PID); sid != loop.PID {
			t.Errorf("loop session %d, want its own (%d)", sid, loop.PID)
		}
		for fd := 0; fd <= 2; fd++ {
			if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", loop.PID, fd)); target != os.DevNull {
				t.Errorf("loop fd %d is %q, want /dev/null", fd, target)
			}
		}
	}
	d, _ := gyrumdir.Open(wt)
	if l, err := d.ReadLease(); err != nil || l.Ticket != "T-1" || l.Epoch != 1 || l.WarpURL != e.ws.URL() {
		t.Fatalf("lease.json: %+v, %v", l, err)
	}
	if p, err := d.ReadPID(gyrumdir.ParentPIDFile); err != nil || p != watched {
		t.Fatalf("heartbeat.parent.pid: %v, %v, want %v", p, err, watched)
	}
	if live := e.loopsRunning(); len(live) != 1 || live[0].Identity() != loop || live[0].Dir != wt {
		t.Fatalf("registry: %+v", live)
	}
	// The agent is SIGKILLed while the loop's third POST is in flight.
	var killed mark
	e.ws.SetBefore(func(n int, b client.HeartbeatRequest) {
		if n == 3 {
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			waitFor(t, "the agent to die", func() bool { return !watched.Alive() })
			killed.put(n, 0)
		}
	})
	waitFor(t, "the loop to exit", func() bool { return !loop.Alive() })
	n, _, _ := killed.get()
	after := e.ws.Beats()[n:]
	if len(after) != 1 || after[0].Body.Exit != "parent-exited" {
		t.Fatalf("after the kill the server got %+v, want one exit report", after)
	}
	if _, err := d.ReadPID(gyrumdir.LoopPIDFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("heartbeat.pid left: %v", err)
	}
	if entries, _, _ := gyrumdir.NewRegistry(e.home).List(); len(entries) != 0 {
		t.Errorf("registry entry left: %+v", entries)
	}
	if v := e.ws.Ticket("T-1"); v.Lease.Exit != "parent-exited" || v.Verdict != warp.VerdictExited {
		t.Errorf("server: exit %q verdict %q", v.Lease.Exit, v.Verdict)
	}
}

// mark is a value a server hook sets and the test reads.
type mark struct {
	mu     sync.Mutex
	n, aux int
	set    bool
}

func (m *mark) put(n, aux int) {
	m.mu.Lock()
	m.n, m.aux, m.set = n, aux, true
	m.mu.Unlock()
}

func (m *mark) get() (int, int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n, m.aux, m.set
}

func TestWedgedAgentAndTheHook(t *testing.T) {
	e := newEnv(t)
	e.vars["HEARTBEAT_ACTIVITY_STALENESS_SECS"] = "1"
	e.ws.Create("T-w")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sub := filepath.Join(wt, "src", "pkg")
	os.MkdirAll(sub, 0o755)
	e.startResult(e.gyrum(wt, "", "start-work", "T-w", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	d, _ := gyrumdir.Open(wt)
	state := func() gyrumdir.LoopState { s, _ := d.ReadState(); return s }
	stale := func() int {
		n := 0
		for _, b := range e.ws.Answered() {
			if b.Body.Stale {
				n++
			}
		}
		return n
	}
	waitFor(t, "stale reports", func() bool { return stale() >= 3 })
	if st := state(); st.LastOutcome != "stale-report" {
		t.Fatalf("state while wedged: %+v", st)
	}
	if v := e.ws.Ticket("T-w"); v.Lease.ExpiresAt.After(v.Lease.LastActivityAt.Add(warp.DefaultLeaseWindow + time.Second)) {
		t.Fatalf("stale reports extended the lease: expires %v, last activity %v", v.Lease.ExpiresAt, v.Lease.LastActivityAt)
	}
	n := len(e.ws.Answered())
	// A tool call starts (PreToolUse from a subdirectory): fresh again. No
	// process of the agent backs it (a denied call looks the same), so it
	// counts as activity at its start.
	pre := `{"session_id":"s","transcript_path":"/t.jsonl","cwd":"` + sub + `","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make test"},"tool_use_id":"toolu_9"}`
	if r := e.gyrum(t.TempDir(), pre, "touch-activity"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("touch-activity: %+v", r)
	}
	waitFor(t, "a fresh heartbeat for the tool call", func() bool {
		bs := e.ws.Answered()
		return len(bs) > n && !bs[len(bs)-1].Body.Stale
	})
	if bs := e.ws.Answered(); *bs[len(bs)-1].Body.ActivityAgeS > 1 {
		t.Fatalf("heartbeat during the call: %+v", bs[len(bs)-1].Body)
	}
	post := strings.Replace(strings.Replace(pre, "PreToolUse", "PostToolUse", 1), `"tool_use_id"`, `"tool_response":{"stdout":"ok"},"tool_use_id"`, 1)
	if r := e.gyrum(t.TempDir(), post, "touch-activity"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("touch-activity: %+v", r)
	}
	m := len(e.ws.Answered())
	waitFor(t, "a heartbeat after the call", func() bool { return len(e.ws.Answered()) > m })
	if b := e.ws.Answered()[m]; b.Body.InFlight != "" || *b.Body.ActivityAgeS > 1 || b.Body.Stale {
		t.Fatalf("heartbeat after the call: %+v", b.Body)
	}
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Fatalf("markers left: %v", ms)
	}
	e.inproc(wt, "release")
}

func TestEndedElsewhereLoopExits(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-e")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-e", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	loop, _ := proc.Lookup(sr.LoopPID)
	waitFor(t, "a heartbeat", func() bool { return e.ws.Count() >= 1 })
	if _, err := e.ws.Svc.Complete(context.Background(), "T-e", sr.Epoch, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the loop to exit on 410", func() bool { return !loop.Alive() })
	bs := e.ws.Answered()
	if last := bs[len(bs)-1]; last.Status != 410 {
		t.Fatalf("last answer %d, want 410", last.Status)
	}
	// release afterwards: the 410 is reported, the local state cleaned.
	r := e.gyrum(wt, "", "release")
	if r.code != 0 || !strings.Contains(r.stdout, "lease_ended") {
		t.Fatalf("release: %+v", r)
	}
	d, _ := gyrumdir.Open(wt)
	if d.HasLease() {
		t.Fatal("lease.json left after release")
	}
}

func TestWrapperPassesExitCodeAndEndsLease(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-x")
	wt := mkdir(t)
	r := e.gyrum(wt, "", "start-work", "T-x", "--", "sh", "-c", "echo from-cmd; exit 3")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr: %s", r.code, r.stderr)
	}
	if r.stdout != "from-cmd\n" {
		t.Fatalf("stdout %q: CMD's output must stay its own", r.stdout)
	}
	if !strings.Contains(r.stderr, "claimed T-x epoch 1") || !strings.Contains(r.stderr, "released T-x") {
		t.Fatalf("stderr %q", r.stderr)
	}
	assertEnded(t, e, "T-x", wt, "command-exited")
}

// assertEnded checks that no loop runs for wt, the lease was released
// (ticket open again) and .gyrum/ holds no lease.
func assertEnded(t *testing.T, e *env, ticket, wt, reason string) {
	t.Helper()
	if pids := heartbeatProcesses(wt); len(pids) != 0 {
		t.Errorf("loops still running for %s: %v", wt, pids)
	}
	if live := e.loopsRunning(); len(live) != 0 {
		t.Errorf("registry lists live loops: %+v", live)
	}
	v := e.ws.Ticket(ticket)
	if v.Ticket.State != warp.TicketOpen || v.Lease == nil || v.Lease.State != warp.LeaseReleased || v.Lease.EndReason != reason {
		t.Errorf("ticket %s: state %s, lease %+v; want open, released (%s)", ticket, v.Ticket.State, v.Lease, reason)
	}
	if d, err := gyrumdir.At(wt); err == nil && d.HasLease() {
		t.Errorf("lease.json left in %s", wt)
	}
}

// startWrapper runs `gyrum start-work TICKET -- sleep 1000` in wt and waits
// until its loop and the wrapped sleep run. done closes when the wrapper
// has exited; errb collects its stderr.
func startWrapper(t *testing.T, e *env, wt, ticket string) (cmd *exec.Cmd, done chan struct{}, child proc.Identity, errb *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(gyrumBin, "start-work", ticket, "--", "sleep", "1000")
	cmd.Dir, cmd.Env = wt, e.environ()
	errb = &bytes.Buffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	waitFor(t, "the loop and the command", func() bool {
		if len(e.loopsRunning()) != 1 {
			return false
		}
		pids, _ := proc.List()
		for _, pid := range pids {
			if in, err := proc.Stat(pid); err == nil && in.PPID == cmd.Process.Pid && in.Name == "sleep" {
				child = in.Identity
				return true
			}
		}
		return false
	})
	return cmd, done, child, errb
}

func TestWrapperSIGTERM(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-s")
	wt := mkdir(t)
	cmd, done, child, errb := startWrapper(t, e, wt, "T-s")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("wrapper did not exit after SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want %d\nstderr: %s", code, 128+int(syscall.SIGTERM), errb.String())
	}
	if child.Alive() {
		t.Fatal("the command survived the forwarded SIGTERM")
	}
	assertEnded(t, e, "T-s", wt, "command-exited")
}

// The wrapper SIGKILLed (or OOM-killed) forwards nothing, yet the wrapped
// agent must not run on without its lease: the kernel's parent-death
// signal ends it. The loop sees its watched process (the wrapper) gone and
// sends its exit report. The wrapped agent is also in the agent index, so
// its hooks credit the lease from any cwd.
func TestWrapperKilledTakesTheCommandWithIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("macOS has no parent-death signal: best effort there")
	}
	e := newEnv(t)
	e.ws.Create("T-k")
	wt := mkdir(t)
	cmd, done, child, _ := startWrapper(t, e, wt, "T-k")
	t.Cleanup(func() { proc.Signal(child, syscall.SIGKILL) })
	x := gyrumdir.NewAgentIndex(e.home)
	// The wrapper records the command once it runs: right after the start.
	waitFor(t, "the wrapped command in the agent index", func() bool {
		got, _ := x.Worktrees(child)
		return len(got) == 1 && got[0] == wt
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	waitFor(t, "the wrapped command to die with the wrapper", func() bool { return !child.Alive() })
	waitFor(t, "the loop's exit report", func() bool { return e.ws.Lease("T-k").Exit == "parent-exited" })
}

// A CMD that cannot be found on $PATH or at its absolute path is refused
// before the claim: the ticket keeps its epoch and its history.
func TestWrapperCommandNotFoundBeforeTheClaim(t *testing.T) {
	e := newEnv(t)
	wt := mkdir(t)
	notExec := filepath.Join(t.TempDir(), "data.txt")
	os.WriteFile(notExec, []byte("x"), 0o644)
	for i, c := range []struct {
		cmd  string
		code int
	}{{"no-such-command-anywhere", 127}, {filepath.Join(t.TempDir(), "no-such-command"), 127}, {notExec, 126}} {
		ticket := fmt.Sprintf("T-nf%d", i)
		e.ws.Create(ticket)
		r := e.gyrum(wt, "", "start-work", ticket, "--", c.cmd)
		if r.code != c.code || !strings.Contains(r.stderr, c.cmd) || !strings.Contains(r.stderr, "nothing was claimed") {
			t.Fatalf("start-work -- %s: %+v, want exit %d naming the command", c.cmd, r, c.code)
		}
		if v := e.ws.Ticket(ticket); v.Ticket.State != warp.TicketOpen || v.Lease != nil {
			t.Fatalf("%s after the refusal: %s, lease %+v; want open, never claimed", ticket, v.Ticket.State, v.Lease)
		}
	}
}

// A CMD found only once it starts (a path relative to the worktree) that
// fails to start: the claim is undone.
func TestWrapperCommandNotFound(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-nf")
	wt := mkdir(t)
	r := e.gyrum(wt, "", "start-work", "T-nf", "--", "./no-such-command")
	if r.code != 127 || !strings.Contains(r.stderr, "no-such-command") {
		t.Fatalf("got %+v, want exit 127 naming the command", r)
	}
	// The loop had been spawned and registered: it must be gone.
	if bs := e.ws.Beats(); len(bs) == 0 {
		t.Log("the loop did not POST before it was reaped")
	}
	assertEnded(t, e, "T-nf", wt, "start-work-failed")
}

func TestLoopThatCannotRegister(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-r")
	// The registry directory is a file: the loop cannot register (the
	// rest of GYRUM_HOME works, start-work's lock included).
	os.WriteFile(filepath.Join(e.home, "run"), []byte("x"), 0o600)
	wt := mkdir(t)
	_, watched := agent(t, "sleep", "1000")
	r := e.gyrum(wt, "", "start-work", "T-r", "--watch-pid", strconv.Itoa(watched.PID))
	if r.code != 1 || !strings.Contains(r.stderr, "exited before registering") || !strings.Contains(r.stderr, "register") {
		t.Fatalf("got %+v", r)
	}
	assertEnded(t, e, "T-r", wt, "start-work-failed")
}

func initRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	os.Mkdir(repo, 0o755)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func TestStartWorkWorktree(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-7")
	repo := initRepo(t)
	root := t.TempDir()
	e.vars["GYRUM_WORKTREE_ROOT"] = root
	_, watched := agent(t, "sleep", "1000")
	sr := e.startResult(e.gyrum(repo, "", "start-work", "T-7", "--worktree", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	want := filepath.Join(root, "repo-T-7")
	if sr.Dir != want || sr.Branch != "gyrum/T-7" {
		t.Fatalf("got dir %s branch %s, want %s gyrum/T-7", sr.Dir, sr.Branch, want)
	}
	if got := gitOut(t, want, "rev-parse", "--abbrev-ref", "HEAD"); got != "gyrum/T-7" {
		t.Fatalf("worktree HEAD %q", got)
	}
	if list := gitOut(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+want) {
		t.Fatalf("git worktree list:\n%s", list)
	}
	d, err := gyrumdir.Open(want)
	if err != nil || !d.HasLease() {
		t.Fatalf(".gyrum in the new worktree: %v", err)
	}
	if r := e.gyrum(want, "", "release"); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	// Claimed again: the branch exists, the old worktree was kept by
	// release: a new directory is refused with a clear message.
	r := e.gyrum(repo, "", "start-work", "T-7", "--worktree", "--watch-pid", strconv.Itoa(watched.PID))
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("second --worktree: %+v", r)
	}
	assertEnded(t, e, "T-7", want, "start-work-failed")
}

func TestStartWorkWorktreeFailureUndoesAll(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-8")
	repo := initRepo(t)
	root := t.TempDir()
	e.vars["GYRUM_WORKTREE_ROOT"] = root
	r := e.gyrum(repo, "", "start-work", "T-8", "--worktree", "--", "./missing-cmd")
	if r.code != 127 {
		t.Fatalf("got %+v, want 127", r)
	}
	assertWorktreeUndone(t, e, repo, filepath.Join(root, "repo-T-8"), "T-8")
}

// assertWorktreeUndone checks a start-work --worktree that failed or was
// interrupted: the worktree gone from disk and from git, the claim
// released, no loop.
func assertWorktreeUndone(t *testing.T, e *env, repo, wt, ticket string) {
	t.Helper()
	if _, err := os.Stat(wt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worktree %s left behind: %v", wt, err)
	}
	if list := gitOut(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Errorf("git still lists the worktree:\n%s", list)
	}
	assertEnded(t, e, ticket, wt, "start-work-failed")
}

// Ctrl-C while start-work sets up (here: git checking out the worktree,
// held by the repository's post-checkout hook) undoes what it did — the
// claim released, the worktree removed, no lease.json, no loop — and
// exits 128+SIGINT; before, gyrum died with the ticket claimed by nobody.
// With -- CMD too: the signal is held for CMD only once CMD runs; before,
// a hook that never returned kept start-work waiting on git for ever.
func TestStartWorkInterruptedUndoesAll(t *testing.T) {
	t.Run("alone", func(t *testing.T) { startWorkInterrupted(t) })
	t.Run("with CMD", func(t *testing.T) { startWorkInterrupted(t, "--", "true") })
}

func startWorkInterrupted(t *testing.T, wrap ...string) {
	e := newEnv(t)
	e.ws.Create("T-9")
	repo := initRepo(t)
	root := t.TempDir()
	e.vars["GYRUM_WORKTREE_ROOT"] = root
	marks := t.TempDir()
	started, stop := filepath.Join(marks, "checkout-started"), filepath.Join(marks, "stop")
	// The hook waits for stop, or for marks to be gone (the test's temporary
	// directories are removed right after its cleanups): git is killed
	// under it, and it must not outlive the test.
	hook := "#!/bin/sh\ntouch '" + started + "'\nwhile [ -d '" + marks + "' ] && [ ! -e '" + stop + "' ]; do sleep 0.05; done\n"
	if err := os.WriteFile(filepath.Join(repo, ".git", "hooks", "post-checkout"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(stop, nil, 0o644) }) // ends the hook git leaves behind when killed
	_, watched := agent(t, "sleep", "1000")
	args := []string{"start-work", "T-9", "--worktree"}
	if len(wrap) == 0 {
		args = append(args, "--watch-pid", strconv.Itoa(watched.PID)) // with CMD gyrum watches itself
	}
	cmd := exec.Command(gyrumBin, append(args, wrap...)...)
	cmd.Dir, cmd.Env = repo, e.environ()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	waitFor(t, "git's checkout of the worktree", func() bool { _, err := os.Stat(started); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("start-work did not exit after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q; want %d and a word on the interruption", code, errb.String(), 128+int(syscall.SIGINT))
	}
	assertWorktreeUndone(t, e, repo, filepath.Join(root, "repo-T-9"), "T-9")
}

// Two start-works in one directory: the one that finds another setting
// the directory up refuses before it claims anything (they would both pass
// the check for an existing lease, and the loser's undo would clear the
// winner's files). The other start-work is stood in for by this test
// holding the lock; once it lets go, start-work runs.
func TestStartWorkRefusesADirectoryBeingSetUp(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-10")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	unlock, err := gyrumdir.LockStart(e.home, wt)
	if err != nil {
		t.Fatal(err)
	}
	r := e.gyrum(wt, "", "start-work", "T-10", "--watch-pid", strconv.Itoa(watched.PID))
	if r.code != 1 || !strings.Contains(r.stderr, "another gyrum start-work is setting it up") {
		t.Fatalf("start-work while another holds the directory: %+v", r)
	}
	if v := e.ws.Ticket("T-10"); v.Ticket.State != warp.TicketOpen || v.Lease != nil {
		t.Fatalf("T-10 after the refusal: state %s, lease %+v; want open, never claimed", v.Ticket.State, v.Lease)
	}
	if d, err := gyrumdir.At(wt); err == nil && d.HasLease() {
		t.Fatal("lease.json written by the refused start-work")
	}
	unlock()
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-10", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	if sr.Ticket != "T-10" {
		t.Fatalf("start-work after the lock was let go: %+v", sr)
	}
	// start-work let go of the lock once its loop was up.
	again, err := gyrumdir.LockStart(e.home, wt)
	if err != nil {
		t.Fatalf("the lock after start-work: %v", err)
	}
	again()
}

func TestStartWorkNext(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-a", "frontend")
	e.ws.Create("T-b", "backend")
	e.ws.Create("T-c", "backend", "db")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "--next", "--label", "backend", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	if sr.Ticket != "T-b" {
		t.Fatalf("claimed %s, want T-b (oldest with the label)", sr.Ticket)
	}
	if r := e.gyrum(wt, "", "release"); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
}

// copyBinary copies an executable to dir/name, so a process runs under a
// chosen name (what the ancestor walk matches).
func copyBinary(t *testing.T, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWatchedProcessResolution(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	sh, _ := exec.LookPath("sh")
	e := newEnv(t)
	bin := t.TempDir()
	// A Bash tool call: the agent runs bash -c, which runs gyrum; "; true"
	// keeps bash from exec-ing gyrum, so gyrum's parent is the short-lived bash.
	var lastStderr string // start-work's, of the last run
	// via, when set, is a second agent the first starts, with CLAUDE_PID
	// set to the first (what Claude Code hands down), which runs the call.
	run := func(t *testing.T, agentName, ticket string, extra map[string]string, via ...string) (gyrumcli.StartResult, int) {
		t.Helper()
		e.ws.Create(ticket)
		wt := mkdir(t)
		agentPath := copyBinary(t, sh, bin, agentName)
		script := fmt.Sprintf("%s -c '%s start-work %s --dir %s --json; true'", bash, gyrumBin, ticket, wt)
		if len(via) > 0 {
			// "; true" keeps each shell from exec-ing the next.
			script = fmt.Sprintf(`CLAUDE_PID=$$ %s -c "%s; true"; true`, copyBinary(t, sh, bin, via[0]), script)
		}
		cmd := exec.Command(agentPath, "-c", script)
		cmd.Env = e.environ()
		for k, v := range extra {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		agentPID := cmd.Process.Pid
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		sr := e.startResult(result{stdout: out.String(), stderr: errb.String()})
		lastStderr = errb.String()
		if r := e.gyrum(wt, "", "release"); r.code != 0 {
			t.Fatalf("release: %+v", r)
		}
		return sr, agentPID
	}
	t.Run("known agent", func(t *testing.T) {
		sr, pid := run(t, "claude", "T-anc1", nil)
		if sr.WatchedHow != "ancestor" || sr.WatchedPID != pid || sr.Watched != "claude" {
			t.Fatalf("watched %+v, want the claude process %d", sr, pid)
		}
	})
	t.Run("GYRUM_AGENT_PROCESS", func(t *testing.T) {
		sr, pid := run(t, "my-agent-7", "T-anc2", map[string]string{"GYRUM_AGENT_PROCESS": "^my-agent-[0-9]+$"})
		if sr.WatchedHow != "ancestor" || sr.WatchedPID != pid {
			t.Fatalf("watched %+v, want the my-agent process %d", sr, pid)
		}
	})
	t.Run("caller", func(t *testing.T) {
		// An agent gyrum does not know: its tool call's shell is passed,
		// the agent that runs it is watched, and start-work says so.
		if name, ok := agentAncestor(); ok {
			t.Skipf("the test itself runs under an agent (%s): the walk would find it", name)
		}
		sr, pid := run(t, "not-an-agent", "T-anc3", nil)
		if sr.WatchedHow != "caller" || sr.WatchedPID != pid || sr.Watched != "not-an-agent" {
			t.Fatalf("watched %+v, want the not-an-agent process %d above the call's bash", sr, pid)
		}
		if !strings.Contains(lastStderr, "no agent gyrum knows above start-work") || !strings.Contains(lastStderr, "1 shells and wrappers passed") {
			t.Errorf("no warning that an unknown agent is watched: %q", lastStderr)
		}
	})
	t.Run("parent", func(t *testing.T) {
		// A person at an interactive shell: the shell is watched.
		if name, ok := agentAncestor(); ok {
			t.Skipf("the test itself runs under an agent (%s): the walk would find it", name)
		}
		e.ws.Create("T-anc20")
		wt := mkdir(t)
		cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
		cmd.Env = e.environ()
		cmd.Stdin = strings.NewReader(fmt.Sprintf("%s start-work T-anc20 --dir %s --json\nexit\n", gyrumBin, wt))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shellPID := cmd.Process.Pid
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		sr := e.startResult(result{stdout: out.String(), stderr: errb.String()})
		if r := e.gyrum(wt, "", "release"); r.code != 0 {
			t.Fatalf("release: %+v", r)
		}
		if sr.WatchedHow != "parent" || sr.WatchedPID != shellPID {
			t.Fatalf("watched %+v, want the interactive bash %d", sr, shellPID)
		}
		if !strings.Contains(errb.String(), "no agent process found above start-work") {
			t.Errorf("no warning that only the parent is watched: %q", errb.String())
		}
	})
	t.Run("CLAUDE_PID", func(t *testing.T) {
		_, w := agent(t, "sleep", "1000")
		sr, _ := run(t, "claude", "T-anc4", map[string]string{"CLAUDE_PID": strconv.Itoa(w.PID)})
		if sr.WatchedHow != "CLAUDE_PID" || sr.WatchedPID != w.PID {
			t.Fatalf("watched %+v, want CLAUDE_PID %d", sr, w.PID)
		}
	})
	t.Run("CLAUDE_PID of the agent itself", func(t *testing.T) {
		sr, pid := run(t, "claude", "T-anc9", map[string]string{"CLAUDE_PID": ""}, "not-an-agent")
		if sr.WatchedHow != "CLAUDE_PID" || sr.WatchedPID != pid {
			t.Fatalf("watched %+v, want CLAUDE_PID %d: nothing but shells between", sr, pid)
		}
	})
	// Any agent's announced pid counts as CLAUDE_PID does (agent.PIDEnv):
	// opencode's OPENCODE_PID names the process, which is reported by its
	// agent's name.
	t.Run("OPENCODE_PID", func(t *testing.T) {
		oc := copyBinary(t, sh, bin, "opencode")
		_, w := agent(t, oc, "-c", "sleep 1000; true")
		sr, _ := run(t, "not-an-agent", "T-anc10", map[string]string{"OPENCODE_PID": strconv.Itoa(w.PID)})
		if sr.WatchedHow != "OPENCODE_PID" || sr.WatchedPID != w.PID || sr.Watched != "opencode" {
			t.Fatalf("watched %+v, want OPENCODE_PID %d, opencode", sr, w.PID)
		}
	})
	// Codex started from a Claude Code session runs start-work: CLAUDE_PID
	// is the Claude Code's, handed down; Codex is the agent to watch.
	t.Run("CLAUDE_PID handed down to another agent", func(t *testing.T) {
		sr, pid := run(t, "claude", "T-anc6", nil, "codex")
		if sr.WatchedHow != "ancestor" || sr.Watched != "codex" || sr.WatchedPID == pid {
			t.Fatalf("watched %+v, want the codex between start-work and the claude %d", sr, pid)
		}
	})
}

// agentAncestor reports whether an ancestor of the test process is a known
// agent (tests run from inside Claude Code, say).
func agentAncestor() (string, bool) {
	for pid := os.Getppid(); pid > 1; {
		in, err := proc.Stat(pid)
		if err != nil {
			return "", false
		}
		args, _ := proc.Cmdline(pid)
		names := []string{in.Name}
		for i, a := range args {
			if i < 2 {
				names = append(names, filepath.Base(a))
			}
		}
		for _, n := range names {
			switch n {
			case "claude", "codex", "gemini", "cursor-agent", "aider":
				return n, true
			}
		}
		pid = in.PPID
	}
	return "", false
}

// A descriptor start-work inherited from its caller never reaches the
// detached loop: `exec 3>&1; gyrum start-work … | cat` returns as soon as
// start-work does, not when the loop exits.
func TestLoopInheritsNoDescriptor(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-fd")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	cmd := exec.Command("sh", "-c", `exec 3>&1; "$0" start-work T-fd --watch-pid "$1" >/dev/null`, gyrumBin, strconv.Itoa(watched.PID))
	cmd.Dir, cmd.Env = wt, e.environ()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, out); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the caller's pipe is still open 15 s later: the loop inherited fd 3")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("start-work: %v", err)
	}
	if n := len(e.loopsRunning()); n != 1 {
		t.Fatalf("%d loops running, want the one start-work spawned", n)
	}
	e.inproc(wt, "release")
}

// With tokens, a lease is its claimant's: start-work keeps the lease
// secret warp returned in lease.json (0600) and the loop, release and
// complete-pr send it; another agent's token — even with the right ticket
// and epoch — can neither heartbeat nor release it, and is not told who
// holds it.
func TestLeaseBoundToItsClaimant(t *testing.T) {
	const tokA, tokB = "agent-a-token", "agent-b-token"
	e := newEnv(t)
	e.ws = warptest.StartWithTokens(t, warp.DefaultPolicy(), []httpapi.Token{{Role: httpapi.RoleAgent, Secret: tokA}, {Role: httpapi.RoleAgent, Secret: tokB}})
	e.vars["WARP_URL"], e.vars["WARP_TOKEN"] = e.ws.URL(), tokA
	e.ws.Create("T-b")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-b", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	d, _ := gyrumdir.Open(wt)
	l, err := d.ReadLease()
	if err != nil || len(l.LeaseSecret) < 32 {
		t.Fatalf("lease.json: %+v %v, want a lease secret", l, err)
	}
	if st, _ := os.Stat(d.File(gyrumdir.LeaseFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("lease.json mode %v", st.Mode().Perm())
	}
	waitFor(t, "two answered heartbeats", func() bool { return len(e.ws.Answered()) >= 2 })
	for _, b := range e.ws.Answered() {
		if b.Status != 200 {
			t.Fatalf("the holder's loop got %d", b.Status)
		}
	}
	other := client.NewClient(e.ws.URL(), tokB)
	two, age := 2, 1.0
	_, err = other.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: &two, Ticket: "T-b", Epoch: sr.Epoch, ActivityAgeS: &age})
	if !errors.Is(err, client.ErrNotHolder) {
		t.Errorf("another agent's heartbeat: %v, want not_holder", err)
	}
	_, err = other.Release(context.Background(), "T-b", client.ReleaseRequest{Epoch: sr.Epoch, Reason: "hijack"})
	if !errors.Is(err, client.ErrNotHolder) || !strings.Contains(err.Error(), "held by another agent") || strings.Contains(err.Error(), "epoch") {
		t.Errorf("another agent's release: %v", err)
	}
	if v := e.ws.Ticket("T-b"); v.Ticket.State != warp.TicketClaimed {
		t.Fatalf("ticket %s after the refused release", v.Ticket.State)
	}
	if r := e.inproc(wt, "release"); r.code != 0 {
		t.Fatalf("the holder's release: %+v", r)
	}
	if v := e.ws.Ticket("T-b"); v.Ticket.State != warp.TicketOpen {
		t.Errorf("ticket %s after the holder's release", v.Ticket.State)
	}
}

// Without --agent or GYRUM_AGENT the lease is labelled with the agent's
// product, the user and the host, so lists and "claimed by" errors name its
// holder: a watched process named like an agent gives its product, one
// that is not gives "agent".
func TestStartWorkDefaultAgentLabel(t *testing.T) {
	e := newEnv(t)
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = os.Getenv("LOGNAME")
	}
	for i, c := range []struct {
		exe, want string
	}{{"sleep", "agent"}, {"codex", "codex"}, {"claude", "claude-code"}} {
		ticket := fmt.Sprintf("T-label%d", i)
		e.ws.Create(ticket)
		exe := c.exe
		if exe != "sleep" { // a process whose executable is named like the agent
			exe = filepath.Join(t.TempDir(), c.exe)
			sleep, err := exec.LookPath("sleep")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(sleep, exe); err != nil {
				t.Fatal(err)
			}
		}
		_, watched := agent(t, exe, "1000")
		wt := mkdir(t)
		sr := e.startResult(e.gyrum(wt, "", "start-work", ticket, "--watch-pid", strconv.Itoa(watched.PID), "--json"))
		if user == "" {
			if !strings.HasPrefix(sr.Agent, c.want+":") || !strings.HasSuffix(sr.Agent, "@"+host) {
				t.Errorf("%s: agent %q, want %s:USER@%s", c.exe, sr.Agent, c.want, host)
			}
		} else if want := c.want + ":" + user + "@" + host; sr.Agent != want {
			t.Errorf("%s: agent %q, want %q", c.exe, sr.Agent, want)
		}
		e.gyrum(wt, "", "release")
	}
}

// A refused claim says what to do, and no unrelated warning comes first:
// the "watching its parent" warning is for a claim that succeeded.
func TestRefusedClaimSaysWhatToDo(t *testing.T) {
	e := newEnv(t)
	wt := mkdir(t)
	r := e.gyrum(wt, "", "start-work", "--next", "--label", "nosuch")
	if r.code != 1 || strings.Contains(r.stderr, "watching its parent") || !strings.Contains(r.stderr, "drop --label") {
		t.Errorf("start-work --next --label nosuch: %+v", r)
	}
	r = e.gyrum(wt, "", "start-work", "T-999")
	if r.code != 1 || strings.Contains(r.stderr, "watching its parent") || !strings.Contains(r.stderr, "not found") ||
		!strings.Contains(r.stderr, "gyrum start-work --next") {
		t.Errorf("start-work T-999: %+v", r)
	}
}
