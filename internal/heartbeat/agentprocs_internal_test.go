package heartbeat

import (
	"sort"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/proc"
)

// The agent's own processes, as Gemini CLI 0.61 runs (measured): the node
// launcher, its relaunched node child (the agent), the child's tool shell
// and the hook gyrum runs. In wrap mode gyrum is the watched process.
func TestAgentProcsLeavesOutTheAgent(t *testing.T) {
	at := time.Now()
	sample := func(pid, ppid int, name string) proc.Sample {
		return proc.Sample{Identity: proc.Identity{PID: pid, StartTime: 1}, PPID: ppid, Name: name, Started: at, CPU: time.Second}
	}
	snap := proc.Snapshot{At: at, CPUKnown: true, Procs: []proc.Sample{
		sample(10, 1, "gyrum"),       // wrap mode's gyrum start-work
		sample(100, 10, "node"),      // the launcher
		sample(200, 100, "node"),     // the relaunched agent
		sample(300, 200, "bash"),     // a tool call
		sample(301, 300, "sleep"),    //   and its work
		sample(400, 200, "gyrum-ho"), // the hook
		sample(500, 200, "node"),     // an MCP server the agent started (not an agent)
	}}
	isAgent := func(pid int) bool { return pid == 200 }
	for _, c := range []struct {
		name       string
		watched    int
		wantProcs  []int
		wantAgents []int
	}{
		{"watching the launcher", 100, []int{300, 301, 500}, []int{100, 200}},
		{"watching the relaunched child", 200, []int{300, 301, 500}, []int{200}},
		{"wrap mode", 10, []int{300, 301, 500}, []int{100, 200}},
	} {
		procs, agents := agentProcs(snap, c.watched, isAgent)
		var as []int
		for pid := range agents {
			as = append(as, pid)
		}
		sort.Ints(as)
		if got := pids(procs); !equalInts(got, c.wantProcs) || !equalInts(as, c.wantAgents) {
			t.Errorf("%s: procs %v agents %v, want procs %v agents %v", c.name, got, as, c.wantProcs, c.wantAgents)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Codex's app-server daemon runs the TUI's tool shells: its children that
// started since the TUI did are the agent's (and back its calls); one an
// earlier session left running is not; the daemon itself is an agent (its
// CPU is the model's stream); a recycled daemon pid adds nothing.
func TestServerProcs(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	sample := func(pid, ppid int, name string, started time.Time) proc.Sample {
		return proc.Sample{Identity: proc.Identity{PID: pid, StartTime: 7}, PPID: ppid, Name: name, Started: started, CPU: time.Second}
	}
	daemon := proc.Identity{PID: 50, StartTime: 7}
	snap := proc.Snapshot{At: time.Now(), CPUKnown: true, Procs: []proc.Sample{
		sample(50, 1, "codex", t0),                         // the daemon
		sample(60, 1, "codex", t0.Add(30*time.Minute)),     // the TUI, its client
		sample(70, 50, "bash", t0.Add(10*time.Minute)),     // an earlier session's call, still running
		sample(71, 70, "cargo", t0.Add(10*time.Minute)),    //   and its work
		sample(80, 50, "bash", t0.Add(40*time.Minute)),     // this session's call
		sample(81, 80, "sleep", t0.Add(40*time.Minute)),    //   and its work
		sample(90, 50, "gyrum-ho", t0.Add(40*time.Minute)), // the hook
		sample(91, 90, "whatever", t0.Add(40*time.Minute)), //   below the hook
		sample(95, 60, "rg", t0.Add(41*time.Minute)),       // a child of the TUI itself
	}}
	procs, agents := agentProcs(snap, 60, func(int) bool { return false })
	procs = append(procs, serverProcs(snap, daemon, 60, agents)...)
	if got := pids(procs); !equalInts(got, []int{80, 81, 95}) {
		t.Errorf("procs %v, want this session's call on the daemon and the TUI's child: [80 81 95]", got)
	}
	if !agents[50] || !agents[60] {
		t.Errorf("agents %v, want the TUI and the daemon", agents)
	}
	if b := BackedMarkers([]time.Time{t0.Add(40 * time.Minute)}, procs, agents); !b[0] {
		t.Errorf("the call whose shell the daemon started is not backed")
	}

	for _, c := range []struct {
		name   string
		server proc.Identity
	}{
		{"no server", proc.Identity{}},
		{"the daemon's pid recycled", proc.Identity{PID: 50, StartTime: 8}},
	} {
		_, agents := agentProcs(snap, 60, func(int) bool { return false })
		if got := serverProcs(snap, c.server, 60, agents); len(got) != 0 || agents[50] {
			t.Errorf("%s: procs %v, daemon an agent %v; want nothing", c.name, pids(got), agents[50])
		}
	}
}

// pids returns the pids of ps, sorted.
func pids(ps []proc.Sample) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	sort.Ints(out)
	return out
}
