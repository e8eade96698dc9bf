package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

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
}

// Restart is one stop and start of the embedded warp, wall clock.
type Restart struct {
	StoppedAt, StartedAt time.Time
}

// Report is the outcome of a run. Minutes are unscaled (product time).
type Report struct {
	Scenario  string   `json:"scenario"`
	Agents    int      `json:"agents"`
	Client    string   `json:"client"`
	Mode      string   `json:"mode"`
	Watchdog  bool     `json:"watchdog"`
	TimeScale float64  `json:"time_scale"`
	Settings  Settings `json:"settings"`
	// Minutes of product time simulated and the wall-clock seconds they took.
	Minutes     float64       `json:"minutes"`
	RealSeconds float64       `json:"real_seconds"`
	Restarts    []RestartInfo `json:"restarts"`
	// BoundMinutes is the claim's limit from failure to lapse: lease window
	// + one heartbeat interval (later only when a startup grace applied).
	BoundMinutes        float64       `json:"bound_minutes"`
	HeartbeatsReceived  int           `json:"heartbeats_received"`
	Classes             []ClassResult `json:"classes"`
	Checks              []Check       `json:"checks"`
	OK                  bool          `json:"ok"`
	OperatorActions     int           `json:"operator_actions"`
	WatchdogRuns        int           `json:"watchdog_runs,omitempty"`
	WatchdogErrors      []string      `json:"watchdog_errors,omitempty"`
	AgentResults        []AgentResult `json:"agent_results"`
	DetectionToleranceS float64       `json:"detection_tolerance_s"`
	// MaxInjectionLagMin is how late, at worst, a failure happened against
	// its schedule (a busy machine runs late; the figures use the actual time).
	MaxInjectionLagMin float64 `json:"max_injection_lag_min"`
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
	// or of failing agents before their failure.
	Lapsed      int `json:"lapsed"`
	FalseLapses int `json:"false_lapses"`
	// CaughtInTime counts failures whose lease lapsed within BoundMinutes.
	CaughtInTime int `json:"caught_in_time"`
	// Failure → lapse, minutes, over the lapsed failures; nil when none.
	LapseP50Min *float64 `json:"lapse_p50_min"`
	LapseMaxMin *float64 `json:"lapse_max_min"`
	// Heartbeats (exit reports excluded) the server received after the
	// failure; and after the point the loop could know of it (orphans: at
	// once; wedged: once activity is older than the staleness limit).
	HeartbeatsAfterFailure    int `json:"heartbeats_after_failure"`
	HeartbeatsAfterDetectable int `json:"heartbeats_after_detectable"`
	ExitReports               int `json:"exit_reports"`
	// CreditedAfterFailure counts leases whose last_activity_at, as the
	// server recorded it, lies after the failure (beyond the tolerance): a
	// heartbeat or exit report claimed activity the agent did not have.
	CreditedAfterFailure int `json:"credited_after_failure"`
	// Loops still running at the end; after the final watchdog sweep (nil
	// without --watchdog). For healthy agents a running loop is expected.
	LoopsAtEnd         int  `json:"loops_at_end"`
	LoopsAfterWatchdog *int `json:"loops_after_watchdog"`
	// DormantLoops are loops left running for a wedged agent that is still
	// alive and that no longer POST: not spam, they exit when the agent dies
	// or when it resumes and learns its lease ended.
	DormantLoops int `json:"dormant_loops"`
	// LeasesHeldAtEnd counts leases still held when the scenario ended.
	LeasesHeldAtEnd int `json:"leases_held_at_end"`
	// Operator actions a person would still have to take: release a lease
	// of a failed agent, kill a loop of a dead agent or one still POSTing.
	OperatorReleases int `json:"operator_releases"`
	OperatorKills    int `json:"operator_kills"`
	OperatorActions  int `json:"operator_actions"`
	HookCalls        int `json:"hook_calls"`
	HookFailures     int `json:"hook_failures"`
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
	ExitReports      int      `json:"exit_reports"`
	CreditedAfter    bool     `json:"activity_credited_after_failure"`
	LoopsAtEnd       int      `json:"loops_at_end"`
	LoopsAfterWD     *int     `json:"loops_after_watchdog"`
	WatchedAlive     bool     `json:"watched_alive_at_end"`
	NeedsRelease     bool     `json:"needs_release"`
	NeedsKill        bool     `json:"needs_kill"`
	HookCalls        int      `json:"hook_calls"`
	HookFailures     int      `json:"hook_failures"`
	HookProblem      string   `json:"hook_problem,omitempty"`
	WorktreeDeleted  bool     `json:"worktree_deleted"`
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

	rep := &Report{
		Scenario: info.Scenario, Agents: len(obs), Client: string(info.Client), Mode: string(info.Mode),
		Watchdog: info.Watchdog, TimeScale: scale,
		Settings: Settings{
			LeaseWindowS: t.LeaseWindow.Seconds(), IntervalS: t.Interval.Seconds(), StalenessS: t.Staleness.Seconds(),
			InFlightMaxS: t.InFlightMax.Seconds(), SweepS: t.Sweep.Seconds(), StartupGraceS: t.StartupGrace.Seconds(),
			StallAfterS: t.StallAfter.Seconds(), SilentAfterS: t.SilentAfter.Seconds(),
		},
		Minutes:             minutes(info.End.Sub(info.Start)),
		RealSeconds:         round1(info.End.Sub(info.Start).Seconds()),
		BoundMinutes:        round1((t.LeaseWindow + t.Interval).Minutes()),
		WatchdogRuns:        info.WatchdogRuns,
		WatchdogErrors:      info.WatchdogErrors,
		DetectionToleranceS: (t.Interval / 4).Seconds(),
		Restarts:            []RestartInfo{},
	}
	if info.Watchdog {
		rep.Settings.WatchdogS = t.Watchdog.Seconds()
	}
	for _, rs := range info.Restarts {
		rep.Restarts = append(rep.Restarts, RestartInfo{
			StoppedAtMin: *offset(rs.StoppedAt), StartedAtMin: *offset(rs.StartedAt),
			GraceUntilMin: *offset(rs.StartedAt.Add(realD(t.StartupGrace))),
		})
	}

	rows := map[[2]string]*ClassResult{}
	lapses := map[[2]string][]float64{}
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
		ar := AgentResult{
			Name: p.Name, Ticket: p.Ticket, Host: p.Host, Class: p.Class, Client: p.Client,
			Started: o.StartErr == "" && !o.StartedAt.IsZero(), StartErr: o.StartErr,
			FailedAtMin: offset(o.FailedAt), LapsedAtMin: offset(o.LapsedAt), LapseReason: o.LapseReason,
			LeaseState: string(o.LeaseState), Verdict: string(o.Verdict), Heartbeats: len(o.Heartbeats),
			LastActivityMin: offset(o.LastActivityAt), LastHeartbeatMin: offset(o.LastHeartbeatAt), ExpiresAtMin: offset(o.ExpiresAt),
			LoopsAtEnd: o.LoopsAtEnd, WatchedAlive: o.WatchedAlive,
			HookCalls: o.HookCalls, HookFailures: o.HookFailures, HookProblem: o.HookProblem,
			WorktreeDeleted: !o.DeletedAt.IsZero(), LongStepMinutes: p.LongStep.Minutes(),
		}
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
		for _, h := range o.Heartbeats {
			if h.Exit != "" {
				ar.ExitReports++
			}
		}
		row.ExitReports += ar.ExitReports
		lapsed := !o.LapsedAt.IsZero()
		if lapsed {
			row.Lapsed++
		}
		if o.LeaseState == warp.LeaseHeld {
			row.LeasesHeldAtEnd++
		}

		failed := p.Class.Failure() && !o.FailedAt.IsZero()
		switch {
		case !p.Class.Failure():
			ar.FalseLapse = lapsed
		case failed:
			row.Failures++
			ar.FalseLapse = lapsed && o.LapsedAt.Before(o.FailedAt)
			detectable := o.FailedAt.Add(tolerance)
			if p.Class == ClassWedged {
				detectable = detectable.Add(realD(t.Staleness))
			}
			// The loop checks before it POSTs: one heartbeat whose check
			// passed just before the failure may land after it, later still
			// on a loaded machine. The first such heartbeat within one
			// interval is excused; a loop that does not check sends one
			// every interval, so its second is always counted.
			excused := false
			for _, h := range o.Heartbeats {
				if h.Exit != "" {
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
			// A loop left behind by a dead agent, or one still POSTing
			// after the failure was detectable, needs a person to kill it.
			spamming := false
			cut := info.End.Add(-2 * realD(t.Interval))
			for _, h := range o.Heartbeats {
				if h.Exit == "" && h.At.After(detectable) && h.At.After(cut) {
					spamming = true
				}
			}
			if loopsLeft > 0 && (!o.WatchedAlive || spamming) {
				ar.NeedsKill = true
			} else if loopsLeft > 0 {
				row.DormantLoops += loopsLeft
			}
		}
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
	rep.OK = true
	for _, c := range rep.Checks {
		rep.OK = rep.OK && c.OK
	}
	return rep
}

// checks states the product's claims and whether the run kept them.
func checks(rep *Report, info RunInfo) []Check {
	var started, agents, hookCalls, hookFail, failures, caught, falseLapses, afterDetect, exitReports,
		deadLoops, kills, releases, dormant int
	var late, credited []string
	for _, a := range rep.AgentResults {
		agents++
		if a.Started {
			started++
		}
		hookCalls += a.HookCalls
		hookFail += a.HookFailures
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
			exitReports += a.ExitReports
			if a.CreditedAfter {
				credited = append(credited, a.Name)
			}
		}
		if a.NeedsKill {
			kills++
		}
		if a.NeedsRelease {
			releases++
		}
	}
	for _, c := range rep.Classes {
		dormant += c.DormantLoops
		if c.Class == ClassOrphan || c.Class == ClassOrphanGone {
			if c.LoopsAfterWatchdog != nil {
				deadLoops += *c.LoopsAfterWatchdog
			} else {
				deadLoops += c.LoopsAtEnd
			}
		}
	}
	out := []Check{
		{Name: "every agent started and every hook call exited 0 silently", OK: started == agents && hookFail == 0,
			Detail: fmt.Sprintf("%d/%d agents started; %d of %d hook calls failed", started, agents, hookFail, hookCalls)},
		{Name: fmt.Sprintf("every failure caught within lease window + one tick (%.0f min)", rep.BoundMinutes), OK: failures > 0 && caught == failures,
			Detail: fmt.Sprintf("%d/%d caught in time", caught, failures) + listed("not in time", late)},
		{Name: "no false lapse of a healthy agent", OK: falseLapses == 0, Detail: fmt.Sprintf("%d false lapses", falseLapses)},
		{Name: "no heartbeat after a failure was detectable, except the exit report", OK: afterDetect == 0,
			Detail: fmt.Sprintf("%d heartbeats after detectable failures; %d exit reports", afterDetect, exitReports)},
		{Name: "no lease credited with activity after its agent failed", OK: len(credited) == 0,
			Detail: fmt.Sprintf("%d of %d failed agents' leases show last_activity_at after the failure", len(credited), failures) + listed("credited", credited)},
		{Name: "no loop left running for a dead agent", OK: deadLoops == 0,
			Detail: fmt.Sprintf("%d orphan loops running at the end%s; %d dormant loops of wedged agents still alive", deadLoops, map[bool]string{true: " (after the watchdog)", false: ""}[info.Watchdog], dormant)},
		{Name: "no operator action needed", OK: kills+releases == 0,
			Detail: fmt.Sprintf("%d leases to release by hand, %d loops to kill by hand", releases, kills)},
	}
	if info.Watchdog {
		out = append(out, Check{Name: "every watchdog sweep ran", OK: len(info.WatchdogErrors) == 0 && info.WatchdogRuns > 0,
			Detail: fmt.Sprintf("%d sweeps, %d failed", info.WatchdogRuns, len(info.WatchdogErrors))})
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
	fmt.Fprintf(w, "warp simulate: scenario %s, %d agents, client %s, mode %s, time scale %g, watchdog %s\n",
		rep.Scenario, rep.Agents, rep.Client, rep.Mode, rep.TimeScale, wd)
	fmt.Fprintf(w, "product time: lease window %s, heartbeat every %s, activity staleness %s, sweep every %s, startup grace %s\n",
		dur(s.LeaseWindowS), dur(s.IntervalS), dur(s.StalenessS), dur(s.SweepS), dur(s.StartupGraceS))
	fmt.Fprintf(w, "simulated %.0f min in %.1f s;", rep.Minutes, rep.RealSeconds)
	for _, r := range rep.Restarts {
		fmt.Fprintf(w, " warp restarted at %.0f min (down %.1f min, grace until %.0f min);", r.StoppedAtMin, r.StartedAtMin-r.StoppedAtMin, r.GraceUntilMin)
	}
	fmt.Fprintf(w, " failures injected up to %.1f min late; %d heartbeats received\n\n", rep.MaxInjectionLagMin, rep.HeartbeatsReceived)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tCLIENT\tAGENTS\tLAPSED\tFALSE\tFAIL→LAPSE p50/max\tIN TIME\tHB AFTER FAIL/DETECT\tEXIT RPT\tLOOPS LEFT\tOPERATOR")
	for _, c := range rep.Classes {
		lapse, inTime, hb := "-", "-", "-"
		if c.LapseP50Min != nil {
			lapse = fmt.Sprintf("%.1f / %.1f min", *c.LapseP50Min, *c.LapseMaxMin)
		}
		if c.Class.Failure() {
			inTime = fmt.Sprintf("%d/%d", c.CaughtInTime, c.Failures)
			hb = fmt.Sprintf("%d / %d", c.HeartbeatsAfterFailure, c.HeartbeatsAfterDetectable)
		}
		loops := fmt.Sprint(c.LoopsAtEnd)
		if c.LoopsAfterWatchdog != nil {
			loops = fmt.Sprintf("%d → %d wd", c.LoopsAtEnd, *c.LoopsAfterWatchdog)
		}
		switch {
		case !c.Class.Failure():
			loops += " running"
		case c.DormantLoops > 0:
			loops += fmt.Sprintf(" (%d dormant)", c.DormantLoops)
		}
		started := fmt.Sprint(c.Agents)
		if c.Started != c.Agents {
			started = fmt.Sprintf("%d (%d started)", c.Agents, c.Started)
		}
		lapsed := fmt.Sprint(c.Lapsed)
		if c.Class.Failure() {
			lapsed = fmt.Sprintf("%d/%d", c.Lapsed, c.Failures)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\n", c.Class, c.Client, started, lapsed, c.FalseLapses,
			lapse, inTime, hb, c.ExitReports, loops, c.OperatorActions)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nclaims:\n")
	for _, c := range rep.Checks {
		mark := "PASS"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %s: %s\n", mark, c.Name, c.Detail)
	}
	if rep.OK {
		fmt.Fprintf(w, "\nThe heartbeat told the truth: every failure was caught, no healthy agent lost its lease, nothing needs a person.\n")
	} else {
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
