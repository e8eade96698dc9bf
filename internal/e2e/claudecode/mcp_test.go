package claudecode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// mcpOptions returns session options that start this test binary as the
// stdio MCP server e2e, recording its calls into the returned directory.
func mcpOptions(t *testing.T, o agenttest.Options) (agenttest.Options, string) {
	t.Helper()
	rec := t.TempDir()
	cfg := agenttest.MCPConfig(t, t.TempDir(), testBin, []string{mcpArg}, map[string]string{recordDirVar: rec})
	o.Args = append(o.Args, "--mcp-config", cfg, "--strict-mcp-config")
	return o, rec
}

// transcripts returns the session transcripts under the CLI's config dir.
func transcripts(s *Session) []string {
	ps, _ := filepath.Glob(filepath.Join(s.Home.Config, "projects", "*", "*.jsonl"))
	return ps
}

// (m) An MCP tool call and the session transcript: the hook payload's
// transcript_path names the session's JSONL transcript; the call's
// tool_use line is recorded shortly after PreToolUse and no tool_result
// for it until the call returns; the MCP server receives the tool-use id
// in params._meta["claudecode/toolUseId"]. This is what lets the loop
// tell an MCP call in flight from a finished one (docs/agents/claude-code.md).
func TestMCPCallTranscript(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	done := filepath.Join(t.TempDir(), "done")
	quick := Tool(MCPQuick, nil)
	wait := Tool(MCPWait, map[string]any{"file": done})
	model := agenttest.NewAnthropic(t, agenttest.Calls(quick), agenttest.Calls(wait), agenttest.Text("all done"))
	rec := newRecorder(t)
	k, v := rec.env()
	o, calls := mcpOptions(t, agenttest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
	s := start(t, model, project, o)
	e2etest.Poll(t, "the wait call's PreToolUse", func() bool { return len(rec.of("PreToolUse", wait.ID)) == 1 })
	pre := rec.one("PreToolUse", wait.ID)
	if pre.str("tool_name") != MCPWait {
		t.Errorf("tool_name %q, want %q", pre.str("tool_name"), MCPWait)
	}
	path := pre.str("transcript_path")
	if ts := transcripts(s); len(ts) != 1 || ts[0] != path {
		t.Fatalf("transcript_path %q, transcripts on disk %v", path, ts)
	}
	useKey, resultKey := `"id":"`+wait.ID+`"`, `"tool_use_id":"`+wait.ID+`"`
	e2etest.Poll(t, "the wait call's tool_use line", func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), useKey)
	})
	time.Sleep(time.Second) // the call runs on; nothing may record its end
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), resultKey) {
		t.Fatal("a tool_result for the running MCP call is recorded")
	}
	if got := agenttest.MCPCalls(calls); len(got) != 2 || got[1].ToolUseID != wait.ID || !got[1].Ended.IsZero() {
		t.Fatalf("MCP calls %+v, want quick then the running wait with tool-use id %s", got, wait.ID)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	data, _ = os.ReadFile(path)
	if !strings.Contains(string(data), resultKey) {
		t.Error("no tool_result for the MCP call after it returned")
	}
	if n := len(rec.of("PostToolUse", wait.ID)); n != 1 {
		t.Errorf("%d PostToolUse for the MCP call, want 1", n)
	}
}

// mcpCallHeld runs claim → quick MCP call → a pause → the MCP calls of
// turn (one turn: one call, or a parallel pair) → a final text. The
// calls wait on files: the one named by long is created after holdFor,
// the others at once. It returns when the session ended, with the time
// span the long call ran and a watcher over the ticket.
func mcpCallHeld(t *testing.T, ticket string, turn []agenttest.Call, long string, holdFor time.Duration,
	interval, staleness float64, window time.Duration) (ws *warptest.Server, w *e2etest.Watcher, began, ended time.Time) {
	ws = warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall(ticket + " --json")
	quick := Tool(MCPQuick, nil)
	// The MCP server started with the session, seconds before the long
	// call: it cannot back the call as a process started with it.
	pause := Bash("sleep 1.5", Description("pause"))
	model := agenttest.NewAnthropic(t, agenttest.Calls(claim), agenttest.Calls(quick), agenttest.Calls(pause),
		agenttest.Calls(turn...), agenttest.Text("done"))
	o, calls := mcpOptions(t, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	w = e2etest.WatchTicket(t, ws, ticket)
	var longFile string
	for _, c := range turn {
		f, _ := c.Args["file"].(string)
		if c.ID == long {
			longFile = f
		} else if err := os.WriteFile(f, nil, 0o600); err != nil { // the short calls return at once
			t.Fatal(err)
		}
	}
	s := start(t, model, project, o)
	e2etest.Poll(t, "the long MCP call to begin", func() bool {
		for _, c := range agenttest.MCPCalls(calls) {
			if c.ToolUseID == long {
				began = c.Began
				return true
			}
		}
		return false
	})
	time.Sleep(time.Until(began.Add(holdFor))) // the remote step the call waits on
	if err := os.WriteFile(longFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout + holdFor)
	w.Stop()
	for _, c := range agenttest.MCPCalls(calls) {
		if c.ToolUseID == long {
			ended = c.Ended
		}
	}
	if ended.IsZero() {
		t.Fatalf("the long MCP call never returned: %+v", agenttest.MCPCalls(calls))
	}
	for _, c := range agenttest.MCPCalls(calls) {
		t.Logf("MCP call %s %s: %s to %s", c.Tool, c.ToolUseID, c.Began.Format("15:04:05.000"), c.Ended.Format("15:04:05.000"))
	}
	t.Logf("long call from %s to %s; heartbeats:\n%s", began.Format("15:04:05.000"), ended.Format("15:04:05.000"),
		e2etest.DescribeBeats(e2etest.BeatsOf(ws, ticket), began))
	e2etest.SkipIfLapsedBefore(t, ws, ticket, began)
	return ws, w, began, ended
}

// assertHeldThrough checks that ticket's lease stayed held and active,
// never stalled, while the long call ran from began to ended, and that the
// heartbeats past the staleness limit named tool in flight.
func assertHeldThrough(t *testing.T, ws *warptest.Server, w *e2etest.Watcher, ticket, tool string, began, ended time.Time, staleness, interval float64) {
	t.Helper()
	for _, x := range w.Samples() {
		if x.At.After(began) && x.At.Before(ended) && (!x.Lease.Held() || x.Verdict != warp.VerdictActive) {
			t.Errorf("%v into the MCP call: lease %s (%s), verdict %s; want held and active",
				x.At.Sub(began).Round(time.Millisecond), x.Lease.State, x.Lease.EndReason, x.Verdict)
			break
		}
	}
	if l := ws.Lease(ticket); l.State != warp.LeaseHeld {
		t.Errorf("after the call the lease is %s (%s), want held", l.State, l.EndReason)
	}
	from, to := began.Add(e2etest.Secs(staleness+2*interval)), ended.Add(-e2etest.Secs(2*interval))
	n := 0
	for _, b := range e2etest.BeatsOf(ws, ticket) {
		if b.At.Before(from) || b.At.After(to) {
			continue
		}
		n++
		if b.Body.Stale || b.Body.InFlight != tool {
			t.Errorf("heartbeat %v into the call: stale %v, in_flight %q; want fresh, in_flight %q",
				b.At.Sub(began).Round(time.Millisecond), b.Body.Stale, b.Body.InFlight, tool)
			break
		}
	}
	if n < 5 {
		t.Errorf("%d heartbeats past the staleness limit during the call, want at least 5", n)
	}
}

// (31-1) A long MCP call is in flight until it returns: Claude Code fires
// PreToolUse, then nothing until the call returns; no process starts with
// it (the server runs from the session's start) and the server uses no
// CPU. The transcript holds the call's tool_use and no tool_result: the
// loop counts the call in flight, the lease stays held and active for
// longer than staleness + window, and in_flight names the tool.
//
// Before, the call's marker counted only as its start: the lease read
// stalled one staleness limit in and lapsed one window later.
func TestPointLongMCPCallKeepsLease(t *testing.T) {
	claude.Require(t)
	const interval, staleness = 0.2, 1.0
	window := 1500 * time.Millisecond
	wait := Tool(MCPWait, map[string]any{"file": filepath.Join(t.TempDir(), "long")})
	hold := e2etest.Secs(staleness) + window + 2*time.Second
	ws, w, began, ended := mcpCallHeld(t, "T-mcp", []agenttest.Call{wait}, wait.ID, hold, interval, staleness, window)
	if ended.Sub(began) < e2etest.Secs(staleness)+window {
		t.Fatalf("the call ran %v, want more than staleness + window", ended.Sub(began))
	}
	assertHeldThrough(t, ws, w, "T-mcp", MCPWait, began, ended, staleness, interval)
}

// (31-3) A parallel pair in one turn, one short and one long: the short
// call's end does not end the long one's; the lease is held until the
// long call returns.
func TestPointParallelMCPCallsKeepLease(t *testing.T) {
	claude.Require(t)
	const interval, staleness = 0.2, 1.0
	window := 1500 * time.Millisecond
	dir := t.TempDir()
	short := Tool(MCPWait, map[string]any{"file": filepath.Join(dir, "short")})
	long := Tool(MCPWait, map[string]any{"file": filepath.Join(dir, "long")})
	hold := e2etest.Secs(staleness) + window + 2*time.Second
	ws, w, began, ended := mcpCallHeld(t, "T-mcp-pair", []agenttest.Call{short, long}, long.ID, hold, interval, staleness, window)
	assertHeldThrough(t, ws, w, "T-mcp-pair", MCPWait, began, ended, staleness, interval)
}

// (31-2) A denied MCP call, then a wedge: the call's result (an error) is
// recorded at once and no Post event fires, so its marker counts only as
// its start: stalled, then lapsed within staleness + window + a sweep.
func TestPointDeniedMCPCallThenWedge(t *testing.T) {
	claude.Require(t)
	rec := newRecorder(t)
	rec.setReplies(reply{Event: "PreToolUse", Match: "DENY-ME", Stderr: "blocked by policy", Exit: 2})
	call := Tool(MCPWait, map[string]any{"file": filepath.Join(t.TempDir(), "DENY-ME")})
	k, v := rec.env()
	deniedLeaksNoLease(t, "T-mcp-denied", call, MCPWait, func(o *agenttest.Options) {
		o.Env[k] = v
		o.Settings = rec.settings("PreToolUse")
		*o, _ = mcpOptions(t, *o)
	})
}
