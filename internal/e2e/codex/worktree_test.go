package codex_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// In-session `gyrum start-work T --worktree`, then commands that `cd` into
// the worktree, as models write them. Codex runs every exec_command in a
// fresh shell in the turn's cwd (the project) and its hooks' cwd is always
// the project, so only the agent index (start-work recorded the watched
// codex with the worktree) can credit the worktree's lease: its
// hook-events count every call after the claim, warp's last_activity_at
// follows the calls, and the verdict is never unwired.
//
// Before the hook used the agent index for every agent (it did only when
// CLAUDE_PID was set): hook-events 0 and the verdict unwired.
func TestStartWorkWorktreeWithCd(t *testing.T) {
	codex.Require(t)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(30*time.Second, 2*time.Second, 30*time.Second, time.Second))
	ws.Create("T-5")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	root := t.TempDir()
	wt := filepath.Join(root, filepath.Base(project)+"-T-5")
	q := shellquote.Quote(wt)

	claim := claimCall("T-5 --worktree --json")
	work := []agenttest.Call{
		Shell("cd " + q + " && echo notes > notes.md"),
		Shell("cd " + q + " && sleep 1 && ls"),
		Shell("cd " + q + " && sleep 1 && git status --short"),
	}
	turns := []agenttest.Turn{agenttest.Calls(claim)}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	model := agenttest.NewResponses(t, append(turns, agenttest.Text("Done with T-5."))...)
	env := e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 1)
	env["GYRUM_WORKTREE_ROOT"] = root
	w := e2etest.WatchTicket(t, ws, "T-5")
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: env})
	e2etest.Poll(t, "the native codex process", func() bool { return s.AgentPid() != 0 })
	wd, _ := gyrumdir.At(wt)
	e2etest.LogLoopOnFailure(t, wd)
	s.WaitOK(e2etest.SessionTimeout)

	sr := e2etest.StartResultOf(t, model, claim)
	if sr.Dir != wt || sr.WatchedPID != s.AgentPid() {
		t.Fatalf("start-work: dir %s, watches %d (%s); want %s and codex %d", sr.Dir, sr.WatchedPID, sr.WatchedHow, wt, s.AgentPid())
	}
	if !e2etest.Exists(filepath.Join(wt, "notes.md")) {
		t.Error("the call that cd'd into the worktree did not write notes.md there")
	}
	if got, want := e2etest.HookEvents(wd), int64(1+2*len(work)); got != want {
		t.Errorf("the worktree's hook-events counted %d, want %d (Post of the claim, Pre and Post of %d calls)", got, want, len(work))
	}
	_, _, last, _ := wd.ReadActivity()
	e2etest.Poll(t, "warp's last_activity_at to reach the last call", func() bool {
		return !ws.Lease("T-5").LastActivityAt.Before(last.Add(-500 * time.Millisecond))
	})
	if l := ws.Lease("T-5"); l.LastActivityAt.Sub(l.ClaimedAt) < 1500*time.Millisecond {
		t.Errorf("last_activity_at %v after the claim, want the calls' activity (> 1.5 s)", l.LastActivityAt.Sub(l.ClaimedAt))
	}
	w.Stop()
	for _, v := range w.VerdictsHooked() {
		if v == warp.VerdictUnwired {
			t.Errorf("verdicts %v once the hook was reported: unwired while the hook fired", w.VerdictsHooked())
			break
		}
	}
}
