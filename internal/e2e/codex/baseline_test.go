package codex_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The baseline under the real Codex CLI: hooks wired by `gyrum setup
// --agents codex` and trusted, the agent claims its ticket from inside an
// exec_command call (start-work's ancestor walk finds the native codex
// process, not the node launcher above it), works (a held call: PreToolUse
// marker while it runs, the loop reports it in flight, the lease active),
// and ends: the loop reports parent-exited within a tick, the verdict is
// exited, and no loop is left.
func TestBaseline(t *testing.T) {
	codex.Require(t)
	const interval = 0.2
	ws := warptest.Start(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-1 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo worked")
	fail := Shell("echo failing; exit 3")
	model := agenttest.NewResponses(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Calls(fail), agenttest.Text("Done with T-1."))
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })

	sr := e2etest.StartResultOf(t, model, claim)
	codexPid := s.AgentPid()
	if sr.WatchedPID != codexPid || sr.Watched != "codex" || sr.WatchedHow != "ancestor" || sr.Dir != project {
		t.Errorf("start-work watches pid %d %q (%s) in %s; want the native codex %d via the ancestor walk in %s\n%s",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, sr.Dir, codexPid, project, s.TreeString())
	}
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(held.ID))
	if !e2etest.Exists(marker) {
		t.Errorf("no in-flight marker %s while the call runs (PreToolUse did not reach gyrum)", marker)
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
	exited := time.Now()

	// PostToolUse fired for both calls, the failing one too (Codex has
	// no PostToolUseFailure): no marker left, the last record is the
	// failing call's.
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("in-flight markers left: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUse" || rec.Tool != "Bash" {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUse/Bash", rec, ok, err)
	}
	// Post of start-work, Pre and Post of the held and the failing call.
	if n := e2etest.HookEvents(d); n != 5 {
		t.Errorf("hook-events counted %d, want 5", n)
	}

	// Exit: parent-exited within a tick (and the loop's latency), the
	// verdict exited, the loop gone.
	var reported time.Time
	e2etest.Poll(t, "the loop's parent-exited report", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-1") {
			if b.Body.Exit == string(heartbeat.ExitParentExited) {
				reported = b.At
				return true
			}
		}
		return false
	})
	if lag := reported.Sub(exited); lag > e2etest.Secs(interval)+time.Second {
		t.Errorf("parent-exited reported %v after codex exited, want within a tick (%vs)", lag, interval)
	}
	if v := ws.Ticket("T-1"); v.Verdict != warp.VerdictExited {
		t.Errorf("verdict %q after the session ended, want exited", v.Verdict)
	}
	e2etest.Poll(t, "the loop to exit", func() bool { return !e2etest.Alive(sr.LoopPID) && !e2etest.Exists(d.File(gyrumdir.LoopPIDFile)) })
	w.Stop()
	if len(w.VerdictsHooked()) == 0 {
		t.Errorf("verdicts %v: the loop never reported the hooks", w.Verdicts())
	}
	for _, v := range w.VerdictsHooked() {
		if v == warp.VerdictUnwired || v == warp.VerdictStalled {
			t.Errorf("verdicts %v once the hooks were reported: %s while the hooks fired", w.VerdictsHooked(), v)
		}
	}
	if n := len(model.MainRequests()); n != 4 {
		t.Errorf("%d responses requests, want 4:\n%s", n, model.Summary())
	}
	if left := s.Leftovers(); len(left) > 0 {
		t.Errorf("processes of the session left after it ended: %v", left)
	}
}
