package copilot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agenttest"
	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// The whole agent side under the real GitHub Copilot CLI (matrix points
// 1 and 5): hooks wired by `gyrum setup --agents copilot` in the user's
// ~/.copilot/hooks/gyrum.json, the agent claims its ticket from inside a
// shell call, works (a held call) and ends.
//
// Copilot's npm launcher (node, npm-loader.js) runs the native copilot
// (kernel name MainThread) as its child, which runs the session, its
// tools and its hooks. start-work watches the native process (the nearest
// agent above its shell, not the launcher); PreToolUse (Copilot's
// PascalCase event, Claude Code's payload) leaves a marker named by the
// call's input, as Copilot sends no call id, while the call runs and the
// loop reports it in flight; PostToolUse removes it and records the
// activity; the verdict is active throughout, and when the session ends
// the loop reports parent-exited within a tick — never before — and
// leaves nothing behind.
func TestBaseline(t *testing.T) {
	copilot.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	home := setupHooks(t)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-1 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo worked")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Text("Done with T-1."))
	const interval = 0.2
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := start(t, model, project, home, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	d, err := gyrumdir.At(project)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.LogLoopOnFailure(t, d)
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })

	agent := s.AgentPid()
	sr := e2etest.StartResultOf(t, model, claim)
	if agent == 0 || agent == s.Pid() {
		t.Fatalf("no agent process below the launcher %d (agent %d):\n%s", s.Pid(), agent, s.TreeString())
	}
	if sr.WatchedPID != agent || sr.WatchedHow != "ancestor" || sr.Watched != "copilot" || sr.Dir != project {
		t.Errorf("start-work watches %d (%s, %s) in %s; want the native copilot %d (not the launcher %d), found as the ancestor copilot, in %s:\n%s",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, sr.Dir, agent, s.Pid(), project, s.TreeString())
	}
	ms, _ := d.InFlight()
	if len(ms) != 1 || ms[0].Tool != "Bash" || !strings.HasPrefix(ms[0].Name, "input-") {
		t.Errorf("in-flight markers while the call runs %+v, want one Bash marker named by its input", ms)
	}
	e2etest.Poll(t, "a heartbeat reporting Bash in flight", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-1") {
			if b.Body.InFlight == "Bash" && !b.Body.Stale {
				return true
			}
		}
		return false
	})
	if v := ws.Ticket("T-1"); v.Verdict != warp.VerdictActive {
		t.Errorf("verdict %q while the agent works, want active", v.Verdict)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	ended := s.Ended()

	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("in-flight markers left: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUse" || rec.Tool != "Bash" {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUse/Bash", rec, ok, err)
	}
	// One byte per hook run once .gyrum/ exists: the claim's PostToolUse,
	// then PreToolUse and PostToolUse of the held call.
	if n := e2etest.HookEvents(d); n != 3 {
		t.Errorf("hook-events holds %d events, want 3", n)
	}
	at := parentExitedAt(t, ws, "T-1")
	t.Logf("parent-exited reported %v after the CLI exited", at.Sub(ended).Round(time.Millisecond))
	if lag := at.Sub(ended); lag > e2etest.Secs(interval*1.1)+time.Second {
		t.Errorf("parent-exited reported %v after the exit, want within a tick", lag)
	}
	// The agent (the native copilot) exits a little before its
	// launcher, so the report may come before s.Ended(); but never while
	// the agent still worked: not before its last model request.
	reqs := model.Requests()
	last := reqs[len(reqs)-1].At
	for _, b := range e2etest.BeatsOf(ws, "T-1") {
		if b.Body.Exit != "" && b.At.Before(last) {
			t.Errorf("exit report %q %v before the agent's last model request: a false exit report", b.Body.Exit, last.Sub(b.At))
		}
	}
	if v := ws.Ticket("T-1"); v.Verdict != warp.VerdictExited {
		t.Errorf("verdict %q after the session ended, want exited", v.Verdict)
	}
	e2etest.Poll(t, "the loop to exit", func() bool { return !e2etest.Exists(d.File(gyrumdir.LoopPIDFile)) })
	e2etest.Poll(t, "nothing of the session left running", func() bool { return len(s.Leftovers()) == 0 })
	w.Stop()
	if len(w.VerdictsHooked()) == 0 {
		t.Errorf("verdicts %v: the loop never reported the hook", w.Verdicts())
	}
	for _, v := range w.VerdictsHooked() {
		if v != warp.VerdictActive && v != warp.VerdictExited {
			t.Errorf("verdicts %v once the hook was reported: %s while the agent worked", w.VerdictsHooked(), v)
			break
		}
	}
	if res, _ := model.ToolResult(held.ID); !strings.Contains(res.Content, "worked") {
		t.Errorf("held call's result %q", res.Content)
	}
	_ = heartbeat.ExitParentExited
}
