package gemini_test

// Issue 44 under the real Gemini CLI: its shell result carries lines that
// differ on every run (the process group), which the fingerprint must
// ignore; output that changes is progress.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	return progressRunOn(t, warptest.Start(t), ticket, func(string) []agenttest.Call { return work }, look)
}

// progressRunOn is progressRun against ws (a warp with a policy of the
// test's own: a progress deadline, say), its work made by mkwork from the
// project's path (the CLI's file tools refuse paths outside it).
func progressRunOn(t *testing.T, ws *warptest.Server, ticket string, mkwork func(project string) []agenttest.Call, look func(w *e2etest.Watcher)) (*agenttest.FakeModel, []warp.Verdict) {
	t.Helper()
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	work := mkwork(project)
	setupHooks(t, project)
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
	model := agenttest.NewGemini(t, turns...)
	w := e2etest.WatchTicket(t, ws, ticket)
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	look(w)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()
	return model, w.Verdicts()
}

// The same failing command 4 times (Gemini CLI's own loop detection acts
// at 5 identical calls): looping from the third (its result says "Exit
// Code: 1": the same failure 3 times), the model told once, in that
// call's result.
func TestLoopingCaughtAndTold(t *testing.T) {
	gemini.Require(t)
	var fails []agenttest.Call
	for range 4 {
		fails = append(fails, Shell("echo 'TypeError: x is not a function' >&2; exit 1"))
	}
	model, verdicts := progressRun(t, "T-LOOP", fails, func(w *e2etest.Watcher) {
		e2etest.Poll(t, "the verdict looping", func() bool { return slices.Contains(w.Verdicts(), warp.VerdictLooping) })
	})
	if !slices.Contains(verdicts, warp.VerdictLooping) {
		t.Fatalf("verdicts %v: never looping", verdicts)
	}
	// Gemini CLI shows hook context HTML-escaped (">" as "&gt;").
	told := regexp.MustCompile("gyrum: you are looping on `run_shell_command: echo 'TypeError: x is not a function' (>|&gt;)&2; exit 1` ×3: exit 1")
	for i, f := range fails {
		res, _ := model.ToolResult(f.ID)
		if got := told.MatchString(res.Content); got != (i == 2) {
			t.Errorf("result of failure %d: told %v, want %v:\n%s", i+1, got, i == 2, res.Content)
		}
	}
}

// Polling whose output changes each time is never looping.
func TestPollingIsNotLooping(t *testing.T) {
	gemini.Require(t)
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

// ReadFile is a read_file call of path (absolute), the CLI's own tool.
func ReadFile(path string) agenttest.Call {
	return agenttest.Tool("read_file", map[string]any{"file_path": path})
}

// WriteFile is a write_file call writing content to path (absolute).
func WriteFile(path, content string) agenttest.Call {
	return agenttest.Tool("write_file", map[string]any{"file_path": path, "content": content})
}

// Work that repeats a tool but progresses is never looping and the model
// is never told: a batch of read_file calls of different files (the same
// content each), and edit-then-test cycles — write_file with different
// content, then the same failing test.
func TestProgressIsNotLooping(t *testing.T) {
	gemini.Require(t)
	var code string
	var tests []agenttest.Call
	model, verdicts := progressRunOn(t, warptest.Start(t), "T-PROG", func(project string) []agenttest.Call {
		var work []agenttest.Call
		for i := range 6 {
			p := filepath.Join(project, fmt.Sprintf("f%d.txt", i))
			if err := os.WriteFile(p, []byte("same content\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			work = append(work, ReadFile(p))
		}
		code = filepath.Join(project, "code.txt")
		test := "grep -q fixed " + shellquote.Quote(code) + " || { echo 'FAIL: not fixed' >&2; exit 1; }"
		for i := range 3 {
			tc := Shell(test)
			tests = append(tests, tc)
			work = append(work, WriteFile(code, fmt.Sprintf("attempt %d\n", i)), tc)
		}
		return work
	}, func(*e2etest.Watcher) {})
	for _, c := range tests {
		if res, _ := model.ToolResult(c.ID); !strings.Contains(res.Content, "FAIL: not fixed") {
			t.Fatalf("the test's result %q: it did not fail (the premise)", res.Content)
		}
	}
	if data, err := os.ReadFile(code); err != nil || string(data) != "attempt 2\n" {
		t.Fatalf("code.txt %q (%v): the edits did not land (the premise)", data, err)
	}
	if slices.Contains(verdicts, warp.VerdictLooping) {
		t.Errorf("verdicts %v: looping", verdicts)
	}
	if model.SawText("gyrum: you are looping") {
		t.Error("the model was told it loops")
	}
}

// Exploration — 40 read_file calls of different files, no edit — for less
// than the progress deadline is never spinning (nor looping), and the
// model is never told.
func TestExplorationIsNotSpinning(t *testing.T) {
	gemini.Require(t)
	p := warp.DefaultPolicy()
	p.SpinAfter = 10 * time.Minute
	ws := warptest.StartWithPolicy(t, p)
	var last agenttest.Call
	model, verdicts := progressRunOn(t, ws, "T-EXPLORE", func(project string) []agenttest.Call {
		var work []agenttest.Call
		for i := range 40 {
			path := filepath.Join(project, fmt.Sprintf("src%02d.go", i))
			if err := os.WriteFile(path, []byte(fmt.Sprintf("package p\n\nconst X%d = %d\n", i, i)), 0o644); err != nil {
				t.Fatal(err)
			}
			work = append(work, ReadFile(path))
		}
		last = work[39]
		return work
	}, func(*e2etest.Watcher) {})
	if res, _ := model.ToolResult(last.ID); !strings.Contains(res.Content, "X39") {
		t.Fatalf("the last read's result %q (the premise: the CLI read every file)", res.Content)
	}
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
	gemini.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-BUILD")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	call := Shell("for i in 1 2 3 4 5 6 7 8; do echo step $i; timeout 0.5 sh -c 'while :; do :; done'; done; echo built")
	model := agenttest.NewGemini(t, agenttest.Calls(claimCall("T-BUILD --json")), agenttest.Calls(call), agenttest.Text("Done."))
	env := e2etest.AgentEnv(t, ws.URL(), interval, 1, 60)
	env["HEARTBEAT_HUNG_CALL_SECS"] = "0.5"
	s := start(t, model, project, agenttest.Options{Env: env})
	s.WaitOK(e2etest.SessionTimeout)
	if res, _ := model.ToolResult(call.ID); !strings.Contains(res.Content, "built") {
		t.Fatalf("the build's output %q: it did not run to its end (the premise)", res.Content)
	}
	during := 0
	for _, b := range e2etest.BeatsOf(ws, "T-BUILD") {
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

// A hung shell call: the CLI frozen (SIGSTOP) in the middle of a
// run_shell_command whose process is gone (SIGKILL), so the call's marker
// stays and nothing backs it. gyrum reads no Gemini CLI chat file, so the
// call's state is unknown and the process rule decides at once (the
// hung-call rule, which reads Claude Code's transcript, plays no part):
// only the call's start counts, the reports turn stale (staleness 1 s)
// and the verdict stalled (warp's stall threshold 1 s), long before the
// in-flight cap (600 s).
func TestHungCallGoesStale(t *testing.T) {
	gemini.Require(t)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(60*time.Second, time.Second, 30*time.Second, time.Second))
	ws.Create("T-HUNG")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	pidFile := filepath.Join(t.TempDir(), "pid")
	call := Shell("echo $$ > " + shellquote.Quote(pidFile) + ".tmp && mv " + shellquote.Quote(pidFile) + ".tmp " + shellquote.Quote(pidFile) + "; exec sleep 600")
	model := agenttest.NewGemini(t, agenttest.Calls(claimCall("T-HUNG --json")), agenttest.Calls(call), agenttest.Text("Done."))
	w := e2etest.WatchTicket(t, ws, "T-HUNG")
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 1, 600)})
	inFlight := func() bool { ms, err := d.InFlight(); return err == nil && len(ms) > 0 }
	e2etest.Poll(t, "the call's process and marker", func() bool { return e2etest.Exists(pidFile) && inFlight() })
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
	w.Stop()
	for _, b := range e2etest.BeatsOf(ws, "T-HUNG") {
		if b.Body.Stale {
			if b.At.Before(hungAt) {
				t.Errorf("a stale report before the call hung: %+v", b.Body)
			}
		}
	}
	if !inFlight() {
		t.Error("the marker is gone: the agent finished the call after all (the premise)")
	}
}
