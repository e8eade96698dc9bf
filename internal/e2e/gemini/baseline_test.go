package gemini_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// The whole agent side under the real Gemini CLI: hooks wired by `gyrum
// setup --agents gemini` in a folder the user trusted, the agent claims its
// ticket from inside a shell call, works (a held call) and ends.
//
// Gemini CLI relaunches itself: the launcher `node .../gemini` starts
// `node --max-old-space-size=N .../gemini` and stays alive as its parent;
// the child runs the session, its tools and its hooks. start-work watches
// the child (the nearest agent above it), BeforeTool leaves a marker named
// by the call's input while the call runs and the loop reports it in
// flight, AfterTool removes it and records the activity, and when the
// session ends the loop reports parent-exited within a tick and leaves
// nothing behind.
//
// Before issue 32 start-work watched the launcher: the agent child's shells
// were grandchildren of the watched process, so no call was ever backed.
func TestBaseline(t *testing.T) {
	gemini.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-1 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo worked")
	model := agenttest.NewGemini(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Text("Done with T-1."))
	const interval = 0.2
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	d, err := gyrumdir.At(project)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.LogLoopOnFailure(t, d)
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })

	agent := s.AgentPid()
	sr := e2etest.StartResultOf(t, model, claim)
	if agent == 0 || agent == s.Pid() {
		t.Fatalf("the launcher %d did not relaunch the CLI (agent %d):\n%s", s.Pid(), agent, s.TreeString())
	}
	if sr.WatchedPID != agent || sr.WatchedHow != "ancestor" || sr.Watched != "gemini" || sr.Dir != project {
		t.Errorf("start-work watches %d (%s, %s) in %s; want the relaunched agent %d (not the launcher %d), found as the ancestor gemini, in %s",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, sr.Dir, agent, s.Pid(), project)
	}
	ms, _ := d.InFlight()
	if len(ms) != 1 || ms[0].Tool != "run_shell_command" || !strings.HasPrefix(ms[0].Name, "input-") {
		t.Errorf("in-flight markers while the call runs %+v, want one run_shell_command marker named by its input", ms)
	}
	e2etest.Poll(t, "a heartbeat reporting run_shell_command in flight", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-1") {
			if b.Body.InFlight == "run_shell_command" && !b.Body.Stale {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	ended := s.Ended()

	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("in-flight markers left: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "AfterTool" || rec.Tool != "run_shell_command" {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/AfterTool/run_shell_command", rec, ok, err)
	}
	// One byte per hook run once .gyrum/ exists: the claim's AfterTool,
	// then BeforeTool and AfterTool of the held call.
	if n := e2etest.HookEvents(d); n != 3 {
		t.Errorf("hook-events holds %d events, want 3", n)
	}
	at := parentExitedAt(t, ws, "T-1")
	t.Logf("parent-exited reported %v after the CLI exited", at.Sub(ended).Round(time.Millisecond))
	// Within a tick (±10 % jitter) and a POST.
	if lag := at.Sub(ended); lag > e2etest.Secs(interval*1.1)+time.Second {
		t.Errorf("parent-exited reported %v after the exit, want within a tick", lag)
	}
	e2etest.Poll(t, "the loop to exit", func() bool { return !e2etest.Exists(d.File(gyrumdir.LoopPIDFile)) })
	e2etest.Poll(t, "nothing of the session left running", func() bool { return len(s.Leftovers()) == 0 })
	if res, _ := model.ToolResult(held.ID); !strings.Contains(res.Content, "worked") {
		t.Errorf("held call's result %q", res.Content)
	}
}
