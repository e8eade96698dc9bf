package claudecode_test

// Issue 44 with the real Claude Code: activity is not progress. A true
// loop is caught and the model told once; work that looks alike but
// progresses is never looping (the false positives the issue names).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// progressSession runs claim, then work, then a call held until the test
// has looked (the lease's verdicts sampled all along), and returns the
// model, the verdicts seen while the lease was held and the worktree.
func progressSession(t *testing.T, ticket string, work []agenttest.Call, look func(d gyrumdir.Dir, w *e2etest.Watcher)) (*agenttest.FakeModel, []warp.Verdict) {
	t.Helper()
	ws := warptest.Start(t)
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	held := Bash("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	turns := []agenttest.Turn{agenttest.Calls(claimCall(ticket + " --json"))}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	turns = append(turns, agenttest.Calls(held), agenttest.Text("Done."))
	model := agenttest.NewAnthropic(t, turns...)
	w := e2etest.WatchTicket(t, ws, ticket)
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	look(d, w)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()
	return model, w.Verdicts()
}

// The same failing command 6 times: the verdict turns looping (the loop
// reports the repetition at its next tick) and the model is told once,
// right after the third failure (the same call failing with the same
// error 3 times), in the PostToolUseFailure hook's additional context.
func TestPointLoopingCaughtAndTold(t *testing.T) {
	claude.Require(t)
	var fails []agenttest.Call
	for range 6 {
		fails = append(fails, Bash("echo 'TypeError: x is not a function' >&2; exit 1"))
	}
	model, verdicts := progressSession(t, "T-LOOP", fails, func(d gyrumdir.Dir, w *e2etest.Watcher) {
		e2etest.Poll(t, "the verdict looping", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictLooping) })
	})
	if !slices.Contains(verdicts, warp.VerdictLooping) {
		t.Fatalf("verdicts %v: never looping", verdicts)
	}
	const told = "gyrum: you are looping on `Bash: echo 'TypeError: x is not a function' >&2; exit 1` ×3"
	for i, f := range fails {
		tr, _ := model.ToolResult(f.ID)
		after := strings.Join(tr.After, "\n")
		if got := strings.Contains(after, told); got != (i == 2) {
			t.Errorf("after failure %d: told %v (%q), want %v", i+1, got, after, i == 2)
		}
	}
	main := model.MainRequests()
	n := 0
	for _, x := range main[len(main)-1].Texts() {
		n += strings.Count(x, "gyrum: you are looping")
	}
	if n != 1 {
		t.Errorf("the last request shows the loop notice %d times, want once", n)
	}
}

// Work that repeats a command or a tool but progresses is never looping
// and the model is never told: polling whose output changes each time
// (gh pr checks-style), reads of different files, edit-then-test cycles
// with different edits (the test failing alike each time).
func TestPointProgressIsNotLooping(t *testing.T) {
	claude.Require(t)
	var work []agenttest.Call
	for i := range 6 {
		work = append(work, Bash(fmt.Sprintf("echo 'checks: %d of 6 pending'; date +%%s%%N", 6-i)))
	}
	dir := t.TempDir()
	for i := range 6 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(p, []byte("same content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		work = append(work, Read(p))
	}
	test := "grep -q fixed " + shellquote.Quote(filepath.Join(dir, "code.txt")) + " || { echo 'FAIL: not fixed' >&2; exit 1; }"
	for i := range 3 {
		work = append(work, Write(filepath.Join(dir, "code.txt"), fmt.Sprintf("attempt %d\n", i)), Bash(test))
	}
	model, verdicts := progressSession(t, "T-PROG", work, func(gyrumdir.Dir, *e2etest.Watcher) {})
	if slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v: looping", verdicts)
	}
	if model.SawText("gyrum: you are looping") {
		t.Error("the model was told it loops")
	}
}

// spinningSession runs claim, then reads of n different files, then a
// call held until the test has looked, against a warp whose progress
// deadline is spin; it returns the model and the verdicts while held.
func spinningSession(t *testing.T, ticket string, n int, spin time.Duration, look func(d gyrumdir.Dir, w *e2etest.Watcher)) (*agenttest.FakeModel, []warp.Verdict, []agenttest.Call) {
	t.Helper()
	p := warp.DefaultPolicy()
	p.SpinAfter = spin
	ws := warptest.StartWithPolicy(t, p)
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	held := Bash("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	next := Bash("echo next")
	turns := []agenttest.Turn{agenttest.Calls(claimCall(ticket + " --json"))}
	for i := range n {
		path := filepath.Join(tmp, fmt.Sprintf("src%02d.go", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf("package p\n\nconst X%d = %d\n", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
		turns = append(turns, agenttest.Calls(Read(path)))
	}
	turns = append(turns, agenttest.Calls(held), agenttest.Calls(next), agenttest.Text("Done."))
	model := agenttest.NewAnthropic(t, turns...)
	w := e2etest.WatchTicket(t, ws, ticket)
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	look(d, w)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()
	return model, w.Verdicts(), []agenttest.Call{held, next}
}

// Exploration — 40 reads of different files, no edit — for less than the
// progress deadline is never spinning (nor looping), and the model is
// never told.
func TestPointExplorationIsNotSpinning(t *testing.T) {
	claude.Require(t)
	model, verdicts, _ := spinningSession(t, "T-EXPLORE", 40, 10*time.Minute, func(gyrumdir.Dir, *e2etest.Watcher) {})
	if slices.Contains(verdicts, warp.VerdictSpinning) || slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v during exploration", verdicts)
	}
	if model.SawText("gyrum: no progress") || model.SawText("gyrum: you are looping") {
		t.Error("the model was told it makes no progress")
	}
}

// Active without progress past the deadline (reads of different files,
// then a long call, with nothing new in the worktree): spinning, and the
// model told once, on the next call after warp said so.
func TestPointSpinningCaughtAndTold(t *testing.T) {
	claude.Require(t)
	model, verdicts, calls := spinningSession(t, "T-SPIN", 3, 2*time.Second, func(d gyrumdir.Dir, w *e2etest.Watcher) {
		e2etest.Poll(t, "the verdict spinning", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictSpinning) })
		// The loop's nudge, left after the answer that said spinning.
		e2etest.Poll(t, "the loop's nudge", func() bool { return e2etest.Exists(d.File(gyrumdir.NudgeFile)) })
	})
	if !slices.Contains(verdicts, warp.VerdictSpinning) {
		t.Fatalf("verdicts %v: never spinning", verdicts)
	}
	held, next := calls[0], calls[1]
	const told = "gyrum: no progress on ticket T-SPIN"
	tr, _ := model.ToolResult(held.ID)
	if after := strings.Join(tr.After, "\n"); !strings.Contains(after, told) || !strings.Contains(after, "gyrum release") {
		t.Errorf("after the held call's result %q, want %q and what to do", after, told)
	}
	if tr, _ := model.ToolResult(next.ID); strings.Contains(strings.Join(tr.After, "\n"), told) {
		t.Error("told again after the next call")
	}
}

// hungSession runs claim, then one Bash call with command, with the
// hung-call rule scaled to 0.5 s (staleness 1 s), and returns the
// heartbeats of the ticket while the call ran, the call and the model.
func hungSession(t *testing.T, ticket, command string) ([]warptest.Beat, agenttest.Call, *agenttest.FakeModel) {
	t.Helper()
	ws := warptest.Start(t)
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	call := Bash(command)
	model := agenttest.NewAnthropic(t, agenttest.Calls(claimCall(ticket+" --json")), agenttest.Calls(call), agenttest.Text("Done."))
	env := e2etest.AgentEnv(t, ws.URL(), 0.2, 1, 60)
	env["HEARTBEAT_HUNG_CALL_SECS"] = "0.5"
	s := start(t, model, project, agenttest.Options{Env: env})
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(call.ID))
	e2etest.Poll(t, "the call's marker", func() bool { return e2etest.Exists(marker) })
	e2etest.Poll(t, "the call's Post event", func() bool { return !e2etest.Exists(marker) })
	s.WaitOK(e2etest.SessionTimeout)
	return e2etest.BeatsOf(ws, ticket), call, model
}

// A long build — a foreground call whose shell runs for 4 s, using CPU and
// writing output — is never hung: its process backs it, every heartbeat
// while it runs is fresh.
func TestPointLongBuildIsNeverHung(t *testing.T) {
	claude.Require(t)
	beats, call, model := hungSession(t, "T-BUILD", "for i in 1 2 3 4 5 6 7 8; do echo step $i; timeout 0.5 sh -c 'while :; do :; done'; done; echo built")
	if tr, _ := model.ToolResult(call.ID); !strings.Contains(tr.Content, "built") {
		t.Fatalf("the build's output %q: it did not run to its end (the premise)", tr.Content)
	}
	for _, b := range beats {
		if b.Body.Stale {
			t.Errorf("a stale report while the build ran: %+v", b.Body)
		}
	}
}

// A hung shell call: the agent froze (SIGSTOP) with a Bash call unfinished
// in its transcript, and the call's process is gone (SIGKILL), so nothing
// backs the call's marker. Once the hung-call rule (scaled to 0.5 s) has
// passed, the call counts only its start: the reports turn stale
// (staleness 1 s) and the verdict stalled (warp's stall threshold 1 s),
// well before the in-flight cap
// (600 s) the call would otherwise count up to.
func TestPointHungCallGoesStale(t *testing.T) {
	claude.Require(t)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(60*time.Second, time.Second, 30*time.Second, time.Second))
	ws.Create("T-HUNG")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	pidFile := filepath.Join(t.TempDir(), "pid")
	call := Bash("echo $$ > " + shellquote.Quote(pidFile) + ".tmp && mv " + shellquote.Quote(pidFile) + ".tmp " + shellquote.Quote(pidFile) + "; exec sleep 600")
	model := agenttest.NewAnthropic(t, agenttest.Calls(claimCall("T-HUNG --json")), agenttest.Calls(call), agenttest.Text("Done."))
	env := e2etest.AgentEnv(t, ws.URL(), 0.2, 1, 600)
	env["HEARTBEAT_HUNG_CALL_SECS"] = "0.5"
	w := e2etest.WatchTicket(t, ws, "T-HUNG")
	s := start(t, model, project, agenttest.Options{Env: env})
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(call.ID))
	e2etest.Poll(t, "the call's process and marker", func() bool { return e2etest.Exists(pidFile) && e2etest.Exists(marker) })
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("the call's pid %q: %v", data, err)
	}
	agent := s.AgentPid()
	if agent == 0 {
		t.Fatal("no agent process")
	}
	// While the call's process lives the reports are fresh (the premise).
	e2etest.Poll(t, "a fresh report naming the call in flight", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-HUNG") {
			if b.Body.InFlight != "" && !b.Body.Stale {
				return true
			}
		}
		return false
	})
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(agent, syscall.SIGCONT); s.Kill() })
	hungAt := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e2etest.Poll(t, "a stale report", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-HUNG") {
			if b.Body.Stale {
				return true
			}
		}
		return false
	})
	e2etest.Poll(t, "the verdict stalled", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictStalled) })
	for _, b := range e2etest.BeatsOf(ws, "T-HUNG") {
		if b.Body.Stale {
			if b.At.Before(hungAt) {
				t.Errorf("a stale report before the call hung: %+v", b.Body)
			}
		}
	}
	if !e2etest.Exists(marker) {
		t.Error("the marker is gone: the agent finished the call after all (the premise)")
	}
	w.Stop()
}
