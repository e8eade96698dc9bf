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

// Classes of simulated agents. The first four are failures the product must
// catch; the next three are healthy agents that must keep their lease; the
// last is a healthy agent whose lease an operator ends under it, which must
// be told.
const (
	// ClassOrphan: the watched agent process is SIGKILLed; the worktree stays.
	ClassOrphan Class = "orphan"
	// ClassOrphanGone: the watched process is SIGKILLed and the worktree is
	// deleted shortly after (the ADR's "workdirs deleted" loops).
	ClassOrphanGone Class = "orphan-worktree-gone"
	// ClassWedged: the agent process stays alive but makes no more tool calls.
	ClassWedged Class = "wedged"
	// ClassWedgedDenied: the agent's last tool call is denied (PreToolUse,
	// no Post event, nothing runs), then it wedges. Its marker must count
	// as evidence of the call's start only, never as a call in flight.
	ClassWedgedDenied Class = "wedged-after-denied"
	// ClassLongStep: healthy, with a 10-minute foreground Bash call (the
	// longest Claude Code allows) and a 20- or 40-minute background job:
	// PreToolUse, PostToolUse 0.1 s later, then no hook at all while the
	// job's process works, then the agent wakes with a tool call.
	ClassLongStep Class = "healthy-long-step"
	// ClassIdle: healthy, short bursts of tool calls with idle gaps shorter
	// than the staleness limit; one call is denied (no Post event) and the
	// agent goes on working; some Bash calls fail (PostToolUseFailure).
	ClassIdle Class = "healthy-idle-bursts"
	// ClassProjectCwd: healthy like ClassIdle, in a worktree made for the
	// ticket (start-work --worktree) while Claude Code resets the shell's
	// cwd to the project: every hook payload's cwd is the project directory,
	// which holds no .gyrum/. Only the agent index (CLAUDE_PID) finds the
	// lease.
	ClassProjectCwd Class = "healthy-cwd-reset"
	// ClassReleased: healthy like ClassIdle until an operator releases its
	// lease mid-run; the agent keeps working until a hook tells it (the
	// lease-ended notice on its next PostToolUse), then stops.
	ClassReleased Class = "operator-released"
	// ClassLooping: works like ClassIdle until LoopAt, then runs the same
	// failing Bash call (same input, same error) every loopEvery until the
	// end (issue 44): its lease must turn looping, and it must be told
	// once; the lease stays held (warpsim's warp only reports).
	ClassLooping Class = "looping"
	// ClassSpinning: active from its start to the end — a read of a
	// different file every exploreEvery — but never changes its worktree
	// (issue 44: activity is not progress): its lease must turn spinning
	// once the progress deadline has passed, and it must be told once.
	ClassSpinning Class = "spinning"
)

// classOrder lists every class in report order.
var classOrder = []Class{ClassOrphan, ClassOrphanGone, ClassWedged, ClassWedgedDenied,
	ClassLongStep, ClassIdle, ClassProjectCwd, ClassReleased, ClassLooping, ClassSpinning}

// Classes returns every class in report order.
func Classes() []Class { return slices.Clone(classOrder) }

// Failure reports whether agents of class c fail during the scenario.
func (c Class) Failure() bool {
	return c == ClassOrphan || c == ClassOrphanGone || c == ClassWedged || c == ClassWedgedDenied
}

// Healthy reports whether agents of class c work until the end and must
// keep their lease.
func (c Class) Healthy() bool {
	return c == ClassLongStep || c == ClassIdle || c == ClassProjectCwd
}

// Client is the heartbeat client an agent's host runs.
type Client string

// Clients.
const (
	// ClientV2 is gyrum's activity-gated loop sending schema_version 2.
	ClientV2 Client = "v2"
	// ClientV1 is an unmigrated host: gyrum's loop run with
	// --schema-version 1, which sends the v1 body.
	ClientV1 Client = "v1"
	// ClientMixed puts the second agent of every class, and every third
	// after it, on an unmigrated v1 host and the rest on v2 hosts.
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
	ActPreTool        ActionKind = "pre-tool"        // hook: PreToolUse (then the call's process, for Bash)
	ActPostTool       ActionKind = "post-tool"       // hook: PostToolUse or PostToolUseFailure
	ActKill           ActionKind = "kill"            // SIGKILL the watched process
	ActDeleteWorktree ActionKind = "delete-worktree" // rm -r the worktree
	ActRelease        ActionKind = "release"         // an operator releases the agent's lease
)

// Action is one scheduled step of an agent, at an unscaled offset from the
// start of the scenario.
type Action struct {
	At        time.Duration
	Kind      ActionKind
	Tool      string // hook actions
	ToolUseID string // hook actions
	// Denied (PreToolUse): the call is denied; no process runs and no Post
	// event follows, as Claude Code does for a denied call.
	Denied bool
	// Background (PreToolUse of Bash): the call starts a background job
	// that works this long; its PostToolUse follows 0.1 s later.
	Background time.Duration
	// Failed (PostToolUse): the call failed (non-zero exit, timeout): the
	// event is PostToolUseFailure.
	Failed bool
	// Repeat: the call is the looping agent's repeated one: the same
	// input and the same result every time.
	Repeat bool
	// Explore: the call only reads (the spinning agent's): it leaves the
	// worktree as it was.
	Explore bool
}

// AgentPlan is the script of one simulated agent.
type AgentPlan struct {
	Name   string // agent label, "a01"
	Ticket string
	Host   string
	Class  Class
	Client Client // ClientV1 or ClientV2
	// FailAt is the planned failure (unscaled, from the start) of a failure
	// class: the kill of an orphan, the last tool call of a wedged agent,
	// the denied call of a wedged-after-denied agent.
	FailAt time.Duration
	// LongStepAt and LongStep are the start and length of the background
	// job of a long-step agent.
	LongStepAt, LongStep time.Duration
	// ReleaseAt is when an operator releases the lease (operator-released).
	ReleaseAt time.Duration
	// LoopAt is when a looping agent starts repeating its failing call.
	LoopAt time.Duration
	// ProjectCwd: the hook payloads' cwd (and the session's) is a project
	// directory without .gyrum/, not the worktree.
	ProjectCwd bool
	Actions    []Action // in time order
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

// BackgroundJobs returns the most background jobs the plan runs at once.
func (p Plan) BackgroundJobs() int {
	type edge struct {
		at time.Duration
		d  int
	}
	var es []edge
	for _, a := range p.Agents {
		for _, act := range a.Actions {
			if act.Kind == ActPreTool && act.Background > 0 {
				es = append(es, edge{act.At, 1}, edge{act.At + act.Background, -1})
			}
		}
	}
	slices.SortFunc(es, func(x, y edge) int {
		if x.at != y.at {
			return int(x.at - y.at)
		}
		return x.d - y.d // an end before a start at the same instant
	})
	n, peak := 0, 0
	for _, e := range es {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// Timing are the product durations of the run, unscaled (the defaults of
// docs/DESIGN.md section 2); the simulator divides each by the time scale.
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
	// SpinAfter is warp's progress deadline (the verdict spinning).
	SpinAfter time.Duration
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
		SpinAfter:    warp.DefaultSpinAfter,
	}
}

// ScenarioADR138 is the night of the decision record (6 orphaned loops and
// 4 wedged agents in a fleet of 30), played by agents that behave like the
// measured Claude Code client (docs/DESIGN.md section 6).
const ScenarioADR138 = "adr-138"

// DefaultAgents is the fleet size of the adr-138 scenario.
const DefaultAgents = 30

// MinAgents is the smallest fleet that still holds every class.
const MinAgents = 10

// MaxAgents bounds a run: each agent is several real processes.
const MaxAgents = 500

// MaxForeground is the longest foreground tool call: Claude Code's Bash
// timeout is at most 10 minutes; longer work runs in the background.
const MaxForeground = 10 * time.Minute

// Shape of the adr-138 scenario, unscaled.
const (
	startSpread   = 2 * time.Minute  // agents start over this
	failFrom      = 8 * time.Minute  // first failure
	failTo        = 20 * time.Minute // last failure
	releaseFrom   = 10 * time.Minute // first operator release
	releaseTo     = 18 * time.Minute // last operator release
	deleteAfter   = 30 * time.Second // orphan's worktree removed this long after the kill
	restartAt     = 24 * time.Minute
	restartOutage = time.Minute
	burstGapMin   = 5 * time.Minute // idle between bursts: always under the staleness limit
	burstGapMax   = 10 * time.Minute
	toolCallLen   = 20 * time.Second       // a short tool call
	loopEvery     = 2 * time.Minute        // the looping agent's repeated call
	exploreEvery  = 2 * time.Minute        // the spinning agent's reads
	bgPostAfter   = 100 * time.Millisecond // PostToolUse of a background Bash call
	endTicks      = 3                      // heartbeat intervals after the last possible lapse
)

// Build returns the plan of scenario name for n agents and client.
func Build(name string, n int, client Client, t Timing) (Plan, error) {
	if name != ScenarioADR138 {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "unknown scenario %q: the only scenario is %s", name, ScenarioADR138)
	}
	if n < MinAgents || n > MaxAgents {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "--agents %d: want %d to %d (the scenario needs two orphans and one agent of every other class)", n, MinAgents, MaxAgents)
	}
	if _, err := ParseClient(string(client)); err != nil {
		return Plan{}, err
	}
	if t.SpinAfter <= 0 {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "progress deadline %s must be positive (the spinning agents need one)", t.SpinAfter)
	}
	if t.Staleness <= max(burstGapMax, MaxForeground) {
		return Plan{}, warp.Errorf(warp.ErrInvalid, "activity staleness %s must exceed the scenario's idle gaps and foreground calls (%s)", t.Staleness, max(burstGapMax, MaxForeground))
	}
	classes := fleet(n)
	rng := rand.New(rand.NewPCG(138, uint64(n)))
	p := Plan{Scenario: name, RestartAt: restartAt, RestartOutage: restartOutage, WatchdogEvery: t.Watchdog}

	failures, released := 0, 0
	for _, c := range classes {
		if c.Failure() {
			failures++
		}
		if c == ClassReleased {
			released++
		}
	}
	rank := map[Class]int{}
	failIdx, longIdx, relIdx := 0, 0, 0
	for i, c := range classes {
		a := AgentPlan{
			Name:   fmt.Sprintf("a%02d", i+1),
			Ticket: fmt.Sprintf("SIM-%02d", i+1),
			Class:  c,
			Client: client,
		}
		if client == ClientMixed {
			a.Client = ClientV2
			if rank[c]%3 == 1 {
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
			// so each kind is spread over the window.
			a.FailAt = failFrom + time.Duration(failIdx)*(failTo-failFrom)/time.Duration(max(failures-1, 1))
			failIdx++
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, a.FailAt-toolCallLen, false)...)
			switch c {
			case ClassWedged:
				// The last tool call ends exactly at FailAt; then nothing.
				a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Bash", a.FailAt-toolCallLen, toolCallLen)...)
			case ClassWedgedDenied:
				// A tool call, then at FailAt a denied one: PreToolUse and
				// nothing else, ever.
				a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Read", a.FailAt-3*toolCallLen, toolCallLen)...)
				a.Actions = append(a.Actions, Action{At: a.FailAt, Kind: ActPreTool, Tool: "Bash", ToolUseID: toolID(a.Name, len(a.Actions)), Denied: true})
			case ClassOrphan, ClassOrphanGone:
				// The first orphan of each kind, and every other one after
				// it, dies in the middle of a tool call, so an in-flight
				// marker (and the call's process) is left behind as a crash
				// would leave it.
				if rank[c]%2 == 1 {
					a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Bash", a.FailAt-toolCallLen/2, toolCallLen)[0])
				}
				a.Actions = append(a.Actions, Action{At: a.FailAt, Kind: ActKill})
				if c == ClassOrphanGone {
					a.Actions = append(a.Actions, Action{At: a.FailAt + deleteAfter, Kind: ActDeleteWorktree})
				}
			}
		case c == ClassLongStep:
			// The first long-step agent, and every other one, runs a 40-minute
			// job (longer than the lease window); the others 20 minutes
			// (longer than the staleness limit).
			a.LongStep = 40 * time.Minute
			if longIdx%2 == 1 {
				a.LongStep = 20 * time.Minute
			}
			longIdx++
			fgAt := start + time.Minute + time.Duration(rng.Int64N(int64(2*time.Minute)))
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, fgAt, false)...)
			a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Bash", fgAt, MaxForeground)...)
			a.LongStepAt = fgAt + MaxForeground + time.Minute
			a.Actions = append(a.Actions, bgCall(a.Name, len(a.Actions), a.LongStepAt, a.LongStep)...)
			wake := a.LongStepAt + a.LongStep
			a.Actions = append(a.Actions, toolCall(a.Name, len(a.Actions), "Read", wake, toolCallLen)...)
			a.Actions = append(a.Actions, bursts(rng, a.Name, wake+time.Minute, farFuture, false)...)
		case c == ClassLooping:
			// Spread over the failure window, as failures are; then the
			// same failing call until the end.
			a.LoopAt = failFrom + time.Duration(rank[c]-1)*(failTo-failFrom)/4
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, a.LoopAt, false)...)
			for at := a.LoopAt; at < farFuture; at += loopEvery {
				call := toolCall(a.Name, len(a.Actions), "Bash", at, toolCallLen)
				call[0].Repeat, call[1].Repeat, call[1].Failed = true, true, true
				a.Actions = append(a.Actions, call...)
			}
		case c == ClassSpinning:
			// Reads of different files from the start to the end, no edit.
			for at := start + 10*time.Second; at < farFuture; at += exploreEvery {
				call := toolCall(a.Name, len(a.Actions), "Read", at, toolCallLen)
				call[0].Explore, call[1].Explore = true, true
				a.Actions = append(a.Actions, call...)
			}
		case c == ClassReleased:
			a.ReleaseAt = releaseFrom + time.Duration(relIdx)*(releaseTo-releaseFrom)/time.Duration(max(released-1, 1))
			relIdx++
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, farFuture, false)...)
			a.Actions = append(a.Actions, Action{At: a.ReleaseAt, Kind: ActRelease})
		default: // ClassIdle, ClassProjectCwd
			a.ProjectCwd = c == ClassProjectCwd
			a.Actions = append(a.Actions, bursts(rng, a.Name, start+10*time.Second, farFuture, true)...)
		}
		p.Agents = append(p.Agents, a)
	}
	// Long enough for every failure to be caught: the last failure, then the
	// lease window, the sweep and a few heartbeat ticks; and for every long
	// step to end well inside the run.
	// And for every spinning agent to pass the progress deadline, a few
	// ticks before the end.
	var lastFail, lastStep, lastSpin time.Duration
	for _, a := range p.Agents {
		lastFail = max(lastFail, a.FailAt, a.ReleaseAt)
		lastStep = max(lastStep, a.LongStepAt+a.LongStep)
		if a.Class == ClassSpinning {
			lastSpin = max(lastSpin, a.Actions[0].At+t.SpinAfter)
		}
	}
	p.End = max(lastFail+t.LeaseWindow+t.Sweep+endTicks*t.Interval, lastStep+2*t.Interval, lastSpin+endTicks*t.Interval)
	// Healthy agents work until the end; drop what lies beyond it.
	for i := range p.Agents {
		p.Agents[i].Actions = cut(p.Agents[i].Actions, p.End)
		slices.SortStableFunc(p.Agents[i].Actions, func(x, y Action) int { return int(x.At - y.At) })
	}
	return p, nil
}

// farFuture bounds open-ended burst schedules; Build cuts them at End.
const farFuture = 24 * time.Hour

// fleet returns the class of each of n agents: a fifth orphans (half of them
// with the worktree deleted), two in fifteen wedged, one in fifteen wedged
// after a denied call, one in fifteen released by an operator, and the
// rest healthy: three in eight of them with long steps, a quarter in a
// worktree away from the project's cwd, one in fifteen of the fleet
// looping and one in fifteen spinning (issue 44), the others idle between
// bursts. For 30 agents: 3 + 3 orphans, 4 + 2 wedged, 6 + 2 + 4 healthy,
// 2 looping, 2 spinning, 2 released. Classes interleave so failures
// spread across the start order.
func fleet(n int) []Class {
	orphans := max(2, int(math.Round(float64(n)/5)))
	wedged := max(1, int(math.Round(float64(n)*2/15)))
	denied := max(1, int(math.Round(float64(n)/15)))
	released := max(1, int(math.Round(float64(n)/15)))
	healthy := n - orphans - wedged - denied - released
	long := max(1, int(math.Round(float64(healthy)*3/8)))
	cwd := max(1, healthy/4)
	// The looping and spinning agents (issue 44) come out of the
	// idle-bursts ones.
	looping := max(1, int(math.Round(float64(n)/15)))
	spinning := max(1, int(math.Round(float64(n)/15)))
	idle := healthy - long - cwd - looping - spinning
	if idle < 1 && long > 1 {
		long, idle = long-1, idle+1
	}
	counts := map[Class]int{
		ClassOrphanGone:   orphans / 2,
		ClassOrphan:       orphans - orphans/2,
		ClassWedged:       wedged,
		ClassWedgedDenied: denied,
		ClassLongStep:     long,
		ClassIdle:         idle,
		ClassProjectCwd:   cwd,
		ClassReleased:     released,
		ClassLooping:      looping,
		ClassSpinning:     spinning,
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
// call ends before to. With deny, the first call of the second burst is
// denied (a PreToolUse without Post event) and the agent goes on. One Bash
// call in four fails (PostToolUseFailure).
func bursts(rng *rand.Rand, agent string, from, to time.Duration, deny bool) []Action {
	var out []Action
	tools := []string{"Read", "Edit", "Bash", "Grep", "WebFetch"}
	for t, burst := from, 0; ; burst++ {
		if t+4*toolCallLen > to {
			return out
		}
		for k := range 2 {
			tool := tools[rng.IntN(len(tools))]
			call := toolCall(agent, len(out)+k*7, tool, t, toolCallLen)
			switch {
			case deny && burst == 1 && k == 0:
				call[0].Tool, call[0].Denied = "Bash", true
				call = call[:1]
			case tool == "Bash" && rng.IntN(4) == 0:
				call[1].Failed = true
			}
			out = append(out, call...)
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

// bgCall is a Bash call that starts a background job working for d: its
// PostToolUse follows bgPostAfter after the PreToolUse.
func bgCall(agent string, seq int, at, d time.Duration) []Action {
	c := toolCall(agent, seq, "Bash", at, bgPostAfter)
	c[0].Background = d
	return c
}

func toolID(agent string, n int) string { return fmt.Sprintf("toolu_%s_%d", agent, n) }

// cut drops what lies at or after end, and the tool calls that would end
// there: a truncated schedule neither leaves a marker that looks like a
// denied call nor removes one it did not create.
func cut(acts []Action, end time.Duration) []Action {
	late := map[string]bool{}
	for _, a := range acts {
		if a.Kind == ActPostTool && a.At >= end {
			late[a.ToolUseID] = true
		}
	}
	return slices.DeleteFunc(acts, func(a Action) bool {
		return a.At >= end || a.Kind == ActPreTool && late[a.ToolUseID]
	})
}
