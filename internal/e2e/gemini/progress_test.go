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
	"testing"

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
	ws := warptest.Start(t)
	ws.Create(ticket)
	project := e2etest.NewProject(t)
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
