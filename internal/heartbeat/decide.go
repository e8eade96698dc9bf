package heartbeat

import (
	"slices"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// LeaseFact is what a tick found in lease.json.
type LeaseFact int

// What lease.json can say.
const (
	LeaseOurs    LeaseFact = iota // it names the lease the loop keeps
	LeaseMissing                  // gone, with or without the worktree
	LeaseCorrupt                  // present but unreadable
	LeaseOther                    // it names another lease: a newer start-work took over
)

// MarkerFact is one in-flight marker (a tool call between PreToolUse and
// its Post event) and whether a live process of the agent backs it.
type MarkerFact struct {
	Tool  string
	Since time.Time
	// Backed: a live child of the agent started with the call (within
	// BackWindow of PreToolUse: a Bash call's shell). A call nothing backs —
	// denied by the user, blocked by another PreToolUse hook — fires no
	// Post event, so its marker proves only that the call started.
	Backed bool
	// Agent is what the agent's own record (Claude Code's transcript) says
	// of the call: unfinished, finished, or nothing known.
	Agent CallState
	// Shell: the call is of the agent's shell tool (ShellTool), whose
	// work is a process; Unbacked is how long samples have found no
	// process backing it (0 when the latest found one, or none looked).
	Shell    bool
	Unbacked time.Duration
}

// ShellTool reports whether tool is an agent's shell tool, as hooks name
// it: Claude Code's and Codex's Bash, Gemini CLI's and Qwen Code's
// run_shell_command, the bash of GitHub Copilot CLI, opencode, Kilo and
// pi, Cursor's Shell. An MCP tool never is.
func ShellTool(tool string) bool {
	switch strings.ToLower(tool) {
	case "bash", "shell", "run_shell_command", "exec_command", "local_shell", "terminal", "powershell":
		return true
	}
	return false
}

// CallState is what the agent has recorded of a tool call.
type CallState int

// The states of a call in the agent's record.
const (
	// CallUnknown: no record, or none that could be read; the process
	// rule (Backed) decides.
	CallUnknown CallState = iota
	// CallOpen: the agent started the call and has not finished it (an MCP
	// call waiting on something remote, a subagent, any in-process tool):
	// it is in flight whether or not a process backs it.
	CallOpen
	// CallFinished: the agent finished the call without a Post event
	// (denied, blocked): only its start counts, even if a process that
	// happened to start with it still runs.
	CallFinished
)

// running reports whether m is work in flight now (before the cap). An
// unfinished shell call that no process has backed for HungAfter is hung:
// only its start counts, as for a denied call.
func (m MarkerFact) running(lim Limits) bool {
	if m.hung(lim) {
		return false
	}
	return m.Agent == CallOpen || m.Backed && m.Agent != CallFinished
}

func (m MarkerFact) hung(lim Limits) bool {
	hungAfter := lim.HungAfter
	if hungAfter <= 0 {
		hungAfter = DefaultHungAfter
	}
	return m.Agent == CallOpen && m.Shell && !m.Backed && m.Unbacked >= hungAfter
}

// Facts is everything one tick knows, gathered by the loop before it
// decides. Times are on the loop's clock.
type Facts struct {
	Now time.Time
	// Start is the loop's first POST, right after the claim.
	Start bool
	// WatchedAlive: the agent process (pid and start time) still runs.
	WatchedAlive bool
	Lease        LeaseFact
	// HookLast is the mtime of last-activity, the agent's last completed
	// tool call (or the claim); zero when the file is missing.
	HookLast time.Time
	Markers  []MarkerFact
	// Wait is the `gyrum wait` declaration, nil when none.
	Wait *gyrumdir.Wait
	// BusyAt is the latest sample at which the agent's own processes —
	// descendants of the watched process, gyrum's excluded — had used CPU
	// above the busy threshold since the sample before; zero when never.
	// BusyWhat names the busiest of them.
	BusyAt   time.Time
	BusyWhat string
	// ClaimedAt is the claim: the evidence of last resort.
	ClaimedAt time.Time
}

// Limits are the thresholds of the decision.
type Limits struct {
	// Staleness: evidence older than this is stale; the loop then reports
	// instead of claiming progress.
	Staleness time.Duration
	// InFlightMax caps a backed tool call, a declared wait, and background
	// work after the agent's own last tool call.
	InFlightMax time.Duration
	// HungAfter: an unfinished shell call that no process has backed for
	// this long is hung (issue 44: a Bash call shown "Waiting…" for two
	// hours with nothing running) and counts only its start; 0 means
	// DefaultHungAfter.
	HungAfter time.Duration
}

// Action is what a tick does.
type Action int

// The actions of a tick.
const (
	// ActPost sends a v2 heartbeat. Decision.Stale says whether it claims
	// progress or only reports that the loop lives and the agent is idle.
	ActPost Action = iota
	// ActSkip sends nothing this tick.
	ActSkip
	// ActReport sends the one exit report, then the loop exits.
	ActReport
	// ActExit ends the loop without a report.
	ActExit
)

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// Exit is why ActReport or ActExit ends the loop.
	Exit Exit
	// Age is the activity age to send (0 while work is in flight now).
	Age time.Duration
	// InFlight names what is in flight now: a tool, "wait: REASON" or
	// "background: NAME"; empty when nothing is.
	InFlight string
	// Stale marks a heartbeat that reports staleness: the loop is alive,
	// the agent has shown nothing for longer than the staleness limit. It
	// never extends a lease; it keeps the verdict "stalled" instead of
	// "silent" until the lease lapses.
	Stale bool
	// Why is a short word for the state file and the log.
	Why string
}

// BackgroundPrefix starts Decision.InFlight when the agent's background
// processes are what keeps the activity fresh.
const BackgroundPrefix = "background: "

// Decide is the loop's whole judgement, the decision record's list:
//
//  1. the watched agent process is gone (or its pid recycled) → exit
//     report "parent-exited";
//  2. lease.json is gone → exit report "worktree-gone"; it names another
//     lease → exit quietly; it is unreadable → skip;
//  3. the activity age is the time since the latest evidence of work:
//     a completed tool call (last-activity), a tool call in flight (0 while
//     the agent has not finished it — its transcript says so, or, when
//     nothing is known, a live process of the agent backs it — and it is
//     younger than the in-flight cap; otherwise only its start counts), a
//     declared wait
//     (0 until it ends, within the cap), CPU used by the agent's own
//     processes (foreground or background; never later than the in-flight
//     cap after the agent's own last tool call), or the claim;
//  4. an age over the staleness limit → POST a stale report (the loop
//     lives, the agent does not progress: verdict "stalled", no extension);
//     else → POST a heartbeat.
//
// The start POST (right after the claim) is always a heartbeat.
func Decide(f Facts, lim Limits) Decision {
	if !f.WatchedAlive {
		return Decision{Action: ActReport, Exit: ExitParentExited, Age: f.evidenceAge(lim, false), Why: "parent-exited"}
	}
	switch f.Lease {
	case LeaseMissing:
		return Decision{Action: ActReport, Exit: ExitWorktreeGone, Age: f.evidenceAge(lim, false), Why: "worktree-gone"}
	case LeaseOther:
		return Decision{Action: ActExit, Exit: ExitSuperseded, Why: "superseded"}
	case LeaseCorrupt:
		return Decision{Action: ActSkip, Why: "corrupt-lease"}
	}
	d := Decision{Action: ActPost, Why: "ok"}
	d.InFlight = f.inFlightNow(lim)
	if d.InFlight == "" {
		var busy bool
		d.Age, busy = f.evidence(lim, true)
		if busy && d.Age <= lim.Staleness {
			// The agent's own processes are what keeps it fresh: say so.
			d.InFlight = BackgroundPrefix + f.BusyWhat
		}
	}
	if !f.Start && d.Age > lim.Staleness {
		d.Stale, d.Why = true, "stale-report"
	}
	return d
}

// inFlightNow names the work running now that keeps the age at 0: the
// newest running tool call within the cap, else a declared wait.
func (f Facts) inFlightNow(lim Limits) string {
	name, since := "", time.Time{}
	for _, m := range f.Markers {
		if !m.running(lim) || f.Now.Sub(m.Since) >= lim.InFlightMax {
			continue
		}
		if name == "" || m.Since.After(since) {
			name, since = m.Tool, m.Since
			if name == "" {
				name = "unknown"
			}
		}
	}
	if name != "" {
		return name
	}
	if w := f.Wait; w != nil && f.Now.Before(w.Until) && f.Now.Sub(w.DeclaredAt) < lim.InFlightMax {
		return gyrumdir.WaitPrefix + w.Reason
	}
	return ""
}

// evidenceAge is the time since the latest evidence of work. With live
// false (the agent is gone) nothing counts as running now: a marker it
// left behind is evidence of its call's start only, and background CPU
// stops counting at the last busy sample.
func (f Facts) evidenceAge(lim Limits, live bool) time.Duration {
	age, _ := f.evidence(lim, live)
	return age
}

// evidence is evidenceAge, and whether the latest evidence is the agent's
// processes being busy.
func (f Facts) evidence(lim Limits, live bool) (age time.Duration, busy bool) {
	agent := f.HookLast // the agent's own last tool call
	for _, m := range f.Markers {
		if m.Since.After(agent) {
			agent = m.Since
		}
	}
	if w := f.Wait; w != nil {
		// A wait counts until it ends (within the cap); for a dead agent
		// only its declaration is evidence.
		end := w.DeclaredAt
		if live {
			end = earliest(w.Until, w.DeclaredAt.Add(lim.InFlightMax), f.Now)
		}
		if end.After(agent) {
			agent = end
		}
	}
	last := agent
	if !f.BusyAt.IsZero() && !agent.IsZero() {
		// Background work counts, but a runaway process no longer than the
		// in-flight cap after the agent's own last tool call.
		if b := earliest(f.BusyAt, agent.Add(lim.InFlightMax)); b.After(last) {
			last, busy = b, true
		}
	}
	if last.IsZero() {
		last = f.ClaimedAt
	}
	if last.IsZero() {
		return lim.Staleness + 1, false // no evidence at all: stale
	}
	return max(f.Now.Sub(last), 0), busy
}

// Busy reports whether the agent's processes used enough CPU between two
// samples to count as work: at least BusyFraction of one core over the
// elapsed time, and at least BusyMinCPU. An idle dev server, a shell
// waiting on the network or an MCP server at rest stays below it; a build,
// a test suite or a compiler is far above.
func Busy(cpu, elapsed time.Duration) bool {
	return cpu >= BusyMinCPU && float64(cpu) >= BusyFraction*float64(elapsed)
}

// Thresholds of Busy and of marker backing.
const (
	BusyFraction = 0.02
	BusyMinCPU   = 20 * time.Millisecond
	// startSlack is how much earlier than its marker a process may seem to
	// start and still back the call: start times are rounded to a clock
	// tick and placed on the wall clock through the uptime.
	startSlack = time.Second
)

// CPUUse compares two samples of the agent's processes and returns the CPU
// time they used in between, and the name of the busiest. A process in
// both counts its growth; one new in cur counts all it used (it started
// after prev); one gone since prev counts nothing more (its parent's
// cutime takes its CPU if the parent is still sampled).
func CPUUse(prev, cur []proc.Sample) (time.Duration, string) {
	before := make(map[proc.Identity]time.Duration, len(prev))
	for _, p := range prev {
		before[p.Identity] = p.CPU
	}
	var total, top time.Duration
	name := ""
	for _, p := range cur {
		d := p.CPU - before[p.Identity]
		if d <= 0 {
			continue
		}
		total += d
		if d > top {
			top, name = d, p.Name
		}
	}
	return total, name
}

// Backed reports whether a tool call that started at since is running: a
// process of procs that the agent itself (a pid of agents) started within
// BackWindow after the call began — a Bash call's shell is a child of
// claude started milliseconds after PreToolUse. A process the agent
// started later (the next call's dev server) does not back an earlier
// call that nothing runs (one denied), nor does a grandchild.
func Backed(since time.Time, procs []proc.Sample, agents map[int]bool) bool {
	return BackedMarkers([]time.Time{since}, procs, agents)[0]
}

// BackedMarkers is Backed for several calls at once (their PreToolUse
// times): each process backs one call at most, the latest one that began
// before it and that no other process backs yet. A call denied at t and
// the next call's shell 10 s later are then told apart: the shell backs
// the next call, and the denied one stays unbacked, where Backed alone
// would have given the shell to both for as long as it runs (a dev server:
// hours). Parallel calls each get a shell of their own.
func BackedMarkers(sinces []time.Time, procs []proc.Sample, agents map[int]bool) []bool {
	backed := make([]bool, len(sinces))
	order := make([]int, len(sinces)) // markers, latest first
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return sinces[b].Compare(sinces[a]) })
	var children []proc.Sample
	for _, p := range procs {
		if agents[p.PPID] {
			children = append(children, p)
		}
	}
	slices.SortFunc(children, func(a, b proc.Sample) int { return a.Started.Compare(b.Started) })
	for _, p := range children {
		for _, i := range order {
			since := sinces[i]
			if backed[i] || p.Started.Before(since.Add(-startSlack)) || p.Started.After(since.Add(BackWindow)) {
				continue
			}
			backed[i] = true
			break
		}
	}
	return backed
}

// BackWindow is how long after PreToolUse a tool call's own process may
// start (the PreToolUse hooks run first, up to their timeout).
const BackWindow = 30 * time.Second

func earliest(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.Before(t) {
			t = u
		}
	}
	return t
}
