package claudecode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// The whole agent side under the real client: hooks wired by `gyrum
// setup`, the agent claims its ticket from inside a Bash tool call (so the
// loop watches CLAUDE_PID), works (a held foreground Bash call, a Write),
// and ends. The hook fires for PreToolUse (in-flight marker while the call
// runs) and PostToolUse (marker gone, activity record, hook-events), the
// loop reports the call in flight, and it reports parent-exited once the
// session is over.
func TestBaselineHookAndLoop(t *testing.T) {
	claude.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	gyrumHome := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	started := filepath.Join(t.TempDir(), "started")

	claim := Bash(shellquote.Quote(gyrumBin)+" start-work T-1 --json", Description("claim T-1"))
	held := Bash("touch "+shellquote.Quote(started)+"; while [ ! -e "+shellquote.Quote(release)+" ]; do sleep 0.05; done; echo worked",
		Description("work"))
	write := Write(filepath.Join(project, "notes.md"), "# notes\n")
	model := agenttest.NewAnthropic(t,
		agenttest.Calls(claim),
		agenttest.Calls(held),
		agenttest.Calls(write),
		agenttest.Text("Done with T-1."))
	s := start(t, model, project, agenttest.Options{Env: map[string]string{
		"WARP_URL":                          ws.URL(),
		"GYRUM_HOME":                        gyrumHome,
		"HEARTBEAT_INTERVAL_SECS":           "0.2",
		"HEARTBEAT_ACTIVITY_STALENESS_SECS": "30",
	}})

	d, err := gyrumdir.At(project)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(held.ID))
	e2etest.Poll(t, "the held Bash call to start", func() bool { return e2etest.Exists(started) })

	// start-work ran inside the session: it watches the claude process.
	tr, ok := model.ToolResult(claim.ID)
	if !ok {
		t.Fatal("no tool result for start-work")
	}
	var sr e2etest.StartResult
	if err := json.Unmarshal([]byte(tr.Content), &sr); err != nil {
		t.Fatalf("start-work output %q: %v", tr.Content, err)
	}
	if sr.WatchedPID != s.Pid() || sr.WatchedHow != "CLAUDE_PID" || sr.Dir != project {
		t.Errorf("start-work watches pid %d (%s) in %s; want claude pid %d via CLAUDE_PID in %s",
			sr.WatchedPID, sr.WatchedHow, sr.Dir, s.Pid(), project)
	}

	// PreToolUse fired: the marker exists while the call runs, and the
	// loop reports the call in flight.
	if !e2etest.Exists(marker) {
		t.Errorf("no in-flight marker %s while the Bash call runs", marker)
	}
	e2etest.Poll(t, "a heartbeat reporting Bash in flight", func() bool {
		for _, b := range ws.Beats() {
			if b.Body.Ticket == "T-1" && b.Body.InFlight == "Bash" {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s.WaitOK(e2etest.SessionTimeout)
	if !e2etest.Exists(filepath.Join(project, "notes.md")) {
		t.Error("the Write call did not write notes.md")
	}
	// PostToolUse fired: markers gone, the record names the last call.
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("in-flight markers left: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUse" || rec.Tool != "Write" {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUse/Write", rec, ok, err)
	}
	// One byte per hook run once .gyrum/ exists: start-work's PostToolUse,
	// then Pre and Post of the held Bash call and of the Write.
	events, err := os.ReadFile(d.File(gyrumdir.HookEventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(events); n != 5 {
		t.Errorf("hook-events holds %d events, want 5 (Post of start-work, Pre+Post of Bash, Pre+Post of Write)", n)
	}

	// The session is over: the loop sees its agent gone and says so.
	e2etest.ParentExitedAt(t, ws, "T-1", "")
	e2etest.Poll(t, "the loop to remove heartbeat.pid", func() bool { return !e2etest.Exists(d.File(gyrumdir.LoopPIDFile)) })
	if res := s.Results(); len(res) != 1 || res[0].Subtype() != "success" {
		t.Errorf("results %v", res)
	}
	if n := len(model.MainRequests()); n != 4 {
		t.Errorf("%d main requests, want 4:\n%s", n, model.Summary())
	}
	for _, r := range model.Requests() {
		if r.Kind != agenttest.KindMain {
			t.Errorf("auxiliary request %s %s (%s)", r.Method, r.Path, r.Kind)
		}
	}
	if t.Failed() {
		t.Logf("heartbeat.log:\n%s", e2etest.ReadFile(d.File(gyrumdir.LogFile)))
	}
}
