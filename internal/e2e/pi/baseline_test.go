package pi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agenttest"
	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// The whole agent side under the real pi: gyrum's extension written by
// `gyrum setup --agents pi`, the agent claims its ticket from inside a
// bash call, works (a held call) and ends.
//
// pi hands no pid to its tools: start-work finds it above its bash as the
// nearest agent (node retitled "pi"); the extension's tool_call handler
// runs the hook with a PreToolUse payload carrying the call's id, which
// leaves a marker while the call runs (the loop reports it in flight), and
// tool_result runs it with PostToolUse, which removes it and records the
// activity. When the session ends the loop reports
// parent-exited within a tick and leaves nothing behind.
func TestBaseline(t *testing.T) {
	pi.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-1 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo worked")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Text("Done with T-1."))
	const interval = 0.2
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	d, err := gyrumdir.At(project)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.LogLoopOnFailure(t, d)
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })

	sr := e2etest.StartResultOf(t, model, claim)
	if sr.WatchedPID != s.Pid() || sr.WatchedHow != "ancestor" || sr.Watched != "pi" || sr.Dir != project {
		t.Errorf("start-work watches %d (%s, %s) in %s; want pi %d, the ancestor, in %s",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, sr.Dir, s.Pid(), project)
	}
	ms, _ := d.InFlight()
	if len(ms) != 1 || ms[0].Tool != "bash" || ms[0].Name != held.ID {
		t.Errorf("in-flight markers while the call runs %+v, want one bash marker named by the call's id %s", ms, held.ID)
	}
	e2etest.Poll(t, "a heartbeat reporting bash in flight", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-1") {
			if b.Body.InFlight == "bash" && !b.Body.Stale {
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
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUse" || rec.Tool != "bash" {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUse/bash", rec, ok, err)
	}
	// One byte per hook run once .gyrum/ exists: the claim's PostToolUse,
	// then PreToolUse and PostToolUse of the held call.
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
