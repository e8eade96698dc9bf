package codex_test

// Issue 44 under the real Codex CLI: its shell output carries a header
// that differs on every run (chunk id, wall time), which the fingerprint
// must ignore for a true loop to be seen; output that changes is progress.

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

// progressRun runs claim, work, then a call held until the verdict was
// looked at, and returns the model and the verdicts seen while held.
func progressRun(t *testing.T, ticket string, work []agenttest.Call, look func(w *e2etest.Watcher)) (*agenttest.FakeModel, []warp.Verdict) {
	t.Helper()
	return progressRunOn(t, warptest.Start(t), ticket, work, look)
}

// progressRunOn is progressRun against ws (a warp with a policy of the
// test's own: a progress deadline, say).
func progressRunOn(t *testing.T, ws *warptest.Server, ticket string, work []agenttest.Call, look func(w *e2etest.Watcher)) (*agenttest.FakeModel, []warp.Verdict) {
	t.Helper()
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	turns := []agenttest.Turn{agenttest.Calls(claimCall(ticket + " --json"))}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	turns = append(turns, agenttest.Calls(held), agenttest.Text("Done."))
	model := agenttest.NewResponses(t, turns...)
	w := e2etest.WatchTicket(t, ws, ticket)
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	look(w)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()
	return model, w.Verdicts()
}

// The same failing command 6 times: looping, and the model told once, at
// the fourth: Codex's PostToolUse carries the command's output alone (no
// exit status, no failure event), so the repetition counts as the same
// call with the same result (4), not as the same failure (3).
func TestLoopingCaughtAndTold(t *testing.T) {
	codex.Require(t)
	var fails []agenttest.Call
	for range 6 {
		fails = append(fails, Shell("echo 'TypeError: x is not a function' >&2; exit 1"))
	}
	model, verdicts := progressRun(t, "T-LOOP", fails, func(w *e2etest.Watcher) {
		e2etest.Poll(t, "the verdict looping", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictLooping) })
	})
	if !slices.Contains(verdicts, warp.VerdictLooping) {
		t.Fatalf("verdicts %v: never looping", verdicts)
	}
	const told = "gyrum: you are looping on `Bash: echo 'TypeError: x is not a function' >&2; exit 1` ×4"
	if !model.SawText(told) {
		r, _ := model.FirstWithText("gyrum: you are looping")
		for _, it := range r.Messages {
			if strings.Contains(it.Text(), "looping") {
				t.Logf("shown: %s", it.Text())
			}
		}
		t.Fatalf("the model was never shown %q", told)
	}
	last := model.MainRequests()[len(model.MainRequests())-1]
	n := 0
	for _, it := range last.Messages {
		n += strings.Count(it.Text(), "gyrum: you are looping")
	}
	if n != 1 {
		t.Errorf("the last request shows the loop notice %d times, want once", n)
	}
}

// Polling whose output changes each time is never looping.
func TestPollingIsNotLooping(t *testing.T) {
	codex.Require(t)
	var work []agenttest.Call
	for i := range 6 {
		work = append(work, Shell(fmt.Sprintf("echo 'checks: %d of 6 pending'; date +%%s%%N", 6-i)))
	}
	model, verdicts := progressRun(t, "T-POLL", work, func(*e2etest.Watcher) {})
	if slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v: looping", verdicts)
	}
	if model.SawText("gyrum: you are looping") {
		t.Error("the model was told it loops")
	}
}

// Work that repeats a command but progresses is never looping and the
// model is never told: a batch of reads of different files (the same
// content each; Codex reads through its shell), and edit-then-test cycles
// with different edits (the test failing alike each time; Codex edits
// through its shell here: the fake Responses API offers no apply_patch).
func TestProgressIsNotLooping(t *testing.T) {
	codex.Require(t)
	var work []agenttest.Call
	dir := t.TempDir()
	for i := range 6 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(p, []byte("same content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		work = append(work, Shell("cat "+shellquote.Quote(p)))
	}
	code := shellquote.Quote(filepath.Join(dir, "code.txt"))
	test := "grep -q fixed " + code + " || { echo 'FAIL: not fixed' >&2; exit 1; }"
	for i := range 3 {
		work = append(work, Shell(fmt.Sprintf("printf 'attempt %d\\n' > %s", i, code)), Shell(test))
	}
	model, verdicts := progressRun(t, "T-PROG", work, func(*e2etest.Watcher) {})
	for _, c := range work[6:] {
		if tr, _ := model.ToolResult(c.ID); strings.Contains(c.Args["cmd"].(string), "grep") && !strings.Contains(tr.Content, "FAIL: not fixed") {
			t.Fatalf("the test's result %q: it did not fail (the premise)", tr.Content)
		}
	}
	if slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v: looping", verdicts)
	}
	if model.SawText("gyrum: you are looping") {
		t.Error("the model was told it loops")
	}
}

// Exploration — 40 reads of different files, no edit — for less than the
// progress deadline is never spinning (nor looping), and the model is
// never told.
func TestExplorationIsNotSpinning(t *testing.T) {
	codex.Require(t)
	p := warp.DefaultPolicy()
	p.SpinAfter = 10 * time.Minute
	ws := warptest.StartWithPolicy(t, p)
	dir := t.TempDir()
	var work []agenttest.Call
	for i := range 40 {
		path := filepath.Join(dir, fmt.Sprintf("src%02d.go", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf("package p\n\nconst X%d = %d\n", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
		work = append(work, Shell("cat "+shellquote.Quote(path)))
	}
	model, verdicts := progressRunOn(t, ws, "T-EXPLORE", work, func(*e2etest.Watcher) {})
	if len(verdicts) == 0 {
		t.Fatal("no verdict seen while the lease was held (the premise)")
	}
	if slices.Contains(verdicts, warp.VerdictSpinning) || slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v during exploration", verdicts)
	}
	if model.SawText("gyrum: no progress") || model.SawText("gyrum: you are looping") {
		t.Error("the model was told it makes no progress")
	}
}

// A long build — a foreground call whose shell runs for 4 s, using CPU and
// writing output — is never hung: its process backs it, so with the
// hung-call rule scaled to 0.5 s (staleness 1 s) every heartbeat of the
// session is fresh.
func TestLongBuildIsNeverHung(t *testing.T) {
	codex.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-BUILD")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	call := Shell("for i in 1 2 3 4 5 6 7 8; do echo step $i; timeout 0.5 sh -c 'while :; do :; done'; done; echo built", YieldAfter(30*time.Second))
	model := agenttest.NewResponses(t, agenttest.Calls(claimCall("T-BUILD --json")), agenttest.Calls(call), agenttest.Text("Done."))
	env := e2etest.AgentEnv(t, ws.URL(), 0.2, 1, 60)
	env["HEARTBEAT_HUNG_CALL_SECS"] = "0.5"
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: env})
	s.WaitOK(e2etest.SessionTimeout)
	if tr, _ := model.ToolResult(call.ID); !strings.Contains(tr.Content, "built") {
		t.Fatalf("the build's output %q: it did not run to its end (the premise)", tr.Content)
	}
	beats, during := e2etest.BeatsOf(ws, "T-BUILD"), 0
	for _, b := range beats {
		if b.Body.InFlight != "" {
			during++
		}
		if b.Body.Stale {
			t.Errorf("a stale report in the session: %+v", b.Body)
		}
	}
	if during < 3 {
		t.Fatalf("%d heartbeats while a call was in flight, want several (the premise)", during)
	}
}

// A hung shell call: codex frozen (SIGSTOP) in the middle of an
// exec_command whose process is gone (SIGKILL), so the call's marker stays
// and nothing backs it. gyrum reads no Codex transcript, so the call's
// state is unknown and the process rule decides at once (the hung-call
// rule, which reads Claude Code's transcript, plays no part): only the
// call's start counts, the reports turn stale (staleness 1 s) and the
// verdict stalled (warp's stall threshold 1 s), long before the in-flight
// cap (600 s) the call would count up to if its marker alone kept it.
func TestHungCallGoesStale(t *testing.T) {
	codex.Require(t)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(60*time.Second, time.Second, 30*time.Second, time.Second))
	ws.Create("T-HUNG")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	pidFile := filepath.Join(t.TempDir(), "pid")
	call := Shell("echo $$ > "+shellquote.Quote(pidFile)+".tmp && mv "+shellquote.Quote(pidFile)+".tmp "+shellquote.Quote(pidFile)+"; exec sleep 600", YieldAfter(30*time.Second))
	model := agenttest.NewResponses(t, agenttest.Calls(claimCall("T-HUNG --json")), agenttest.Calls(call), agenttest.Text("Done."))
	w := e2etest.WatchTicket(t, ws, "T-HUNG")
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 1, 600)})
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(call.ID))
	e2etest.Poll(t, "the call's process and marker", func() bool { return e2etest.Exists(pidFile) && e2etest.Exists(marker) })
	hungCall(t, ws, w, s, "T-HUNG", pidFile)
	if !e2etest.Exists(marker) {
		t.Error("the marker is gone: the agent finished the call after all (the premise)")
	}
}

// hungCall checks that the reports of ticket are fresh while the call
// whose pid is in pidFile runs, then freezes the session's agent, kills
// the call's process and waits for the verdict stalled, every stale
// report after the kill.
func hungCall(t *testing.T, ws *warptest.Server, w *e2etest.Watcher, s *agenttest.Session, ticket, pidFile string) {
	t.Helper()
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
	e2etest.Poll(t, "a fresh report naming the call in flight", func() bool {
		for _, b := range e2etest.BeatsOf(ws, ticket) {
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
		for _, b := range e2etest.BeatsOf(ws, ticket) {
			if b.Body.Stale {
				return true
			}
		}
		return false
	})
	e2etest.Poll(t, "the verdict stalled", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictStalled) })
	w.Stop()
	for _, b := range e2etest.BeatsOf(ws, ticket) {
		if b.Body.Stale {
			if b.At.Before(hungAt) {
				t.Errorf("a stale report before the call hung: %+v", b.Body)
			}
		}
	}
}
