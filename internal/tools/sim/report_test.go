package sim_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/tools/sim"
	"github.com/gyrum-labs/warp/internal/warp"
)

// At scale 600 one product minute is 100 ms of wall clock.
const scale = 600

var t0 = time.Date(2026, 5, 6, 22, 0, 0, 0, time.UTC)

// pm returns the wall-clock time m product minutes into the run.
func pm(m float64) time.Time {
	return t0.Add(time.Duration(m * float64(time.Minute) / scale))
}

func info() sim.RunInfo {
	return sim.RunInfo{Scenario: sim.ScenarioADR138, Client: sim.ClientV2, Mode: warp.ModeTransition,
		TimeScale: scale, Timing: sim.DefaultTiming(), Start: t0, End: pm(63), PlannedEnd: 63 * time.Minute}
}

func agent(name string, c sim.Class) sim.AgentPlan {
	return sim.AgentPlan{Name: name, Ticket: "SIM-" + name, Class: c, Client: sim.ClientV2}
}

// hbs returns v2 heartbeats received at the product minutes given.
func hbs(minutes ...float64) []sim.Received {
	var out []sim.Received
	for _, m := range minutes {
		out = append(out, sim.Received{At: pm(m), SchemaVersion: 2, Status: 200})
	}
	return out
}

// staleReports returns v2 stale reports received at the product minutes given.
func staleReports(minutes ...float64) []sim.Received {
	out := hbs(minutes...)
	for i := range out {
		out[i].Stale = true
	}
	return out
}

// gone is a heartbeat answered 410: the loop learns its lease ended.
func gone(m float64, stale bool) sim.Received {
	return sim.Received{At: pm(m), SchemaVersion: 2, Stale: stale, Status: 410}
}

func exitReport(m float64) sim.Received {
	return sim.Received{At: pm(m), SchemaVersion: 2, Exit: warp.ExitParentExited, Status: 200}
}

func healthy(name string) sim.Observation {
	return sim.Observation{Plan: agent(name, sim.ClassIdle), StartedAt: pm(0), LeaseState: warp.LeaseHeld,
		Heartbeats: hbs(4, 8, 12), LoopsAtEnd: 1, LoopsAfterWD: -1, WatchedAlive: true, HookCalls: 10, Verdict: warp.VerdictActive}
}

func row(t *testing.T, rep *sim.Report, c sim.Class) sim.ClassResult {
	t.Helper()
	for _, r := range rep.Classes {
		if r.Class == c {
			return r
		}
	}
	t.Fatalf("no row for class %s in %+v", c, rep.Classes)
	return sim.ClassResult{}
}

func check(t *testing.T, rep *sim.Report, prefix string) sim.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	t.Fatalf("no check %q", prefix)
	return sim.Check{}
}

func TestSummarizeEverythingCaught(t *testing.T) {
	orphan := sim.Observation{Plan: agent("o1", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(10),
		LapsedAt: pm(40.5), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1,
		// the one at 10.2 was on the wire when the agent died (tolerance: a quarter interval)
		Heartbeats: append(hbs(2, 6, 10.2), exitReport(10.3))}
	wedged := sim.Observation{Plan: agent("w1", sim.ClassWedged), StartedAt: pm(0), FailedAt: pm(20),
		LapsedAt: pm(50.2), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1, WatchedAlive: true,
		// heartbeats within the staleness limit after the last activity
		// are legitimate; then stale reports until the lapse, whose 410
		// ends the loop
		Heartbeats: append(append(hbs(16.5, 20.5, 24.5, 28.5, 32.5), staleReports(36.5, 40.5, 44.5, 48.5)...), gone(52.5, true))}
	rep := sim.Summarize(info(), []sim.Observation{orphan, wedged, healthy("h1")})
	if !rep.OK || rep.Verdict != sim.VerdictPass {
		t.Fatalf("report not OK (verdict %s): %+v", rep.Verdict, rep.Checks)
	}
	o := row(t, rep, sim.ClassOrphan)
	if o.Lapsed != 1 || o.CaughtInTime != 1 || o.FalseLapses != 0 || o.ExitReports != 1 {
		t.Errorf("orphan row: got %+v", o)
	}
	if o.HeartbeatsAfterFailure != 1 || o.HeartbeatsAfterDetectable != 0 {
		t.Errorf("orphan heartbeats after failure/detectable: got %d/%d, want 1/0", o.HeartbeatsAfterFailure, o.HeartbeatsAfterDetectable)
	}
	if o.LapseP50Min == nil || *o.LapseP50Min != 30.5 || *o.LapseMaxMin != 30.5 {
		t.Errorf("orphan failure→lapse: got %v/%v, want 30.5", o.LapseP50Min, o.LapseMaxMin)
	}
	w := row(t, rep, sim.ClassWedged)
	if w.HeartbeatsAfterFailure != 4 || w.HeartbeatsAfterDetectable != 0 || w.StaleReports != 5 {
		t.Errorf("wedged heartbeats after failure/detectable, stale reports: got %d/%d, %d, want 4/0, 5",
			w.HeartbeatsAfterFailure, w.HeartbeatsAfterDetectable, w.StaleReports)
	}
	if w.EndedLoops != 0 || w.OperatorActions != 0 || w.PostsAfterEnd != 0 {
		t.Errorf("wedged: the loop exited at the 410, nothing to do: got %+v", w)
	}
	if c := check(t, rep, "no heartbeat after"); !strings.Contains(c.Detail, "0 heartbeats claiming progress") || !strings.Contains(c.Detail, "5 stale reports") {
		t.Errorf("heartbeat check detail: got %q", c.Detail)
	}
	if rep.OperatorActions != 0 {
		t.Errorf("operator actions: got %d, want 0", rep.OperatorActions)
	}
}

// The pre-ADR world: nothing lapses, the loops go on POSTing, every
// failure needs a release and a kill.
func TestSummarizeLegacyFailure(t *testing.T) {
	var spam []float64
	for m := 2.0; m < 63; m += 4 {
		spam = append(spam, m)
	}
	orphan := sim.Observation{Plan: agent("o1", sim.ClassOrphanGone), StartedAt: pm(0), FailedAt: pm(10), DeletedAt: pm(10.5),
		LeaseState: warp.LeaseHeld, LoopsAtEnd: 1, LoopsAfterWD: -1, Heartbeats: hbs(spam...)}
	wedged := sim.Observation{Plan: agent("w1", sim.ClassWedged), StartedAt: pm(0), FailedAt: pm(20),
		LeaseState: warp.LeaseHeld, LoopsAtEnd: 1, LoopsAfterWD: -1, WatchedAlive: true, Heartbeats: hbs(spam...)}
	rep := sim.Summarize(info(), []sim.Observation{orphan, wedged, healthy("h1")})
	if rep.OK {
		t.Fatal("report OK for leases that never lapsed")
	}
	if c := check(t, rep, "every failure caught"); c.OK || !strings.Contains(c.Detail, "0/2") {
		t.Errorf("caught check: got %+v", c)
	}
	if c := check(t, rep, "no heartbeat after"); c.OK {
		t.Errorf("heartbeat check passed with spam: %+v", c)
	}
	if c := check(t, rep, "no loop left"); c.OK {
		t.Errorf("loop check passed with an orphan loop running: %+v", c)
	}
	o := row(t, rep, sim.ClassOrphanGone)
	if o.OperatorReleases != 1 || o.OperatorKills != 1 || o.OperatorActions != 2 {
		t.Errorf("orphan operator actions: got %+v, want 1 release + 1 kill", o)
	}
	if o.LapseP50Min != nil {
		t.Errorf("failure→lapse for leases that never lapsed: %v", *o.LapseP50Min)
	}
	// The wedged agent's loop still claims progress: that needs a kill too.
	if w := row(t, rep, sim.ClassWedged); w.OperatorKills != 1 || w.OperatorReleases != 1 {
		t.Errorf("wedged: got %+v, want one kill and one release", w)
	}
	if rep.OperatorActions != 4 {
		t.Errorf("operator actions: got %d, want 4", rep.OperatorActions)
	}
}

func TestSummarizeLateAndFalseLapses(t *testing.T) {
	late := sim.Observation{Plan: agent("o1", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(10),
		LapsedAt: pm(10 + 30 + 4.5), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1}
	lost := healthy("h1")
	lost.LapsedAt, lost.LeaseState = pm(33), warp.LeaseLapsed
	early := sim.Observation{Plan: agent("w1", sim.ClassWedged), StartedAt: pm(0), FailedAt: pm(20),
		LapsedAt: pm(19), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1, WatchedAlive: true}
	rep := sim.Summarize(info(), []sim.Observation{late, lost, early})
	if c := check(t, rep, "every failure caught"); c.OK || !strings.Contains(c.Detail, "o1") || !strings.Contains(c.Detail, "w1") {
		t.Errorf("caught check: got %+v, want o1 late and w1 not caught", c)
	}
	if c := check(t, rep, "no false lapse"); c.OK || !strings.Contains(c.Detail, "2 false") {
		t.Errorf("false-lapse check: got %+v, want the healthy lapse and the one before the failure", c)
	}
	if r := row(t, rep, sim.ClassOrphan); r.Lapsed != 1 || r.CaughtInTime != 0 || *r.LapseMaxMin != 34.5 {
		t.Errorf("late orphan: got %+v", r)
	}
}

// A lease of an agent that failed before a warp restart is protected by the
// startup grace; the bound moves to the end of the grace + one tick.
func TestSummarizeStartupGraceMovesTheBound(t *testing.T) {
	in := info()
	in.Restarts = []sim.Restart{{StoppedAt: pm(35), StartedAt: pm(36)}} // grace until 46
	o := sim.Observation{Plan: agent("o1", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(10),
		LapsedAt: pm(46.2), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1}
	rep := sim.Summarize(in, []sim.Observation{o, healthy("h1")})
	if a := rep.AgentResults[0]; !a.CaughtInTime || a.BoundMin == nil || *a.BoundMin != 40 {
		t.Errorf("grace: got caught=%v bound=%v, want caught within 36+10+4-10 = 40 min", a.CaughtInTime, a.BoundMin)
	}
	if len(rep.Restarts) != 1 || rep.Restarts[0].GraceUntilMin != 46 {
		t.Errorf("restarts: got %+v", rep.Restarts)
	}
}

func TestSummarizeWatchdog(t *testing.T) {
	in := info()
	in.Watchdog, in.WatchdogRuns = true, 13
	gone := sim.Observation{Plan: agent("o1", sim.ClassOrphanGone), StartedAt: pm(0), FailedAt: pm(10),
		LapsedAt: pm(40.1), LeaseState: warp.LeaseLapsed, LoopsAtEnd: 1, LoopsAfterWD: 0}
	h := healthy("h1")
	h.LoopsAfterWD = 1
	rep := sim.Summarize(in, []sim.Observation{gone, h})
	r := row(t, rep, sim.ClassOrphanGone)
	if r.LoopsAtEnd != 1 || r.LoopsAfterWatchdog == nil || *r.LoopsAfterWatchdog != 0 || r.OperatorKills != 0 {
		t.Errorf("watchdog row: got %+v, want 1 loop before and none after the watchdog, no kill", r)
	}
	if c := check(t, rep, "no loop left"); !c.OK {
		t.Errorf("loop check after the watchdog: %+v", c)
	}
	if c := check(t, rep, "every watchdog sweep ran"); !c.OK {
		t.Errorf("watchdog check: %+v", c)
	}
	in.WatchdogErrors = []string{"exit status 1"}
	if c := check(t, sim.Summarize(in, []sim.Observation{gone, h}), "every watchdog sweep ran"); c.OK {
		t.Errorf("watchdog check passed with a failed sweep: %+v", c)
	}
}

func TestSummarizeStartAndHookFailures(t *testing.T) {
	bad := healthy("h2")
	bad.StartErr, bad.StartedAt = "gyrum start-work SIM-h2: exit status 1", time.Time{}
	hook := healthy("h3")
	hook.HookFailures, hook.HookProblem = 1, "PostToolUse: output \"oops\""
	rep := sim.Summarize(info(), []sim.Observation{healthy("h1"), bad, hook})
	if c := check(t, rep, "every agent started"); c.OK || !strings.Contains(c.Detail, "2/3 agents started; 1 of 30 hook calls failed") {
		t.Errorf("start check: got %+v", c)
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent h2 did not start", "agent h3 hook failure", "FAIL", "healthy-idle-bursts"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReportJSONShape(t *testing.T) {
	rep := sim.Summarize(info(), []sim.Observation{healthy("h1")})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"classes", "checks", "ok", "verdict", "timing", "stale_reports", "operator_actions", "agent_results", "settings", "bound_minutes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON report lacks %q: %s", k, b)
		}
	}
}

// An exit report that claims activity after the agent died (an in-flight
// marker left by the crash counted as a running tool call) is reported.
func TestSummarizeActivityCreditedAfterFailure(t *testing.T) {
	o := sim.Observation{Plan: agent("o1", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(10),
		LastActivityAt: pm(13.5), LapsedAt: pm(43.6), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1,
		Heartbeats: []sim.Received{exitReport(13.5)}}
	fine := sim.Observation{Plan: agent("o2", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(12),
		LastActivityAt: pm(11), LapsedAt: pm(41.1), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1}
	// A hook that was running at the kill and finished after it is real
	// evidence: activity credited up to its end is not flagged.
	racing := sim.Observation{Plan: agent("o3", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(12),
		LastHookEnd: pm(13), LastActivityAt: pm(13.2), LapsedAt: pm(43.3), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1}
	rep := sim.Summarize(info(), []sim.Observation{o, fine, racing, healthy("h1")})
	c := check(t, rep, "no lease credited")
	if c.OK || !strings.Contains(c.Detail, "1 of 3") || !strings.Contains(c.Detail, "o1") || strings.Contains(c.Detail, "o3") {
		t.Errorf("credited check: got %+v, want o1 flagged", c)
	}
	if r := row(t, rep, sim.ClassOrphan); r.CreditedAfterFailure != 1 || r.CaughtInTime != 3 {
		t.Errorf("orphan row: got %+v, want one credited, all three caught in time", r)
	}
}

// A heartbeat whose parent check passed just before the kill may land late
// on a loaded machine: the first one within an interval is excused, every
// later one counts, so a loop that never checks is still caught.
func TestSummarizeExcusesOnlyOneLateHeartbeat(t *testing.T) {
	late := sim.Observation{Plan: agent("o1", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(10),
		LapsedAt: pm(40.5), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1,
		Heartbeats: append(hbs(2, 6, 11.5), exitReport(14))}
	rep := sim.Summarize(info(), []sim.Observation{late, healthy("h1")})
	if o := row(t, rep, sim.ClassOrphan); o.HeartbeatsAfterDetectable != 0 {
		t.Errorf("one late in-flight heartbeat: got %d after detectable, want 0 (excused)", o.HeartbeatsAfterDetectable)
	}
	spam := late
	spam.Heartbeats = append(hbs(2, 6, 11.5, 15.5, 19.5), exitReport(20))
	rep = sim.Summarize(info(), []sim.Observation{spam, healthy("h1")})
	if o := row(t, rep, sim.ClassOrphan); o.HeartbeatsAfterDetectable != 2 {
		t.Errorf("a loop that keeps POSTing: got %d after detectable, want 2 (only the first excused)", o.HeartbeatsAfterDetectable)
	}
	if c := check(t, rep, "no heartbeat after a failure"); c.OK {
		t.Errorf("claim %q passed for a spamming loop", c.Name)
	}
}

// A wedged agent's loop sends stale reports until the lapse: they claim
// nothing and are counted apart. One that goes on claiming progress, or
// keeps running after the lease lapsed, is not excused.
func TestSummarizeStaleReportsAndLoopsOfEndedLeases(t *testing.T) {
	quiet := sim.Observation{Plan: agent("w1", sim.ClassWedgedDenied), StartedAt: pm(0), FailedAt: pm(12),
		LapsedAt: pm(42.3), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1, WatchedAlive: true,
		Heartbeats: append(append(hbs(8, 12, 16, 20, 24), staleReports(28.5, 32, 36, 40)...), gone(44, true))}
	liar := quiet
	liar.Plan = agent("w2", sim.ClassWedged)
	liar.Heartbeats = append(hbs(8, 12, 16, 20, 24, 28.5, 32, 36, 40), gone(44, false))
	lingering := quiet
	lingering.Plan = agent("w3", sim.ClassWedged)
	lingering.LoopsAtEnd = 1
	lingering.Heartbeats = append(append(hbs(8, 12, 16), staleReports(28.5, 32, 36, 40)...), gone(44, true), gone(48, true), gone(52, true))
	rep := sim.Summarize(info(), []sim.Observation{quiet, liar, lingering, healthy("h1")})
	if r := row(t, rep, sim.ClassWedgedDenied); r.StaleReports != 5 || r.HeartbeatsAfterDetectable != 0 || r.OperatorActions != 0 {
		t.Errorf("quiet wedged-after-denied: got %+v, want 5 stale reports, nothing after detectable, no operator action", r)
	}
	w := row(t, rep, sim.ClassWedged)
	// liar: 28.5 is within one interval of detectable (12+1+15=28) and
	// excused; 32, 36, 40 and 44 (answered 410) claim progress.
	if w.HeartbeatsAfterDetectable != 4 {
		t.Errorf("wedged claiming progress: got %d heartbeats after detectable, want 4", w.HeartbeatsAfterDetectable)
	}
	if w.EndedLoops != 1 || w.PostsAfterEnd != 2 || w.OperatorKills != 1 {
		t.Errorf("loop running after its lease lapsed: got %+v, want 1 ended-lease loop, 2 posts after the end, 1 kill", w)
	}
	if c := check(t, rep, "no heartbeat after"); c.OK {
		t.Errorf("heartbeat check passed with progress claimed after detectable: %+v", c)
	}
	if c := check(t, rep, "no loop left"); c.OK || !strings.Contains(c.Detail, "1 loops of leases that ended") {
		t.Errorf("loop check: got %+v", c)
	}
}

// An agent whose lease an operator ended is told on its first tool call
// after its loop learned it (the 410); a notice shown a call later, or
// never, breaks the claim.
func TestSummarizeTold(t *testing.T) {
	released := func(name string, toldAt float64, posts ...float64) sim.Observation {
		o := sim.Observation{Plan: agent(name, sim.ClassReleased), StartedAt: pm(0), ReleasedAt: pm(10),
			LeaseState: warp.LeaseReleased, LoopsAfterWD: -1, WatchedAlive: true, HookCalls: 2 * len(posts),
			Heartbeats: append(hbs(2, 6), gone(10.5, false))}
		for _, m := range posts {
			o.PostStarts = append(o.PostStarts, pm(m))
		}
		if toldAt > 0 {
			o.ToldAt, o.Notices = pm(toldAt), 1
		}
		return o
	}
	ok := released("r1", 13, 5, 10.6, 13, 20) // 10.6: within the tolerance after the 410, excused
	rep := sim.Summarize(info(), []sim.Observation{ok, healthy("h1")})
	if c := check(t, rep, "every agent whose lease ended"); !c.OK || !strings.Contains(c.Detail, "1/1") {
		t.Errorf("told check: got %+v", c)
	}
	if r := row(t, rep, sim.ClassReleased); r.Told != 1 || r.Released != 1 || r.EndedUnder != 1 || r.FalseLapses != 0 || r.OperatorActions != 0 {
		t.Errorf("released row: got %+v", r)
	}
	if c := check(t, rep, "every agent started"); !c.OK || !strings.Contains(c.Detail, "1 notices shown") {
		t.Errorf("a notice is legitimate hook output: %+v", c)
	}
	late := released("r2", 20, 5, 13, 20)
	never := released("r3", 0, 5, 13, 20)
	rep = sim.Summarize(info(), []sim.Observation{late, never, healthy("h1")})
	c := check(t, rep, "every agent whose lease ended")
	if c.OK || !strings.Contains(c.Detail, "0/2") || !strings.Contains(c.Detail, "r2, r3") {
		t.Errorf("told check with a late and a missing notice: got %+v", c)
	}
	if a := rep.AgentResults[0]; a.Told || a.MissedNotices != 1 {
		t.Errorf("late notice: got told=%v missed=%d, want false, 1", a.Told, a.MissedNotices)
	}
	// A release that never happened cannot pass as told.
	unreleased := released("r4", 0)
	unreleased.ReleasedAt, unreleased.Heartbeats, unreleased.LeaseState = time.Time{}, hbs(2, 6), warp.LeaseHeld
	if c := check(t, sim.Summarize(info(), []sim.Observation{unreleased, healthy("h1")}), "every agent whose lease ended"); c.OK {
		t.Errorf("told check passed without a release: %+v", c)
	}
}

// A healthy lease that is not active at the end (a hook that never reached
// the worktree makes it unwired) breaks the claim.
func TestSummarizeHealthyNotActive(t *testing.T) {
	h := healthy("h1")
	h.Plan.Class, h.Plan.ProjectCwd, h.Verdict = sim.ClassProjectCwd, true, warp.VerdictUnwired
	a := healthy("h2")
	a.Verdict = warp.VerdictActive
	rep := sim.Summarize(info(), []sim.Observation{h, a})
	if c := check(t, rep, "every healthy agent"); c.OK || !strings.Contains(c.Detail, "1/2") || !strings.Contains(c.Detail, "h1 unwired") {
		t.Errorf("active check: got %+v", c)
	}
}

// When the simulator itself ran late against the time scale, the verdict
// is too-loaded: the claims are listed but not judged, and the verdict
// says which scale to use.
func TestSummarizeTooLoaded(t *testing.T) {
	in := info()
	for range 20 {
		in.Injection = append(in.Injection, time.Millisecond)
		in.Hooks = append(in.Hooks, 250*time.Millisecond) // tolerance at 600: half an interval, 200 ms
	}
	late := sim.Observation{Plan: agent("o1", sim.ClassOrphan), StartedAt: pm(0), FailedAt: pm(10),
		LapsedAt: pm(10 + 30 + 4.5), LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1}
	rep := sim.Summarize(in, []sim.Observation{late, healthy("h1")})
	if rep.Verdict != sim.VerdictTooLoaded || rep.OK || rep.Timing.OK {
		t.Fatalf("verdict %s ok=%v timing ok=%v, want too-loaded", rep.Verdict, rep.OK, rep.Timing.OK)
	}
	if rep.Timing.SuggestedScale != 200 {
		t.Errorf("suggested scale: got %v, want 200 (600 × 200 ms / (2 × 250 ms) = 240, rounded down)", rep.Timing.SuggestedScale)
	}
	for _, s := range rep.Timing.Series {
		if want := s.Name != "hook"; s.OK != want {
			t.Errorf("series %s: ok %v, want %v", s.Name, s.OK, want)
		}
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"machine too loaded for --time-scale 600", "hook execs (gyrum touch-activity) took 250ms at p95 (2m30s of product time), over 200ms", "the claims were not judged: rerun with --time-scale 200", "not judged", "----  every failure caught"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "  FAIL  ") {
		t.Errorf("a too-loaded run printed FAIL:\n%s", out.String())
	}
	// The same lateness within the tolerance: judged, and the late lapse fails.
	in.LagTolerance = time.Second
	if rep := sim.Summarize(in, []sim.Observation{late, healthy("h1")}); rep.Verdict != sim.VerdictFail {
		t.Errorf("within a 1 s tolerance: verdict %s, want fail", rep.Verdict)
	}
}

func TestNotRunReport(t *testing.T) {
	rep := sim.NotRun(info(), 30, sim.TimingReport{Detail: "background jobs need 3 cores", SuggestedScale: 200})
	if rep.Ran || rep.OK || rep.Verdict != sim.VerdictTooLoaded {
		t.Fatalf("got ran=%v ok=%v verdict=%s", rep.Ran, rep.OK, rep.Verdict)
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if want := "machine too loaded for --time-scale 600: background jobs need 3 cores; the simulation was not run: rerun with --time-scale 200."; !strings.Contains(out.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, out.String())
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"verdict":"too-loaded"`, `"ran":false`, `"suggested_time_scale":200`, `"classes":[]`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

// A loop's heartbeat late beyond interval + jitter counts against the
// timing, except across a warp outage (the loop retries on its own
// schedule then) and before every agent started.
func TestSummarizeTickLateness(t *testing.T) {
	h := healthy("h1")
	h.Heartbeats = hbs(4, 8, 12, 20, 24) // 12 → 20: one tick, 3.6 min late
	in := info()
	rep := sim.Summarize(in, []sim.Observation{h})
	if rep.Verdict != sim.VerdictTooLoaded {
		t.Fatalf("a loop 3.6 min late: verdict %s, want too-loaded", rep.Verdict)
	}
	if s := rep.Timing.Series[2]; s.Name != "tick" || s.OK || s.Samples != 4 || s.MaxMs != 360 {
		t.Errorf("tick series: got %+v, want 4 gaps, the worst 360 ms late (3.6 min at scale 600)", s)
	}
	in.Restarts = []sim.Restart{{StoppedAt: pm(13), StartedAt: pm(14)}}
	if rep := sim.Summarize(in, []sim.Observation{h}); !rep.Timing.OK || rep.Verdict == sim.VerdictTooLoaded {
		t.Errorf("the same gap across a warp outage: verdict %s, timing %+v; want judged", rep.Verdict, rep.Timing)
	}
	in.Restarts, in.SteadyFrom = nil, pm(13)
	if rep := sim.Summarize(in, []sim.Observation{h}); !rep.Timing.OK || rep.Verdict == sim.VerdictTooLoaded {
		t.Errorf("the same gap before every agent started: verdict %s, timing %+v; want judged", rep.Verdict, rep.Timing)
	}
}

// Work lost (issue 45): a failed agent's edits that no attempt's snapshot
// holds fail the claim; those that went with a deleted worktree are
// counted apart.
func TestSummarizeWorkLost(t *testing.T) {
	orphan := func(name string, c sim.Class, edits, lost, deleted int) sim.Observation {
		return sim.Observation{Plan: agent(name, c), StartedAt: pm(0), FailedAt: pm(10), LapsedAt: pm(40.5),
			LeaseState: warp.LeaseLapsed, LoopsAfterWD: -1, Heartbeats: append(hbs(2, 6), exitReport(10.3)),
			WorkEdits: edits, WorkLost: lost, WorkDeleted: deleted, Snapshot: warp.SnapshotSaved}
	}
	saved := sim.Summarize(info(), []sim.Observation{orphan("o1", sim.ClassOrphan, 4, 0, 0), orphan("o2", sim.ClassOrphanGone, 3, 0, 3), healthy("h1")})
	if c := check(t, saved, "no work lost"); !c.OK || c.Detail != "work lost 0 of 7 edits of failed agents; 3 went with a worktree deleted before its loop saved it" {
		t.Errorf("all saved: %+v", c)
	}
	lost := sim.Summarize(info(), []sim.Observation{orphan("o1", sim.ClassOrphan, 4, 2, 0), healthy("h1")})
	if c := check(t, lost, "no work lost"); c.OK || !strings.Contains(c.Detail, "work lost 2 of 4") || !strings.Contains(c.Detail, "o1 2 (snapshot saved)") {
		t.Errorf("two lost: %+v", c)
	}
	if lost.OK || lost.WorkLost != 2 {
		t.Errorf("report OK %v, work lost %d: want a failed report with 2", lost.OK, lost.WorkLost)
	}
}
