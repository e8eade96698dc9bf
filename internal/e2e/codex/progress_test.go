package codex_test

// Issue 44 under the real Codex CLI: its shell output carries a header
// that differs on every run (chunk id, wall time), which the fingerprint
// must ignore for a true loop to be seen; output that changes is progress.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
