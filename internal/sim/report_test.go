package sim_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sim"
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

func exitReport(m float64) sim.Received {
	return sim.Received{At: pm(m), SchemaVersion: 2, Exit: warp.ExitParentExited, Status: 200}
}

func healthy(name string) sim.Observation {
	return sim.Observation{Plan: agent(name, sim.ClassIdle), StartedAt: pm(0), LeaseState: warp.LeaseHeld,
		Heartbeats: hbs(4, 8, 12), LoopsAtEnd: 1, LoopsAfterWD: -1, WatchedAlive: true, HookCalls: 10}
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
		LapsedAt: pm(50.2), LeaseState: warp.LeaseLapsed, LoopsAtEnd: 1, LoopsAfterWD: -1, WatchedAlive: true,
		// heartbeats within the staleness limit after the last activity are legitimate
		Heartbeats: hbs(16, 20.5, 24, 28, 34)}
	rep := sim.Summarize(info(), []sim.Observation{orphan, wedged, healthy("h1")})
	if !rep.OK {
		t.Fatalf("report not OK: %+v", rep.Checks)
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
	if w.HeartbeatsAfterFailure != 4 || w.HeartbeatsAfterDetectable != 0 {
		t.Errorf("wedged heartbeats after failure/detectable: got %d/%d, want 4/0", w.HeartbeatsAfterFailure, w.HeartbeatsAfterDetectable)
	}
	if w.DormantLoops != 1 || w.OperatorActions != 0 {
		t.Errorf("wedged: a live agent's quiet loop is dormant, not an operator action: got %+v", w)
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
	// The wedged agent's loop still POSTs: that needs a kill too.
	if w := row(t, rep, sim.ClassWedged); w.OperatorKills != 1 || w.DormantLoops != 0 {
		t.Errorf("wedged: got %+v, want one kill, no dormant loop", w)
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
	for _, k := range []string{"classes", "checks", "ok", "operator_actions", "agent_results", "settings", "bound_minutes"} {
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
