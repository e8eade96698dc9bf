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
	pids := func(ps []proc.Sample) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.PID)
		}
		sort.Ints(out)
		return out
	}
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
