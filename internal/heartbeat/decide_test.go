package heartbeat_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The loop's judgement as a table: each row is one sentence of the rule.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	lim := heartbeat.Limits{Staleness: 15 * time.Minute, InFlightMax: 2 * time.Hour}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	min := time.Minute
	alive := func(f heartbeat.Facts) heartbeat.Facts {
		f.Now, f.WatchedAlive, f.ClaimedAt = now, true, ago(3*time.Hour)
		return f
	}
	post := func(age time.Duration, inFlight string, stale bool) heartbeat.Decision {
		why := "ok"
		if stale {
			why = "stale-report"
		}
		return heartbeat.Decision{Action: heartbeat.ActPost, Age: age, InFlight: inFlight, Stale: stale, Why: why}
	}
	cases := []struct {
		name string
		f    heartbeat.Facts
		want heartbeat.Decision
	}{
		{"the agent's process is gone: one exit report, crediting its last tool call",
			heartbeat.Facts{Now: now, WatchedAlive: false, HookLast: ago(4 * min)},
			heartbeat.Decision{Action: heartbeat.ActReport, Exit: heartbeat.ExitParentExited, Age: 4 * min, Why: "parent-exited"}},
		{"a dead agent's leftover marker counts as of the call's start only",
			heartbeat.Facts{Now: now, HookLast: ago(9 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(5 * min), Backed: true}}},
			heartbeat.Decision{Action: heartbeat.ActReport, Exit: heartbeat.ExitParentExited, Age: 5 * min, Why: "parent-exited"}},
		{"lease.json is gone: one exit report worktree-gone",
			alive(heartbeat.Facts{Lease: heartbeat.LeaseMissing, HookLast: ago(min)}),
			heartbeat.Decision{Action: heartbeat.ActReport, Exit: heartbeat.ExitWorktreeGone, Age: min, Why: "worktree-gone"}},
		{"lease.json names another lease: leave quietly",
			alive(heartbeat.Facts{Lease: heartbeat.LeaseOther, HookLast: ago(min)}),
			heartbeat.Decision{Action: heartbeat.ActExit, Exit: heartbeat.ExitSuperseded, Why: "superseded"}},
		{"lease.json is unreadable: skip the tick",
			alive(heartbeat.Facts{Lease: heartbeat.LeaseCorrupt, HookLast: ago(min)}),
			heartbeat.Decision{Action: heartbeat.ActSkip, Why: "corrupt-lease"}},
		{"a recent tool call: heartbeat with its age",
			alive(heartbeat.Facts{HookLast: ago(3 * min)}),
			post(3*min, "", false)},
		{"no tool call for longer than the staleness limit: a stale report",
			alive(heartbeat.Facts{HookLast: ago(20 * min)}),
			post(20*min, "", true)},
		{"the start POST is a heartbeat, whatever the age",
			alive(heartbeat.Facts{Start: true, HookLast: ago(20 * min)}),
			post(20*min, "", false)},
		{"a tool call a live process backs is in flight: age 0",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(40 * min), Backed: true}}}),
			post(0, "Bash", false)},
		{"... but not past the in-flight cap",
			alive(heartbeat.Facts{HookLast: ago(3 * time.Hour), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(2*time.Hour + min), Backed: true}}}),
			post(2*time.Hour+min, "", true)},
		{"a denied call (nothing backs it) proves only that it started",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(16 * min)}}}),
			post(16*min, "", true)},
		{"a call the agent has not finished is in flight though no process backs it (a long MCP call)",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "mcp__ci__wait", Since: ago(40 * min), Agent: heartbeat.CallOpen}}}),
			post(0, "mcp__ci__wait", false)},
		{"... but not past the in-flight cap",
			alive(heartbeat.Facts{HookLast: ago(3 * time.Hour), Markers: []heartbeat.MarkerFact{{Tool: "mcp__ci__wait", Since: ago(2*time.Hour + min), Agent: heartbeat.CallOpen}}}),
			post(2*time.Hour+min, "", true)},
		{"an unfinished shell call no process has backed for HungAfter is hung: its start only (issue 44)",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(40 * min), Agent: heartbeat.CallOpen, Shell: true, Unbacked: heartbeat.DefaultHungAfter}}}),
			post(40*min, "", true)},
		{"... not yet at HungAfter - 1ns: in flight",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(40 * min), Agent: heartbeat.CallOpen, Shell: true, Unbacked: heartbeat.DefaultHungAfter - time.Nanosecond}}}),
			post(0, "Bash", false)},
		{"an unfinished shell call whose process runs (a long build) is in flight",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(40 * min), Agent: heartbeat.CallOpen, Shell: true, Backed: true}}}),
			post(0, "Bash", false)},
		{"an unfinished MCP call keeps the rule: in flight though unbacked",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "mcp__ci__wait", Since: ago(40 * min), Agent: heartbeat.CallOpen, Unbacked: time.Hour}}}),
			post(0, "mcp__ci__wait", false)},
		{"a call the agent finished without a Post event (denied) counts as its start, even if a process born with it runs",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "mcp__ci__wait", Since: ago(16 * min), Backed: true, Agent: heartbeat.CallFinished}}}),
			post(16*min, "", true)},
		{"nothing known of the call: the process rule decides",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{{Tool: "Bash", Since: ago(16 * min), Backed: true, Agent: heartbeat.CallUnknown}}}),
			post(0, "Bash", false)},
		{"the newest backed call names what is in flight",
			alive(heartbeat.Facts{HookLast: ago(50 * min), Markers: []heartbeat.MarkerFact{
				{Tool: "Bash", Since: ago(30 * min), Backed: true}, {Tool: "Task", Since: ago(10 * min), Backed: true}, {Tool: "Read", Since: ago(5 * min)}}}),
			post(0, "Task", false)},
		{"a declared wait counts until it ends",
			alive(heartbeat.Facts{HookLast: ago(time.Hour), Wait: &gyrumdir.Wait{Reason: "CI", DeclaredAt: ago(40 * min), Until: now.Add(5 * min)}}),
			post(0, "wait: CI", false)},
		{"... and then as activity at its end",
			alive(heartbeat.Facts{HookLast: ago(time.Hour), Wait: &gyrumdir.Wait{Reason: "CI", DeclaredAt: ago(40 * min), Until: ago(5 * min)}}),
			post(5*min, "", false)},
		{"... never past the in-flight cap",
			alive(heartbeat.Facts{HookLast: ago(3 * time.Hour), Wait: &gyrumdir.Wait{Reason: "CI", DeclaredAt: ago(2*time.Hour + 20*min), Until: now.Add(time.Hour)}}),
			post(20*min, "", true)},
		{"the agent's background processes busy at the last sample: fresh",
			alive(heartbeat.Facts{HookLast: ago(40 * min), BusyAt: ago(10 * time.Second), BusyWhat: "go"}),
			post(10*time.Second, "background: go", false)},
		{"... but a runaway job no longer than the in-flight cap after the agent's last tool call",
			alive(heartbeat.Facts{HookLast: ago(2*time.Hour + 20*min), BusyAt: ago(10 * time.Second)}),
			post(20*min, "", true)},
		{"no evidence but the claim",
			alive(heartbeat.Facts{}),
			post(3*time.Hour, "", true)},
	}
	for _, c := range cases {
		if got := heartbeat.Decide(c.f, lim); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestBusy(t *testing.T) {
	iv := 240 * time.Second
	for _, c := range []struct {
		cpu  time.Duration
		want bool
	}{
		{0, false},
		{10 * time.Millisecond, false},    // a hook's shell, an MCP server's timer
		{time.Second, false},              // an idle dev server: 0.4 % of a core
		{5 * time.Second, true},           // 2 % of a core
		{200 * time.Second, true},         // a compiler
		{heartbeat.BusyMinCPU - 1, false}, // below the floor, whatever the interval
		{heartbeat.BusyMinCPU, false},     // the floor alone is not enough at 240 s
	} {
		if got := heartbeat.Busy(c.cpu, iv); got != c.want {
			t.Errorf("Busy(%v over %v) = %v, want %v", c.cpu, iv, got, c.want)
		}
	}
	if !heartbeat.Busy(heartbeat.BusyMinCPU, 100*time.Millisecond) {
		t.Error("the floor over a scaled 100 ms tick is busy")
	}
}

func TestCPUUse(t *testing.T) {
	id := func(pid int) proc.Identity { return proc.Identity{PID: pid, StartTime: uint64(pid)} }
	prev := []proc.Sample{
		{Identity: id(1), Name: "bash", CPU: time.Second},
		{Identity: id(2), Name: "go", CPU: 10 * time.Second},
		{Identity: id(3), Name: "gone", CPU: time.Hour},
	}
	cur := []proc.Sample{
		{Identity: id(1), Name: "bash", CPU: time.Second},                                    // idle
		{Identity: id(2), Name: "go", CPU: 12 * time.Second},                                 // +2 s
		{Identity: id(4), Name: "compile", CPU: 3 * time.Second},                             // new: all of it
		{Identity: proc.Identity{PID: 1, StartTime: 99}, Name: "recycled", CPU: time.Second}, // pid 1 reused: new
	}
	total, name := heartbeat.CPUUse(prev, cur)
	if total != 6*time.Second || name != "compile" {
		t.Errorf("CPUUse = %v, %q; want 6s, compile", total, name)
	}
}

func TestBacked(t *testing.T) {
	since := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	claude := map[int]bool{10: true}
	old := proc.Sample{Name: "mcp-server", PPID: 10, Started: since.Add(-time.Hour)}
	shell := proc.Sample{Name: "bash", PPID: 10, Started: since.Add(80 * time.Millisecond)}
	rounded := proc.Sample{Name: "bash", PPID: 10, Started: since.Add(-300 * time.Millisecond)} // clock-tick and uptime rounding
	later := proc.Sample{Name: "bash", PPID: 10, Started: since.Add(time.Minute)}               // the next call's dev server
	grandchild := proc.Sample{Name: "sleep", PPID: 11, Started: since.Add(time.Second)}
	for _, c := range []struct {
		name  string
		procs []proc.Sample
		want  bool
	}{
		{"the call's own shell", []proc.Sample{old, shell}, true},
		{"a shell a tick before the marker", []proc.Sample{rounded}, true},
		{"a process older than the call", []proc.Sample{old}, false},
		{"a process the agent started a minute later (a denied call stays unbacked)", []proc.Sample{later}, false},
		{"a grandchild alone", []proc.Sample{grandchild}, false},
		{"nothing", nil, false},
	} {
		if got := heartbeat.Backed(since, c.procs, claude); got != c.want {
			t.Errorf("%s: Backed = %v, want %v", c.name, got, c.want)
		}
	}
}

// Several calls in flight at once: each agent process backs one call, the
// latest that began before it. A call denied at t (PreToolUse only, its
// marker stays) is not backed by the shell of the next call 10 s later,
// which may run for hours (a dev server in the background); parallel
// calls each have their shell.
func TestBackedMarkers(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	claude := map[int]bool{10: true}
	child := func(at time.Duration) proc.Sample {
		return proc.Sample{Name: "bash", PPID: 10, Started: t0.Add(at)}
	}
	for _, c := range []struct {
		name   string
		sinces []time.Duration
		procs  []proc.Sample
		want   []bool
	}{
		{"a denied call, then the next call's shell", []time.Duration{0, 10 * time.Second}, []proc.Sample{child(10*time.Second + 50*time.Millisecond)}, []bool{false, true}},
		{"the same, markers listed the other way", []time.Duration{10 * time.Second, 0}, []proc.Sample{child(10*time.Second + 50*time.Millisecond)}, []bool{true, false}},
		{"two parallel calls, two shells", []time.Duration{0, 5 * time.Millisecond}, []proc.Sample{child(80 * time.Millisecond), child(90 * time.Millisecond)}, []bool{true, true}},
		{"two parallel calls, one shell so far", []time.Duration{0, 5 * time.Millisecond}, []proc.Sample{child(80 * time.Millisecond)}, []bool{false, true}},
		{"one call, its shell and a second child", []time.Duration{0}, []proc.Sample{child(50 * time.Millisecond), child(time.Second)}, []bool{true}},
		{"no process", []time.Duration{0, time.Second}, nil, []bool{false, false}},
	} {
		sinces := make([]time.Time, len(c.sinces))
		for i, d := range c.sinces {
			sinces[i] = t0.Add(d)
		}
		if got := heartbeat.BackedMarkers(sinces, c.procs, claude); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The loop speaks the client package's names for what the domain defines:
// they must stay equal.
func TestWireNamesMatchTheDomain(t *testing.T) {
	pairs := [][2]string{
		{client.ExitParentExited, warp.ExitParentExited},
		{client.ExitWorktreeGone, warp.ExitWorktreeGone},
		{client.LeaseHeld, string(warp.LeaseHeld)},
		{client.LeaseReleased, string(warp.LeaseReleased)},
		{client.LeaseCompleted, string(warp.LeaseCompleted)},
		{client.LeaseLapsed, string(warp.LeaseLapsed)},
		{client.DetailLeaseState, warp.DetailLeaseState},
		{client.DetailEndReason, warp.DetailEndReason},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("client %q != domain %q", p[0], p[1])
		}
	}
	if want := 9 * warp.DefaultStartupGrace / 10; heartbeat.DefaultMaxRetryGap != want {
		t.Errorf("DefaultMaxRetryGap = %v, want 90 %% of the default startup grace, %v", heartbeat.DefaultMaxRetryGap, want)
	}
}

func TestShellTool(t *testing.T) {
	for tool, want := range map[string]bool{"Bash": true, "run_shell_command": true, "bash": true, "Shell": true,
		"Read": false, "mcp__ci__wait": false, "Task": false, "": false} {
		if got := heartbeat.ShellTool(tool); got != want {
			t.Errorf("ShellTool(%q) = %v, want %v", tool, got, want)
		}
	}
}
