package sim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/warp"
)

// RunInfo describes a run for Summarize.
type RunInfo struct {
	Scenario   string
	Client     Client
	Mode       warp.Mode
	Watchdog   bool
	TimeScale  float64
	Timing     Timing // unscaled
	Start, End time.Time
	PlannedEnd time.Duration // unscaled
	Restarts   []Restart
	// WatchdogRuns counts `gyrum watchdog sweep` runs; WatchdogErrors holds
	// the failed ones.
	WatchdogRuns   int
	WatchdogErrors []string
	// The simulator's own lateness, wall clock, once every agent has
	// started (SteadyFrom; the start of the fleet is a burst of process
	// starts the scale compresses, and no claim depends on its timing): how
	// late each scheduled action ran, how long each hook exec took.
	// LagTolerance is the p95 each may reach (and the loops' tick lateness
	// too); a quarter of the scaled heartbeat interval when zero.
	Injection, Hooks []time.Duration
	// JobBursts: how late each background job's CPU bursts ended.
	JobBursts    []time.Duration
	SteadyFrom   time.Time
	LagTolerance time.Duration
	// BackgroundJobs is the most background jobs at once; JobCPUPercent
	// the CPU each uses, in % of one core.
	BackgroundJobs int
	JobCPUPercent  float64
}

// Restart is one stop and start of the embedded warp, wall clock.
type Restart struct {
	StoppedAt, StartedAt time.Time
}

// Verdicts of a run.
const (
	VerdictPass = "pass" // every claim holds
	VerdictFail = "fail" // a claim does not hold
	// VerdictTooLoaded: the machine ran the simulation too late for its
	// time scale (or cannot give its background jobs the CPU they need);
	// the claims are not judged.
	VerdictTooLoaded = "too-loaded"
)

// Report is the outcome of a run. Minutes are unscaled (product time).
type Report struct {
	Scenario  string   `json:"scenario"`
	Agents    int      `json:"agents"`
	Client    string   `json:"client"`
	Mode      string   `json:"mode"`
	Watchdog  bool     `json:"watchdog"`
	TimeScale float64  `json:"time_scale"`
	Settings  Settings `json:"settings"`
	// Verdict is VerdictPass, VerdictFail or VerdictTooLoaded; OK is true
	// for VerdictPass only.
	Verdict string `json:"verdict"`
	// Ran is false when the machine was judged too loaded before the run.
	Ran bool `json:"ran"`
	// Minutes of product time simulated and the wall-clock seconds they took.
	Minutes     float64       `json:"minutes"`
	RealSeconds float64       `json:"real_seconds"`
	Restarts    []RestartInfo `json:"restarts"`
	// BoundMinutes is the claim's limit from failure to lapse: lease window
	// + one heartbeat interval (later only when a startup grace applied).
	BoundMinutes       float64       `json:"bound_minutes"`
	HeartbeatsReceived int           `json:"heartbeats_received"`
	StaleReports       int           `json:"stale_reports"`
	Classes            []ClassResult `json:"classes"`
	Checks             []Check       `json:"checks"`
	OK                 bool          `json:"ok"`
	Timing             TimingReport  `json:"timing"`
	OperatorActions    int           `json:"operator_actions"`
	WatchdogRuns       int           `json:"watchdog_runs,omitempty"`
	WatchdogErrors     []string      `json:"watchdog_errors,omitempty"`
	AgentResults       []AgentResult `json:"agent_results"`
	// DetectionToleranceS is how long after a failure a heartbeat already
	// on its way is not the loop's fault (product seconds).
	DetectionToleranceS float64 `json:"detection_tolerance_s"`
	// MaxInjectionLagMin is how late, at worst, a failure happened against
	// its schedule (a busy machine runs late; the figures use the actual time).
	MaxInjectionLagMin float64 `json:"max_injection_lag_min"`
	// The work of the failed agents (issue 45): edits left uncommitted in
	// their worktrees; those no later attempt could recover (in no
	// snapshot), and those deleted with their worktree before the loop
	// saved it.
	WorkEdits   int `json:"work_edits"`
	WorkLost    int `json:"work_lost"`
	WorkDeleted int `json:"work_deleted_with_worktree"`
}

// Settings are the product durations of the run, unscaled, in seconds.
type Settings struct {
	LeaseWindowS  float64 `json:"lease_window_s"`
	IntervalS     float64 `json:"heartbeat_interval_s"`
	StalenessS    float64 `json:"activity_staleness_s"`
	InFlightMaxS  float64 `json:"inflight_max_s"`
	SweepS        float64 `json:"sweep_interval_s"`
	StartupGraceS float64 `json:"startup_grace_s"`
	StallAfterS   float64 `json:"stall_after_s"`
	SilentAfterS  float64 `json:"silent_after_s"`
	WatchdogS     float64 `json:"watchdog_every_s,omitempty"`
}

// RestartInfo is a warp restart in product minutes from the start.
type RestartInfo struct {
	StoppedAtMin  float64 `json:"stopped_at_min"`
	StartedAtMin  float64 `json:"started_at_min"`
	GraceUntilMin float64 `json:"grace_until_min"`
}

// ClassResult is one row of the report: the agents of one class on one client.
type ClassResult struct {
	Class   Class  `json:"class"`
	Client  Client `json:"client"`
	Agents  int    `json:"agents"`
	Started int    `json:"started"`
	// Failures counts agents whose failure was injected (failure classes).
	Failures int `json:"failures"`
	// Lapsed counts leases that lapsed; FalseLapses those of healthy agents,
	// of failing agents before their failure, of released agents before
	// the release.
	Lapsed      int `json:"lapsed"`
	FalseLapses int `json:"false_lapses"`
	// CaughtInTime counts failures whose lease lapsed within BoundMinutes.
	CaughtInTime int `json:"caught_in_time"`
	// Failure → lapse, minutes, over the lapsed failures; nil when none.
	LapseP50Min *float64 `json:"lapse_p50_min"`
	LapseMaxMin *float64 `json:"lapse_max_min"`
	// Heartbeats claiming progress (exit and stale reports excluded) the
	// server received after the failure; and after the point the loop
	// could know of it (orphans: at once; wedged: once the last evidence
	// is older than the staleness limit).
	HeartbeatsAfterFailure    int `json:"heartbeats_after_failure"`
	HeartbeatsAfterDetectable int `json:"heartbeats_after_detectable"`
	// StaleReports: heartbeats that only report a stale agent (they never
	// extend a lease); expected from a wedged agent's loop until the lapse.
	StaleReports int `json:"stale_reports"`
	ExitReports  int `json:"exit_reports"`
	// CreditedAfterFailure counts leases whose last_activity_at, as the
	// server recorded it, lies after the failure (beyond the tolerance): a
	// heartbeat or exit report claimed activity the agent did not have.
	CreditedAfterFailure int `json:"credited_after_failure"`
	// Released counts leases an operator released mid-run; EndedUnder the
	// agents that went on working after their loop learned the lease had
	// ended (404, 409, 410); Told those a hook told on the first tool call
	// after that.
	Released   int `json:"released"`
	EndedUnder int `json:"ended_under_agent"`
	Told       int `json:"told"`
	// PostsAfterEnd counts heartbeats sent after the loop's first answer
	// that the lease was over: a loop must exit on it.
	PostsAfterEnd int `json:"posts_after_end"`
	// BackgroundHeartbeats counts heartbeats whose in_flight says the
	// agent's own processes kept it busy ("background: NAME").
	BackgroundHeartbeats int `json:"background_heartbeats"`
	// Loops still running at the end; after the final watchdog sweep (nil
	// without --watchdog). For healthy agents a running loop is expected.
	LoopsAtEnd         int  `json:"loops_at_end"`
	LoopsAfterWatchdog *int `json:"loops_after_watchdog"`
	// EndedLoops are loops still running for a lease that ended at least
	// two heartbeat intervals before the end (a wedged agent's loop exits
	// at the 410 after the lapse).
	EndedLoops int `json:"ended_lease_loops"`
	// NotActiveAtEnd counts healthy leases whose verdict at the end is not
	// active (stalled, unwired, silent, exited).
	NotActiveAtEnd int `json:"not_active_at_end"`
	// LeasesHeldAtEnd counts leases still held when the scenario ended.
	LeasesHeldAtEnd int `json:"leases_held_at_end"`
	// Operator actions a person would still have to take: release a lease
	// of a failed agent, kill a loop of a dead agent, of an ended lease or
	// one still claiming progress for a wedged agent.
	OperatorReleases int `json:"operator_releases"`
	OperatorKills    int `json:"operator_kills"`
	OperatorActions  int `json:"operator_actions"`
	HookCalls        int `json:"hook_calls"`
	HookFailures     int `json:"hook_failures"`
	Notices          int `json:"notices"`
}

// AgentResult is the outcome for one agent (JSON only).
type AgentResult struct {
	Name     string `json:"name"`
	Ticket   string `json:"ticket"`
	Host     string `json:"host"`
	Class    Class  `json:"class"`
	Client   Client `json:"client"`
	Started  bool   `json:"started"`
	StartErr string `json:"start_error,omitempty"`
	// Product minutes from the start of the scenario; nil when it did not happen.
	FailedAtMin      *float64 `json:"failed_at_min"`
	LapsedAtMin      *float64 `json:"lapsed_at_min"`
	FailureToLapse   *float64 `json:"failure_to_lapse_min"`
	BoundMin         *float64 `json:"bound_min"`
	LapseReason      string   `json:"lapse_reason,omitempty"`
	CaughtInTime     bool     `json:"caught_in_time"`
	FalseLapse       bool     `json:"false_lapse"`
	LeaseState       string   `json:"lease_state_at_end"`
	LastActivityMin  *float64 `json:"last_activity_at_min"`
	LastHeartbeatMin *float64 `json:"last_heartbeat_at_min"`
	ExpiresAtMin     *float64 `json:"expires_at_min"`
	Verdict          string   `json:"verdict_at_end,omitempty"`
	Heartbeats       int      `json:"heartbeats"`
	AfterFailure     int      `json:"heartbeats_after_failure"`
	AfterDetectable  int      `json:"heartbeats_after_detectable"`
	StaleReports     int      `json:"stale_reports"`
	ExitReports      int      `json:"exit_reports"`
	PostsAfterEnd    int      `json:"posts_after_end"`
	Background       int      `json:"background_heartbeats"`
	CreditedAfter    bool     `json:"activity_credited_after_failure"`
	ReleasedAtMin    *float64 `json:"released_at_min"`
	// LearnedAtMin: the loop's first answer that the lease was over.
	LearnedAtMin *float64 `json:"learned_at_min"`
	// EndedUnder: the agent ran a tool call after its loop learned.
	EndedUnder bool `json:"ended_under_agent"`
	// ToldAtMin: the tool call whose PostToolUse hook showed the notice;
	// MissedNotices: Post hooks after the loop learned that did not show it.
	ToldAtMin        *float64 `json:"told_at_min"`
	Told             bool     `json:"told"`
	MissedNotices    int      `json:"missed_notices"`
	Notices          int      `json:"notices"`
	LoopNotices      int      `json:"loop_notices"`
	SpinNotices      int      `json:"spin_notices"`
	LoopsAtEnd       int      `json:"loops_at_end"`
	LoopsAfterWD     *int     `json:"loops_after_watchdog"`
	WatchedAlive     bool     `json:"watched_alive_at_end"`
	NeedsRelease     bool     `json:"needs_release"`
	NeedsKill        bool     `json:"needs_kill"`
	HookCalls        int      `json:"hook_calls"`
	HookFailures     int      `json:"hook_failures"`
	HookProblem      string   `json:"hook_problem,omitempty"`
	WorktreeDeleted  bool     `json:"worktree_deleted"`
	WorkEdits        int      `json:"work_edits"`
	WorkLost         int      `json:"work_lost"`
	WorkDeleted      int      `json:"work_deleted_with_worktree"`
	Snapshot         string   `json:"snapshot,omitempty"`
	ProjectCwd       bool     `json:"project_cwd,omitempty"`
	LongStepMinutes  float64  `json:"long_step_min,omitempty"`
	PlannedFailAtMin float64  `json:"planned_fail_at_min,omitempty"`
}

// Check is one claim of the product, checked against the run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Summarize computes the report of a run from its observations.
func Summarize(info RunInfo, obs []Observation) *Report {
	t := info.Timing
	scale := info.TimeScale
	realD := func(d time.Duration) time.Duration { return time.Duration(float64(d) / scale) }
	minutes := func(d time.Duration) float64 { return round1(float64(d) * scale / float64(time.Minute)) }
	offset := func(at time.Time) *float64 {
		if at.IsZero() {
			return nil
		}
		return ptr(minutes(at.Sub(info.Start)))
	}
	// A heartbeat already on the wire when an agent died is not the loop's
	// fault: a quarter of an interval of tolerance cannot hide a second one.
	tolerance := realD(t.Interval / 4)

	rep := newReport(info, len(obs))
	rep.Ran = true
	rep.Minutes = minutes(info.End.Sub(info.Start))
	rep.RealSeconds = round1(info.End.Sub(info.Start).Seconds())
	for _, rs := range info.Restarts {
		rep.Restarts = append(rep.Restarts, RestartInfo{
			StoppedAtMin: *offset(rs.StoppedAt), StartedAtMin: *offset(rs.StartedAt),
			GraceUntilMin: *offset(rs.StartedAt.Add(realD(t.StartupGrace))),
		})
	}

	rows := map[[2]string]*ClassResult{}
	lapses := map[[2]string][]float64{}
	var ticks, answers []time.Duration
	for _, o := range obs {
		p := o.Plan
		key := [2]string{string(p.Class), string(p.Client)}
		row := rows[key]
		if row == nil {
			row = &ClassResult{Class: p.Class, Client: p.Client}
			if info.Watchdog {
				row.LoopsAfterWatchdog = ptr(0)
			}
			rows[key] = row
		}
		ticks = append(ticks, tickLateness(o.Heartbeats, realD(t.Interval), info.Restarts, info.SteadyFrom)...)
		for _, h := range o.Heartbeats {
			if !h.At.Before(info.SteadyFrom) {
				answers = append(answers, h.Took)
			}
		}
		ar := AgentResult{
			Name: p.Name, Ticket: p.Ticket, Host: p.Host, Class: p.Class, Client: p.Client,
			Started: o.StartErr == "" && !o.StartedAt.IsZero(), StartErr: o.StartErr,
			FailedAtMin: offset(o.FailedAt), LapsedAtMin: offset(o.LapsedAt), LapseReason: o.LapseReason,
			LeaseState: string(o.LeaseState), Verdict: string(o.Verdict), Heartbeats: len(o.Heartbeats),
			LastActivityMin: offset(o.LastActivityAt), LastHeartbeatMin: offset(o.LastHeartbeatAt), ExpiresAtMin: offset(o.ExpiresAt),
			LoopsAtEnd: o.LoopsAtEnd, WatchedAlive: o.WatchedAlive, ReleasedAtMin: offset(o.ReleasedAt),
			HookCalls: o.HookCalls, HookFailures: o.HookFailures, HookProblem: o.HookProblem, Notices: o.Notices, LoopNotices: o.LoopNotices, SpinNotices: o.SpinNotices,
			WorktreeDeleted: !o.DeletedAt.IsZero(), ProjectCwd: p.ProjectCwd, LongStepMinutes: p.LongStep.Minutes(),
			WorkEdits: o.WorkEdits, WorkLost: o.WorkLost, WorkDeleted: o.WorkDeleted, Snapshot: o.Snapshot,
		}
		rep.WorkEdits += o.WorkEdits
		rep.WorkLost += o.WorkLost
		rep.WorkDeleted += o.WorkDeleted
		if p.Class.Failure() {
			ar.PlannedFailAtMin = p.FailAt.Minutes()
			if ar.FailedAtMin != nil {
				rep.MaxInjectionLagMin = max(rep.MaxInjectionLagMin, round1(*ar.FailedAtMin-ar.PlannedFailAtMin))
			}
		}
		if o.LoopsAfterWD >= 0 {
			ar.LoopsAfterWD = ptr(o.LoopsAfterWD)
		}
		loopsLeft := o.LoopsAtEnd
		if o.LoopsAfterWD >= 0 {
			loopsLeft = o.LoopsAfterWD
		}
		row.Agents++
		if ar.Started {
			row.Started++
		}
		row.LoopsAtEnd += o.LoopsAtEnd
		if row.LoopsAfterWatchdog != nil && o.LoopsAfterWD > 0 {
			*row.LoopsAfterWatchdog += o.LoopsAfterWD
		}
		row.HookCalls += o.HookCalls
		row.HookFailures += o.HookFailures
		row.Notices += o.Notices
		var learned time.Time
		for _, h := range o.Heartbeats {
			switch {
			case h.Exit != "":
				ar.ExitReports++
			case h.Stale:
				ar.StaleReports++
			case strings.HasPrefix(h.InFlight, heartbeat.BackgroundPrefix):
				ar.Background++
			}
			if !learned.IsZero() {
				ar.PostsAfterEnd++
			} else if h.Ended() {
				learned = h.At
			}
		}
		row.ExitReports += ar.ExitReports
		row.StaleReports += ar.StaleReports
		row.PostsAfterEnd += ar.PostsAfterEnd
		row.BackgroundHeartbeats += ar.Background
		rep.StaleReports += ar.StaleReports
		lapsed := !o.LapsedAt.IsZero()
		if lapsed {
			row.Lapsed++
		}
		if !o.ReleasedAt.IsZero() {
			row.Released++
		}
		if o.LeaseState == warp.LeaseHeld {
			row.LeasesHeldAtEnd++
		}
		if p.Class.Healthy() && ar.Started && o.Verdict != warp.VerdictActive {
			row.NotActiveAtEnd++
		}

		// Told: the first Post hook that started once the loop had learned
		// (and had a moment to leave its notice) must show the notice.
		if !learned.IsZero() {
			ar.LearnedAtMin = offset(learned)
			for _, at := range o.PostStarts {
				if !at.After(learned.Add(tolerance)) {
					continue
				}
				if !o.ToldAt.IsZero() && !at.Before(o.ToldAt) {
					break
				}
				ar.MissedNotices++
			}
			ar.EndedUnder = ar.MissedNotices > 0 || !o.ToldAt.IsZero()
			ar.Told = !o.ToldAt.IsZero() && ar.MissedNotices == 0
			ar.ToldAtMin = offset(o.ToldAt)
		}
		if ar.EndedUnder {
			row.EndedUnder++
		}
		if ar.Told {
			row.Told++
		}
		// The lease's end: a lapse, or the operator's release.
		ended := o.LapsedAt
		if ended.IsZero() || (!o.ReleasedAt.IsZero() && o.ReleasedAt.Before(ended)) {
			ended = o.ReleasedAt
		}
		endedLoop := loopsLeft > 0 && !ended.IsZero() && ended.Before(info.End.Add(-2*realD(t.Interval)))
		if endedLoop {
			row.EndedLoops += loopsLeft
		}

		failed := p.Class.Failure() && !o.FailedAt.IsZero()
		switch {
		case p.Class == ClassReleased:
			ar.FalseLapse = lapsed && (o.ReleasedAt.IsZero() || o.LapsedAt.Before(o.ReleasedAt))
		case !p.Class.Failure():
			ar.FalseLapse = lapsed
		case failed:
			row.Failures++
			ar.FalseLapse = lapsed && o.LapsedAt.Before(o.FailedAt)
			detectable := o.FailedAt.Add(tolerance)
			if p.Class == ClassWedged || p.Class == ClassWedgedDenied {
				detectable = detectable.Add(realD(t.Staleness))
			}
			// The loop checks before it POSTs: one heartbeat whose check
			// passed just before the failure may land after it, later still
			// on a loaded machine. The first such heartbeat within one
			// interval is excused; a loop that does not check sends one
			// every interval, so its second is always counted. Stale
			// reports claim nothing: they are counted apart.
			excused := false
			for _, h := range o.Heartbeats {
				if !h.Progress() {
					continue
				}
				if h.At.After(o.FailedAt) {
					ar.AfterFailure++
				}
				if h.At.After(detectable) {
					if !excused && h.At.Sub(detectable) <= realD(t.Interval) {
						excused = true
						continue
					}
					ar.AfterDetectable++
				}
			}
			// The latest real evidence: the failure, or the end of a hook
			// that was already running when the agent died.
			evidence := o.FailedAt
			if o.LastHookEnd.After(evidence) {
				evidence = o.LastHookEnd
			}
			if o.LastActivityAt.After(evidence.Add(tolerance)) {
				ar.CreditedAfter = true
				row.CreditedAfterFailure++
			}
			base := o.FailedAt.Add(realD(t.LeaseWindow))
			for _, rs := range info.Restarts {
				// A lease last refreshed before a server start is protected
				// by the startup grace: the claim's bound moves with it.
				if graceEnd := rs.StartedAt.Add(realD(t.StartupGrace)); o.FailedAt.Before(rs.StartedAt) && base.Before(graceEnd) {
					base = graceEnd
				}
			}
			bound := base.Add(realD(t.Interval))
			ar.BoundMin = ptr(minutes(bound.Sub(o.FailedAt)))
			if lapsed && !ar.FalseLapse {
				d := minutes(o.LapsedAt.Sub(o.FailedAt))
				ar.FailureToLapse = ptr(d)
				lapses[key] = append(lapses[key], d)
				ar.CaughtInTime = !o.LapsedAt.After(bound)
			}
			if ar.CaughtInTime {
				row.CaughtInTime++
			}
			ar.NeedsRelease = o.LeaseState == warp.LeaseHeld
			// A loop left behind by a dead agent, or one still claiming
			// progress after the failure was detectable, needs a person to
			// kill it.
			spamming := false
			cut := info.End.Add(-2 * realD(t.Interval))
			for _, h := range o.Heartbeats {
				if h.Progress() && h.At.After(detectable) && h.At.After(cut) {
					spamming = true
				}
			}
			ar.NeedsKill = loopsLeft > 0 && (!o.WatchedAlive || spamming)
		}
		// So does a loop that goes on after its lease ended.
		ar.NeedsKill = ar.NeedsKill || endedLoop
		if ar.FalseLapse {
			row.FalseLapses++
		}
		row.HeartbeatsAfterFailure += ar.AfterFailure
		row.HeartbeatsAfterDetectable += ar.AfterDetectable
		if ar.NeedsRelease {
			row.OperatorReleases++
		}
		if ar.NeedsKill {
			row.OperatorKills++
		}
		rep.HeartbeatsReceived += len(o.Heartbeats)
		rep.AgentResults = append(rep.AgentResults, ar)
	}
	for _, c := range classOrder {
		for _, cl := range []Client{ClientV2, ClientV1} {
			key := [2]string{string(c), string(cl)}
			row := rows[key]
			if row == nil {
				continue
			}
			if ls := lapses[key]; len(ls) > 0 {
				slices.Sort(ls)
				row.LapseP50Min = ptr(ls[int(math.Ceil(0.5*float64(len(ls))))-1])
				row.LapseMaxMin = ptr(ls[len(ls)-1])
			}
			row.OperatorActions = row.OperatorReleases + row.OperatorKills
			rep.OperatorActions += row.OperatorActions
			rep.Classes = append(rep.Classes, *row)
		}
	}
	rep.Checks = checks(rep, info)

	lagTolerance := info.LagTolerance
	if lagTolerance <= 0 {
		lagTolerance = tolerance
	}
	tr := judgeTiming(scale, realD(t.Interval), lagTolerance, map[string][]time.Duration{
		seriesInjection: info.Injection, seriesHook: info.Hooks, seriesTick: ticks, seriesServer: answers, seriesJob: info.JobBursts})
	tr.BackgroundJobs, tr.JobCPUPercent = info.BackgroundJobs, info.JobCPUPercent
	slowRestart(&tr, rep.Restarts, t.LeaseWindow.Minutes()/6)
	rep.Timing = tr
	rep.OK = tr.OK
	for _, c := range rep.Checks {
		rep.OK = rep.OK && c.OK
	}
	switch {
	case !tr.OK:
		rep.Verdict = VerdictTooLoaded
	case rep.OK:
		rep.Verdict = VerdictPass
	default:
		rep.Verdict = VerdictFail
	}
	return rep
}

// slowRestart marks the timing not judgeable when one of warp's planned
// restarts kept it down longer than limitMin product minutes (a sixth of
// the lease window): stopping and starting warp took the machine that
// long in wall-clock time, and the loops, the starts and the sweeps
// planned meanwhile ran against a warp that was not there.
func slowRestart(tr *TimingReport, restarts []RestartInfo, limitMin float64) {
	for _, r := range restarts {
		if down := r.StartedAtMin - r.StoppedAtMin; down > limitMin {
			tr.OK = false
			msg := fmt.Sprintf("warp's restart kept it down %.1f min of product time, over %.0f min", down, limitMin)
			if tr.Detail != "" {
				msg = tr.Detail + "; " + msg
			}
			tr.Detail = msg
			return
		}
	}
}

// newReport returns the parts of a report that do not depend on the run.
func newReport(info RunInfo, agents int) *Report {
	t := info.Timing
	rep := &Report{
		Scenario: info.Scenario, Agents: agents, Client: string(info.Client), Mode: string(info.Mode),
		Watchdog: info.Watchdog, TimeScale: info.TimeScale,
		Settings: Settings{
			LeaseWindowS: t.LeaseWindow.Seconds(), IntervalS: t.Interval.Seconds(), StalenessS: t.Staleness.Seconds(),
			InFlightMaxS: t.InFlightMax.Seconds(), SweepS: t.Sweep.Seconds(), StartupGraceS: t.StartupGrace.Seconds(),
			StallAfterS: t.StallAfter.Seconds(), SilentAfterS: t.SilentAfter.Seconds(),
		},
		BoundMinutes:        round1((t.LeaseWindow + t.Interval).Minutes()),
		WatchdogRuns:        info.WatchdogRuns,
		WatchdogErrors:      info.WatchdogErrors,
		DetectionToleranceS: (t.Interval / 4).Seconds(),
		Restarts:            []RestartInfo{},
		Classes:             []ClassResult{},
		Checks:              []Check{},
		AgentResults:        []AgentResult{},
	}
	if info.Watchdog {
		rep.Settings.WatchdogS = t.Watchdog.Seconds()
	}
	return rep
}

// NotRun returns the report of a run that was not started because the
// machine cannot keep up with its time scale (tr says why).
func NotRun(info RunInfo, agents int, tr TimingReport) *Report {
	rep := newReport(info, agents)
	rep.Verdict, rep.Timing = VerdictTooLoaded, tr
	return rep
}

// checks states the product's claims and whether the run kept them.
func checks(rep *Report, info RunInfo) []Check {
	var started, agents, hookCalls, hookFail, notices, failures, caught, falseLapses, afterDetect, stale, exitReports,
		deadLoops, endedLoops, kills, releases, endedUnder, told, healthy, active int
	var late, credited, untold, notActive []string
	var loopers, loopCaught, spinners, spinCaught, spinV1, falseLoops int
	var uncaughtLoops []string
	for _, a := range rep.AgentResults {
		agents++
		switch {
		case a.Class == ClassLooping && a.Started:
			loopers++
			// A v1 loop reports no progress: its lease cannot turn
			// looping, but the hook (gyrum's own) still tells the agent.
			if (a.Verdict == string(warp.VerdictLooping) || a.Client == ClientV1) && a.LoopNotices == 1 {
				loopCaught++
			} else {
				uncaughtLoops = append(uncaughtLoops, fmt.Sprintf("%s %s, told %d times", a.Name, cmp.Or(a.Verdict, a.LeaseState), a.LoopNotices))
			}
		case a.Class == ClassSpinning && a.Started:
			spinners++
			switch {
			case a.Client == ClientV1 && a.Verdict != string(warp.VerdictLooping) && a.LoopNotices == 0:
				// A v1 loop reports no progress: its lease cannot turn
				// spinning, and nothing tells the agent.
				spinV1++
				spinCaught++
			case a.Verdict == string(warp.VerdictSpinning) && a.SpinNotices == 1 && a.LoopNotices == 0:
				spinCaught++
			default:
				uncaughtLoops = append(uncaughtLoops, fmt.Sprintf("%s %s, told %d times (looping %d)", a.Name, cmp.Or(a.Verdict, a.LeaseState), a.SpinNotices, a.LoopNotices))
			}
		case a.Verdict == string(warp.VerdictLooping) || a.Verdict == string(warp.VerdictSpinning) || a.LoopNotices > 0 || a.SpinNotices > 0:
			falseLoops++
			uncaughtLoops = append(uncaughtLoops, fmt.Sprintf("%s (%s) %s, told %d+%d times", a.Name, a.Class, a.Verdict, a.LoopNotices, a.SpinNotices))
		}
		if a.Started {
			started++
		}
		hookCalls += a.HookCalls
		hookFail += a.HookFailures
		notices += a.Notices
		if a.FalseLapse {
			falseLapses++
		}
		if a.Class.Failure() && a.FailedAtMin != nil {
			failures++
			if a.CaughtInTime {
				caught++
			} else {
				late = append(late, a.Name)
			}
			afterDetect += a.AfterDetectable
			stale += a.StaleReports
			exitReports += a.ExitReports
			if a.CreditedAfter {
				credited = append(credited, a.Name)
			}
		}
		// An operator-released agent whose lease was released must have
		// gone on working and been told; so must any agent that worked on
		// after its loop learned the lease had ended.
		if a.EndedUnder || (a.Class == ClassReleased && a.ReleasedAtMin != nil) {
			endedUnder++
			if a.Told {
				told++
			} else {
				untold = append(untold, a.Name)
			}
		}
		if a.Class.Healthy() && a.Started {
			healthy++
			if a.Verdict == string(warp.VerdictActive) {
				active++
			} else {
				notActive = append(notActive, fmt.Sprintf("%s %s", a.Name, cmp.Or(a.Verdict, a.LeaseState)))
			}
		}
		if a.NeedsKill {
			kills++
		}
		if a.NeedsRelease {
			releases++
		}
	}
	released := 0
	for _, c := range rep.Classes {
		endedLoops += c.EndedLoops
		if c.Class == ClassReleased {
			released += c.Started
		}
		if c.Class == ClassOrphan || c.Class == ClassOrphanGone {
			if c.LoopsAfterWatchdog != nil {
				deadLoops += *c.LoopsAfterWatchdog
			} else {
				deadLoops += c.LoopsAtEnd
			}
		}
	}
	out := []Check{
		{Name: "every agent started and every hook call exited 0, silent but for lease-ended notices", OK: started == agents && hookFail == 0,
			Detail: fmt.Sprintf("%d/%d agents started; %d of %d hook calls failed; %d notices shown", started, agents, hookFail, hookCalls, notices)},
		{Name: fmt.Sprintf("every failure caught within lease window + one tick (%.0f min)", rep.BoundMinutes), OK: failures > 0 && caught == failures,
			Detail: fmt.Sprintf("%d/%d caught in time", caught, failures) + listed("not in time", late)},
		{Name: "no false lapse of a healthy agent", OK: falseLapses == 0, Detail: fmt.Sprintf("%d false lapses", falseLapses)},
		{Name: "no heartbeat after a failure was detectable, except the exit report", OK: afterDetect == 0,
			Detail: fmt.Sprintf("%d heartbeats claiming progress after detectable failures; %d stale reports (no extension, expected until the lapse); %d exit reports",
				afterDetect, stale, exitReports)},
		{Name: "no lease credited with activity after its agent failed", OK: len(credited) == 0,
			Detail: fmt.Sprintf("%d of %d failed agents' leases show last_activity_at after the failure", len(credited), failures) + listed("credited", credited)},
		{Name: "every agent whose lease ended under it was told on its next tool call", OK: told == endedUnder && endedUnder >= released,
			Detail: fmt.Sprintf("%d/%d told on the first tool call after their loop learned it", told, endedUnder) + listed("not told", untold)},
		{Name: "no loop left running for a dead agent or an ended lease", OK: deadLoops+endedLoops == 0,
			Detail: fmt.Sprintf("%d orphan loops running at the end%s; %d loops of leases that ended (a wedged agent's loop exits at the 410 after the lapse)",
				deadLoops, map[bool]string{true: " (after the watchdog)", false: ""}[info.Watchdog], endedLoops)},
		{Name: "every healthy agent's lease active at the end", OK: active == healthy,
			Detail: fmt.Sprintf("%d/%d active", active, healthy) + listed("not active", notActive)},
		{Name: "every looping agent caught (verdict looping, told once), every spinning agent caught (verdict spinning, told once), and no other agent looping or spinning", OK: loopCaught == loopers && spinCaught == spinners && falseLoops == 0,
			Detail: fmt.Sprintf("%d/%d looping agents caught; %d/%d spinning agents caught", loopCaught, loopers, spinCaught, spinners) +
				map[bool]string{true: fmt.Sprintf(" (%d on v1 hosts, which report no progress: never spinning, never told)", spinV1), false: ""}[spinV1 > 0] +
				fmt.Sprintf("; %d false", falseLoops) + listed("wrong", uncaughtLoops)},
		{Name: "no operator action needed", OK: kills+releases == 0,
			Detail: fmt.Sprintf("%d leases to release by hand, %d loops to kill by hand", releases, kills)},
		{Name: "no work lost: every edit a failed agent left uncommitted is in its attempt's snapshot", OK: rep.WorkLost == 0,
			Detail: fmt.Sprintf("work lost %d of %d edits of failed agents; %d went with a worktree deleted before its loop saved it",
				rep.WorkLost, rep.WorkEdits, rep.WorkDeleted) + listed("lost", workLosers(rep.AgentResults))},
	}
	if info.Watchdog {
		out = append(out, Check{Name: "every watchdog sweep ran", OK: len(info.WatchdogErrors) == 0 && info.WatchdogRuns > 0,
			Detail: fmt.Sprintf("%d sweeps, %d failed", info.WatchdogRuns, len(info.WatchdogErrors))})
	}
	return out
}

// workLosers names the agents that lost work, with their snapshot's state.
func workLosers(as []AgentResult) []string {
	var out []string
	for _, a := range as {
		if a.WorkLost > 0 {
			out = append(out, fmt.Sprintf("%s %d (snapshot %s)", a.Name, a.WorkLost, cmp.Or(a.Snapshot, "none")))
		}
	}
	return out
}

func listed(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s: %s)", what, strings.Join(names, ", "))
}

func ptr[T any](v T) *T { return &v }

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// WriteTable writes the report as a human table.
func (rep *Report) WriteTable(w io.Writer) error {
	s := rep.Settings
	wd := "off"
	if rep.Watchdog {
		wd = fmt.Sprintf("every %s", dur(s.WatchdogS))
	}
	fmt.Fprintf(w, "warpsim: scenario %s, %d agents, client %s, mode %s, time scale %g, watchdog %s\n",
		rep.Scenario, rep.Agents, rep.Client, rep.Mode, rep.TimeScale, wd)
	fmt.Fprintf(w, "product time: lease window %s, heartbeat every %s, activity staleness %s, sweep every %s, startup grace %s\n",
		dur(s.LeaseWindowS), dur(s.IntervalS), dur(s.StalenessS), dur(s.SweepS), dur(s.StartupGraceS))
	if !rep.Ran {
		fmt.Fprintf(w, "\n%s\n", rep.TooLoaded())
		return nil
	}
	fmt.Fprintf(w, "simulated %.0f min in %.1f s;", rep.Minutes, rep.RealSeconds)
	for _, r := range rep.Restarts {
		fmt.Fprintf(w, " warp restarted at %.0f min (down %.1f min, grace until %.0f min);", r.StoppedAtMin, r.StartedAtMin-r.StoppedAtMin, r.GraceUntilMin)
	}
	fmt.Fprintf(w, " failures injected up to %.1f min late; %d heartbeats received (%d stale reports)\n", rep.MaxInjectionLagMin, rep.HeartbeatsReceived, rep.StaleReports)
	tm := rep.Timing
	fmt.Fprintf(w, "timing, p95/tolerance:")
	for i, sr := range tm.Series {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s %.1f/%.0f ms", sep, map[string]string{seriesInjection: "actions late", seriesHook: "hook exec",
			seriesTick: "loop ticks late", seriesServer: "warp answers", seriesJob: "job bursts late"}[sr.Name], sr.P95Ms, sr.ToleranceMs)
	}
	if tm.BackgroundJobs > 0 {
		fmt.Fprintf(w, "; background jobs use %.0f %% of a core each, up to %d at once", tm.JobCPUPercent, tm.BackgroundJobs)
	}
	fmt.Fprintf(w, "\n\n")

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tCLIENT\tAGENTS\tLAPSED\tFALSE\tFAIL→LAPSE p50/max\tIN TIME\tHB AFTER FAIL/DETECT\tSTALE\tEXIT\tTOLD\tLOOPS LEFT\tOPERATOR")
	for _, c := range rep.Classes {
		lapse, inTime, hb, told := "-", "-", "-", "-"
		if c.LapseP50Min != nil {
			lapse = fmt.Sprintf("%.1f / %.1f min", *c.LapseP50Min, *c.LapseMaxMin)
		}
		if c.Class.Failure() {
			inTime = fmt.Sprintf("%d/%d", c.CaughtInTime, c.Failures)
			hb = fmt.Sprintf("%d / %d", c.HeartbeatsAfterFailure, c.HeartbeatsAfterDetectable)
		}
		if ended := max(c.EndedUnder, c.Released); ended > 0 {
			told = fmt.Sprintf("%d/%d", c.Told, ended)
		}
		loops := fmt.Sprint(c.LoopsAtEnd)
		if c.LoopsAfterWatchdog != nil {
			loops = fmt.Sprintf("%d → %d wd", c.LoopsAtEnd, *c.LoopsAfterWatchdog)
		}
		switch {
		case c.Class.Healthy():
			loops += " running"
		case c.EndedLoops > 0:
			loops += fmt.Sprintf(" (%d of ended leases)", c.EndedLoops)
		}
		started := fmt.Sprint(c.Agents)
		if c.Started != c.Agents {
			started = fmt.Sprintf("%d (%d started)", c.Agents, c.Started)
		}
		lapsed := fmt.Sprint(c.Lapsed)
		if c.Class.Failure() {
			lapsed = fmt.Sprintf("%d/%d", c.Lapsed, c.Failures)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%d\n", c.Class, c.Client, started, lapsed, c.FalseLapses,
			lapse, inTime, hb, c.StaleReports, c.ExitReports, told, loops, c.OperatorActions)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Verdict == VerdictTooLoaded {
		fmt.Fprintf(w, "\nclaims (not judged: the run's timing says more about this machine than about the product):\n")
	} else {
		fmt.Fprintf(w, "\nclaims:\n")
	}
	for _, c := range rep.Checks {
		mark := "PASS"
		switch {
		case rep.Verdict == VerdictTooLoaded:
			mark = "----"
		case !c.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %s: %s\n", mark, c.Name, c.Detail)
	}
	switch rep.Verdict {
	case VerdictPass:
		fmt.Fprintf(w, "\nThe heartbeat told the truth: every failure was caught, no healthy agent lost its lease, every agent was told when its lease ended, nothing needs a person.\n")
	case VerdictTooLoaded:
		fmt.Fprintf(w, "\n%s\n", rep.TooLoaded())
	default:
		fmt.Fprintf(w, "\nThe claims above marked FAIL do not hold for this configuration (%d operator actions needed).\n", rep.OperatorActions)
	}
	for _, e := range rep.WatchdogErrors {
		fmt.Fprintf(w, "watchdog error: %s\n", e)
	}
	for _, a := range rep.AgentResults {
		if a.StartErr != "" {
			fmt.Fprintf(w, "agent %s did not start: %s\n", a.Name, clip(a.StartErr, 300))
		} else if a.HookProblem != "" {
			fmt.Fprintf(w, "agent %s hook failure: %s\n", a.Name, a.HookProblem)
		}
	}
	return nil
}

// TooLoaded is the verdict line of a run the machine could not keep up
// with, "" for any other run.
func (rep *Report) TooLoaded() string {
	if rep.Verdict != VerdictTooLoaded {
		return ""
	}
	tm := rep.Timing
	what := "the claims were not judged"
	if !rep.Ran {
		what = "the simulation was not run"
	}
	advice := "rerun with fewer --agents"
	if tm.SuggestedScale > 0 {
		advice = fmt.Sprintf("rerun with --time-scale %g", tm.SuggestedScale)
	}
	return fmt.Sprintf("machine too loaded for --time-scale %g: %s; %s: %s.", rep.TimeScale, tm.Detail, what, advice)
}

// dur renders seconds of product time compactly: 30m, 4m, 10s.
func dur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
