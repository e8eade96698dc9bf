package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Class is what happens to a simulated agent.
type Class string

// Classes of simulated agents. The first three are failures the product must
// catch; the last two are healthy agents that must keep their lease.
const (
	// ClassOrphan: the watched agent process is SIGKILLed; the worktree stays.
	ClassOrphan Class = "orphan"
	// ClassOrphanGone: the watched process is SIGKILLed and the worktree is
	// deleted shortly after (the ADR's "workdirs deleted" loops).
	ClassOrphanGone Class = "orphan-worktree-gone"
	// ClassWedged: the agent process stays alive but makes no more tool calls.
	ClassWedged Class = "wedged"
	// ClassLongStep: healthy, with one tool call of 20 or 40 minutes (an
	// in-flight marker longer than the staleness limit, or the lease window).
	ClassLongStep Class = "healthy-long-step"
	// ClassIdle: healthy, short bursts of tool calls with idle gaps shorter
	// than the staleness limit.
	ClassIdle Class = "healthy-idle-bursts"
)

// classOrder lists every class in report order.
var classOrder = []Class{ClassOrphan, ClassOrphanGone, ClassWedged, ClassLongStep, ClassIdle}

// Failure reports whether agents of class c fail during the scenario.
func (c Class) Failure() bool {
	return c == ClassOrphan || c == ClassOrphanGone || c == ClassWedged
}

// Client is the heartbeat client an agent's host runs.
type Client string

// Clients.
const (
	// ClientV2 is gyrum's activity-gated loop sending schema_version 2.
	ClientV2 Client = "v2"
	// ClientV1 is an unmigrated host: gyrum's loop run with
	// --schema-version 1, which sends the warp#683 v1 body.
	ClientV1 Client = "v1"
	// ClientMixed puts one agent in three (of every class) on an unmigrated
	// v1 host and the rest on v2 hosts.
	ClientMixed Client = "mixed"
)

// ParseClient returns the client named s.
func ParseClient(s string) (Client, error) {
	switch c := Client(s); c {
	case ClientV1, ClientV2, ClientMixed:
		return c, nil
	}
	return "", warp.Errorf(warp.ErrInvalid, "unknown client %q: want v1, v2 or mixed", s)
}

// ActionKind is one thing the simulator does to an agent.
type ActionKind string

// Action kinds.
const (
	ActStart          ActionKind = "start"           // spawn the watched process, run gyrum start-work
	ActPreTool        ActionKind = "pre-tool"        // hook: PreToolUse
	ActPostTool       ActionKind = "post-tool"       // hook: PostToolUse
	ActKill           ActionKind = "kill"            // SIGKILL the watched process
	ActDeleteWorktree ActionKind = "delete-worktree" // rm -r the worktree
)

// Action is one scheduled step of an agent, at an unscaled offset from the
// start of the scenario.
type Action struct {
	At        time.Duration
	Kind      ActionKind
	Tool      string // hook actions
	ToolUseID string // hook actions
}

// AgentPlan is the script of one simulated agent.
type AgentPlan struct {
	Name   string // agent label, "a01"
	Ticket string
	Host   string
	Class  Class
	Client Client // ClientV1 or ClientV2
	// FailAt is the planned failure (unscaled, from the start) of a failure
	// class: the kill of an orphan, the last tool call of a wedged agent.
	FailAt time.Duration
	// LongStepAt and LongStep are the start and length of the long tool
	// call of a long-step agent.
	LongStepAt, LongStep time.Duration
	Actions              []Action // in time order
}

// Plan is a whole scenario in unscaled time.
type Plan struct {
	Scenario string
	Agents   []AgentPlan
	// RestartAt is when the embedded warp is stopped; it comes back on the
	// same database and port RestartOutage later. Zero RestartAt: no restart.
	RestartAt     time.Duration
	RestartOutage time.Duration
	// WatchdogEvery is the watchdog schedule when the run has --watchdog.
	WatchdogEvery time.Duration
	// End is when the scenario stops and the outcome is measured.
	End time.Duration
}

// Timing are the product durations of the run, unscaled (the defaults of
// DESIGN.md section 2); the simulator divides each by the time scale.
type Timing struct {
	Interval     time.Duration
	Staleness    time.Duration
	InFlightMax  time.Duration
	LeaseWindow  time.Duration
	StallAfter   time.Duration
	SilentAfter  time.Duration
	Sweep        time.Duration
	StartupGrace time.Duration
	Watchdog     time.Duration
}

// DefaultTiming returns the product defaults.
func DefaultTiming() Timing {
	return Timing{
		Interval:     warp.DefaultHeartbeatInterval,
		Staleness:    900 * time.Second,
		InFlightMax:  7200 * time.Second,
		LeaseWindow:  warp.DefaultLeaseWindow,
		StallAfter:   warp.DefaultStallAfter,
		SilentAfter:  warp.DefaultSilentAfter,
		Sweep:        warp.DefaultSweepInterval,
		StartupGrace: warp.DefaultStartupGrace,
		Watchdog:     5 * time.Minute,
	}
}

// ScenarioADR138 is the night of the decision record: 6 orphaned loops and
// 4 wedged agents in a fleet of 30.
const ScenarioADR138 = "adr-138"

// DefaultAgents is the fleet size of the adr-138 scenario.
const DefaultAgents = 30

// MinAgents is the smallest fleet that still holds every class.
const MinAgents = 6

// MaxAgents bounds a run: each agent is several real processes.
const MaxAgents = 500

// Shape of the adr-138 scenario, unscaled.
const (
	startSpread   = 2 * time.Minute  // agents start over this
	failFrom      = 8 * time.Minute  // first failure
	failTo        = 20 * time.Minute // last failure
	deleteAfter   = 30 * time.Second // orphan's worktree removed this long after the kill
	restartAt     = 24 * time.Minute
	restartOutage = time.Minute
	burstGapMin   = 5 * time.Minute // idle between bursts: always under the staleness limit
	burstGapMax   = 10 * time.Minute
	toolCallLen   = 20 * time.Second // a short tool call
	endTicks      = 3                // heartbeat intervals after the last possible lapse
)

// Build returns the plan of scenario name for n agents and client.
func Build(name string, n int, client Client, t Timing) (Plan, error) {
	if name != ScenarioADR138 {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "unknown scenario %q: the only scenario is %s", name, ScenarioADR138)
	}
	if n < MinAgents || n > MaxAgents {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "--agents %d: want %d to %d (the scenario needs at least two orphans, one wedged and healthy agents of both kinds)", n, MinAgents, MaxAgents)
	}
	if _, err := ParseClient(string(client)); err != nil {
		return Plan{}, err
	}
	if t.Staleness <= burstGapMax {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "activity staleness %s must exceed the scenario's idle gaps (%s)", t.Staleness, burstGapMax)
	}
	classes := fleet(n)
	rng := rand.New(rand.NewPCG(138, uint64(n)))
	p := Plan{Scenario: name, RestartAt: restartAt, RestartOutage: restartOutage, WatchdogEvery: t.Watchdog}

	failures := 0
	for _, c := range classes {
		if c.Failure() {
			failures++
		}
	}
	rank := map[Class]int{}
	failIdx := 0
	longIdx := 0
	for i, c := range classes {
		a := AgentPlan{
			Name:   fmt.Sprintf("a%02d", i+1),
			Ticket: fmt.Sprintf("SIM-%02d", i+1),
			Class:  c,
			Client: client,
		}
		if client == ClientMixed {
			a.Client = ClientV2
			if rank[c]%3 == 2 {
				a.Client = ClientV1
			}
		}
		rank[c]++
		a.Host = "sim-host-" + string(rune('a'+i%2))
		if a.Client == ClientV1 {
			a.Host = "sim-host-legacy"
		}
		start := time.Duration(i) * startSpread / time.Duration(n)
		a.Actions = append(a.Actions, Action{At: start, Kind: ActStart})
		switch {
		case c.Failure():
			// Failures interleave over [failFrom, failTo] in class order
			// orphan, gone, wedged so each kind is spread over the window.
			a.FailAt = failFrom + time.Duration(failIdx)*(failTo-failFrom)/time.Duration(max(failures-1, 1))
			failIdx++
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, a.FailAt-toolCallLen)...)
			switch c {
			case ClassWedged:
				// The last tool call ends exactly at FailAt; then nothing.
				a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Bash", a.FailAt-toolCallLen, toolCallLen)...)
			case ClassOrphan, ClassOrphanGone:
				// The first orphan of each kind, and every other one after
				// it, dies in the middle of a tool call, so an in-flight
				// marker is left behind as a crash would leave it.
				if rank[c]%2 == 1 {
					a.Actions = append(a.Actions, Action{At: a.FailAt - toolCallLen/2, Kind: ActPreTool, Tool: "Bash", ToolUseID: toolID(a.Name, len(a.Actions))})
				}
				a.Actions = append(a.Actions, Action{At: a.FailAt, Kind: ActKill})
				if c == ClassOrphanGone {
					a.Actions = append(a.Actions, Action{At: a.FailAt + deleteAfter, Kind: ActDeleteWorktree})
				}
			}
		case c == ClassLongStep:
			a.LongStep = 20 * time.Minute
			if longIdx%2 == 1 {
				a.LongStep = 40 * time.Minute
			}
			longIdx++
			stepAt := start + 3*time.Minute + time.Duration(rng.Int64N(int64(5*time.Minute)))
			a.LongStepAt = stepAt
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, stepAt)...)
			a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Bash", stepAt, a.LongStep)...)
			a.Actions = append(a.Actions, bursts(rng, a.Name, stepAt+a.LongStep+time.Minute, farFuture)...)
		default:
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, farFuture)...)
		}
		p.Agents = append(p.Agents, a)
	}
	// Long enough for every failure to be caught: the last failure, then the
	// lease window, the sweep and a few heartbeat ticks; and for every long
	// step to end well inside the run.
	var lastFail, lastStep time.Duration
	for _, a := range p.Agents {
		lastFail = max(lastFail, a.FailAt)
		lastStep = max(lastStep, a.LongStepAt+a.LongStep)
	}
	p.End = max(lastFail+t.LeaseWindow+t.Sweep+endTicks*t.Interval, lastStep+2*t.Interval)
	// Healthy agents work until the end; drop what lies beyond it.
	for i := range p.Agents {
		p.Agents[i].Actions = slices.DeleteFunc(p.Agents[i].Actions, func(a Action) bool { return a.At >= p.End })
		p.Agents[i].Actions = balance(p.Agents[i].Actions)
		slices.SortStableFunc(p.Agents[i].Actions, func(x, y Action) int { return int(x.At - y.At) })
	}
	return p, nil
}

// farFuture bounds open-ended burst schedules; Build cuts them at End.
const farFuture = 24 * time.Hour

// fleet returns the class of each of n agents: a fifth orphans (half of them
// with the worktree deleted), two in fifteen wedged, the rest healthy, half
// with a long step. For 30 agents: 3 + 3 orphans, 4 wedged, 10 + 10 healthy.
// Classes interleave so failures spread across the start order.
func fleet(n int) []Class {
	orphans := max(2, int(math.Round(float64(n)/5)))
	wedged := max(1, int(math.Round(float64(n)*2/15)))
	healthy := n - orphans - wedged
	long := healthy / 2
	counts := map[Class]int{
		ClassOrphanGone: orphans / 2,
		ClassOrphan:     orphans - orphans/2,
		ClassWedged:     wedged,
		ClassLongStep:   long,
		ClassIdle:       healthy - long,
	}
	out := make([]Class, 0, n)
	for len(out) < n {
		for _, c := range classOrder {
			if counts[c] > 0 {
				out = append(out, c)
				counts[c]--
			}
		}
	}
	return out
}

// bursts schedules bursts of two short tool calls from from until to, the
// gaps between bursts drawn from [burstGapMin, burstGapMax]. The last tool
// call ends before to.
func bursts(rng *rand.Rand, agent string, from, to time.Duration) []Action {
	var out []Action
	tools := []string{"Read", "Edit", "Bash", "Grep", "WebFetch"}
	for t := from; ; {
		if t+4*toolCallLen > to {
			return out
		}
		for k := range 2 {
			tool := tools[rng.IntN(len(tools))]
			out = append(out, toolCall(agent, len(out)+k*7, tool, t, toolCallLen)...)
			t += 2 * toolCallLen
		}
		t += burstGapMin + time.Duration(rng.Int64N(int64(burstGapMax-burstGapMin)))
	}
}

// toolCall is a PreToolUse at at and its PostToolUse d later.
func toolCall(agent string, seq int, tool string, at, d time.Duration) []Action {
	id := toolID(agent, int(at/time.Millisecond)+seq)
	return []Action{
		{At: at, Kind: ActPreTool, Tool: tool, ToolUseID: id},
		{At: at + d, Kind: ActPostTool, Tool: tool, ToolUseID: id},
	}
}

func toolID(agent string, n int) string { return fmt.Sprintf("toolu_%s_%d", agent, n) }

// balance drops PostToolUse actions whose PreToolUse was cut off, so a
// truncated schedule never removes a marker it did not create.
func balance(acts []Action) []Action {
	pre := map[string]bool{}
	for _, a := range acts {
		if a.Kind == ActPreTool {
			pre[a.ToolUseID] = true
		}
	}
	return slices.DeleteFunc(acts, func(a Action) bool { return a.Kind == ActPostTool && !pre[a.ToolUseID] })
}
