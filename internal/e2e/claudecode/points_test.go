package claudecode_test

// Real-client proofs of the activity rules (docs/DESIGN.md section 4, "The
// loop" and "The hook"): each test drives the real Claude Code CLI
// against the scripted fake model, with the real gyrum binary (the hook
// gyrum setup wires and the detached heartbeat loop start-work spawns)
// and a real warp on scaled timings. The comment of each test says what
// the behaviour before the redesign was and which assertion catches it.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// (1A) Long work runs in the background: run_in_background answers the
// call at once (PostToolUse ~0.1 s after PreToolUse) and no hook runs
// until the job ends, so last-activity goes stale while a CPU-bound job
// works. The loop samples the CPU of claude's descendants: the lease stays
// held, the heartbeats stay fresh (stale false) and say
// in_flight "background: NAME", and when the job ends the session wakes,
// the model answers and claude exits normally.
//
// Before the redesign the loop gated on last-activity alone: it stopped
// claiming progress one staleness limit after the call, and the lease
// lapsed one window later while the job still ran; the stale-report and
// lease-state assertions catch that.
func TestPointBackgroundCPUJobKeepsLease(t *testing.T) {
	claude.Require(t)
	// The loop counts a process busy from 20 ms of CPU a tick: 10 % of a
	// core at a 0.2 s tick, which a CPU-bound job starved by a loaded
	// machine fell under (measured beside two CPU hogs and the suite).
	// At 0.5 s (4 %) a starved job still counts, as it does at the
	// default 240 s tick, where any CPU does.
	const (
		interval  = 0.5
		staleness = 3.0
		jobSecs   = 10
	)
	window := 4 * time.Second
	// Stalled beyond the staleness limit: the loop samples the job's CPU
	// from two ticks before that limit, so the age passes 2 s by design.
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, 4*time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-bg")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-bg --json")
	job := Bash(fmt.Sprintf("timeout %d sh -c 'while :; do :; done'; echo BG-DONE", jobSecs),
		Background(), Description("cpu job"))
	model := agenttest.NewAnthropic(t, agenttest.Calls(claim), agenttest.Calls(job),
		agenttest.Text("Waiting for the job."), agenttest.Text("The job finished."))
	w := e2etest.WatchTicket(t, ws, "T-bg")
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 30)})

	// Post of the claim, Pre and Post of the background call.
	e2etest.Poll(t, "the background call's PostToolUse", func() bool { return e2etest.HookEvents(d) >= 3 })
	posted := e2etest.Mtime(d.File(gyrumdir.ActivityFile))
	reqs := model.WaitRequests(e2etest.SessionTimeout, "the wake-up request", func(r []agenttest.Request) bool { return len(r) >= 4 })
	ended := reqs[3].At
	quiet := e2etest.Mtime(d.File(gyrumdir.ActivityFile))
	atEnd := ws.Lease("T-bg")
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()
	sr := e2etest.StartResultOf(t, model, claim)
	t.Logf("job from %s to %s (%v); heartbeats:\n%s", posted.Format("15:04:05.000"), ended.Format("15:04:05.000"),
		ended.Sub(posted).Round(time.Millisecond), e2etest.DescribeBeats(e2etest.BeatsOf(ws, "T-bg"), posted))

	// The premise: no hook ran while the job worked, for longer than
	// staleness + window.
	if !quiet.Equal(posted) {
		t.Errorf("last-activity moved during the job: %v → %v", posted, quiet)
	}
	if got, want := ended.Sub(posted), e2etest.Secs(staleness)+window; got < want {
		t.Fatalf("the job ended %v after the last hook, want more than staleness + window (%v)", got, want)
	}
	if atEnd.State != warp.LeaseHeld || atEnd.Epoch != sr.Epoch {
		t.Errorf("when the job ended the lease is %s (epoch %d, %s), want held epoch %d", atEnd.State, atEnd.Epoch, atEnd.EndReason, sr.Epoch)
	}
	from, to := posted.Add(e2etest.Secs(staleness+2*interval)), ended.Add(-e2etest.Secs(2*interval))
	n, bad := 0, ""
	for _, b := range e2etest.BeatsOf(ws, "T-bg") {
		if b.At.Before(posted) || b.At.After(ended) {
			continue
		}
		if b.Status != 200 {
			t.Errorf("heartbeat %v into the job answered %d", b.At.Sub(posted), b.Status)
		}
		if b.At.Before(from) || b.At.After(to) {
			continue
		}
		n++
		if b.Body.Stale {
			t.Errorf("stale report %v after the last hook while the CPU-bound job worked", b.At.Sub(posted).Round(time.Millisecond))
		}
		if !strings.HasPrefix(b.Body.InFlight, heartbeat.BackgroundPrefix) && bad == "" {
			bad = fmt.Sprintf("%q at %v", b.Body.InFlight, b.At.Sub(posted).Round(time.Millisecond))
		}
	}
	if n < 5 {
		t.Errorf("%d heartbeats past the staleness limit while the job worked, want at least 5", n)
	}
	if bad != "" {
		t.Errorf("in_flight while only the background job works: %s, want %q + the job's process name", bad, heartbeat.BackgroundPrefix)
	}
	for _, x := range w.Samples() {
		if x.At.After(posted) && x.At.Before(ended) && (!x.Lease.Held() || x.Verdict != warp.VerdictActive) {
			t.Errorf("%v into the job: lease %s, verdict %s; want held and active", x.At.Sub(posted).Round(time.Millisecond), x.Lease.State, x.Verdict)
			break
		}
	}
	if res := s.Results(); len(res) != 2 {
		t.Errorf("%d result events, want 2 (the turn that ended while the job ran, the answer to the wake-up)", len(res))
	}
}

// (1B) An idle wait is not work: the same background call running sleep
// (no CPU) leaves the activity stale. The loop sends stale reports
// (stale: true), the verdict turns stalled, and the real sweep lapses the
// lease one window after the call, while the sleep still runs.
//
// Before the redesign a stale loop skipped its POSTs (no stale reports,
// the verdict drifted to silent); a CPU threshold too low would count the
// sleeping shell as work and keep the lease. Both fail here.
func TestPointIdleBackgroundWaitIsNotWork(t *testing.T) {
	claude.Require(t)
	const (
		interval  = 0.2
		staleness = 1.0
		jobSecs   = 5
	)
	window := 2 * time.Second
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-idle")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-idle --json")
	job := Bash(fmt.Sprintf("sleep %d; echo BG-DONE", jobSecs), Background(), Description("idle wait"))
	model := agenttest.NewAnthropic(t, agenttest.Calls(claim), agenttest.Calls(job),
		agenttest.Text("Waiting for the job."), agenttest.Text("The job finished."))
	w := e2etest.WatchTicket(t, ws, "T-idle")
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 30)})

	e2etest.Poll(t, "the background call's PostToolUse", func() bool { return e2etest.HookEvents(d) >= 3 })
	posted := e2etest.Mtime(d.File(gyrumdir.ActivityFile))
	e2etest.Poll(t, "the lease to lapse", func() bool { return ws.Lease("T-idle").State == warp.LeaseLapsed })
	l := ws.Lease("T-idle")
	reqs := model.WaitRequests(e2etest.SessionTimeout, "the wake-up request", func(r []agenttest.Request) bool { return len(r) >= 4 })
	ended := reqs[3].At
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()
	bs := e2etest.BeatsOf(ws, "T-idle")
	t.Logf("sleep from %s; lapsed %v later (%s); heartbeats:\n%s", posted.Format("15:04:05.000"),
		l.EndedAt.Sub(posted).Round(time.Millisecond), l.EndReason, e2etest.DescribeBeats(bs, posted))
	e2etest.SkipIfLapsedBefore(t, ws, "T-idle", posted)

	if l.EndReason != warp.LapseNoActivity {
		t.Errorf("lapse reason %q, want %q", l.EndReason, warp.LapseNoActivity)
	}
	if limit := e2etest.Secs(staleness) + window + e2etest.SweepEvery + 500*time.Millisecond; l.EndedAt.Sub(posted) > limit {
		t.Errorf("lapsed %v after the last tool call, want within staleness + window + a sweep (%v)", l.EndedAt.Sub(posted), limit)
	}
	if !l.EndedAt.Before(ended) {
		t.Errorf("lapsed at %v, after the sleep ended (%v): the idle wait kept the lease", l.EndedAt, ended)
	}
	var firstStale time.Time
	for _, b := range bs {
		if b.At.Before(posted) || b.At.After(l.EndedAt) {
			continue
		}
		if b.Body.Stale && firstStale.IsZero() {
			firstStale = b.At
		}
		if !b.Body.Stale && b.At.Sub(posted) > e2etest.Secs(staleness+interval)+300*time.Millisecond {
			t.Errorf("fresh heartbeat %v after the last tool call with only a sleeping job", b.At.Sub(posted).Round(time.Millisecond))
		}
	}
	switch {
	case firstStale.IsZero():
		t.Errorf("no stale report (stale: true) before the lapse")
	case firstStale.Sub(posted) > e2etest.Secs(staleness+3*interval)+300*time.Millisecond:
		t.Errorf("first stale report %v after the last tool call, want about the staleness limit %vs", firstStale.Sub(posted), staleness)
	}
	vs := w.VerdictsHooked()
	if len(vs) == 0 || vs[len(vs)-1] != warp.VerdictStalled {
		t.Errorf("verdicts while held, once the hook was reported, %v (all: %v), want to end stalled", vs, w.Verdicts())
	}
	for _, v := range vs {
		if v == warp.VerdictSilent || v == warp.VerdictUnwired {
			t.Errorf("verdicts while held, once the hook was reported, %v: the loop lived and the hook fired", vs)
		}
	}
}

// (2) A denied or blocked call leaks no lease. Both ways fire PreToolUse
// and no Post event (docs/agents/claude-code.md, finding e), so gyrum's
// in-flight marker of the call stays; after it the model stalls (no
// process under claude). The marker is backed by no process: it proves
// only that the call started, so the
// loop reports stale one staleness limit after the call's start and the
// lease lapses within staleness + window + a sweep — far before the
// in-flight cap (60 s here).
//
// Before the redesign every marker counted as a call in flight (age 0)
// until the cap: heartbeats stayed fresh with in_flight set and the lease
// was held for the whole 60 s; the lapse poll times out on that.
func TestPointDeniedCallLeaksNoLease(t *testing.T) {
	claude.Require(t)
	t.Run("pretooluse-exit-2", func(t *testing.T) {
		rec := newRecorder(t)
		rec.setReplies(reply{Event: "PreToolUse", Match: "BLOCK-ME", Stderr: "blocked by policy", Exit: 2})
		call := Bash("echo BLOCK-ME")
		k, v := rec.env()
		deniedLeaksNoLease(t, "T-blocked", call, "Bash", func(o *agenttest.Options) {
			o.Env[k] = v
			o.Settings = rec.settings("PreToolUse")
		})
	})
	t.Run("permission-mode", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "denied.txt") // outside the project: needs an approval -p cannot get
		call := Write(outside, "x")
		deniedLeaksNoLease(t, "T-denied", call, "Write", func(o *agenttest.Options) {
			o.Ask = true
			o.Settings = map[string]any{"permissions": map[string]any{"allow": []string{"Bash"}}}
		})
	})
}

func deniedLeaksNoLease(t *testing.T, ticket string, call agenttest.Call, tool string, opt func(*agenttest.Options)) {
	const (
		interval  = 0.2
		staleness = 1.0
		capSecs   = 60
	)
	window := 1500 * time.Millisecond
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create(ticket)
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall(ticket + " --json")
	model := agenttest.NewAnthropic(t, agenttest.Calls(claim), agenttest.Calls(call), agenttest.Stall())
	o := agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, capSecs)}
	opt(&o)
	s := start(t, model, project, o)
	reqs := model.WaitRequests(e2etest.SessionTimeout, "the stalled request after the denied call", func(r []agenttest.Request) bool { return len(r) >= 3 })
	// The agent has recorded the refusal by the time it sends the
	// request that carries it (on a loaded machine, half a second or more
	// after the call began).
	refused := reqs[2].At

	tr, ok := model.ToolResult(call.ID)
	if !ok || !tr.IsError {
		t.Fatalf("the call was not refused: %+v", tr)
	}
	var marker gyrumdir.Marker
	e2etest.Poll(t, "the denied call's in-flight marker", func() bool {
		ms, _ := d.InFlight()
		for _, m := range ms {
			if m.Tool == tool {
				marker = m
				return true
			}
		}
		return false
	})
	began := marker.Since
	e2etest.Poll(t, "the lease to lapse (the in-flight cap is 60 s)", func() bool {
		return ws.Lease(ticket).State == warp.LeaseLapsed
	})
	l := ws.Lease(ticket)
	bs := e2etest.BeatsOf(ws, ticket)
	t.Logf("call began %s, lapsed %v later (%s); heartbeats:\n%s", began.Format("15:04:05.000"),
		l.EndedAt.Sub(began).Round(time.Millisecond), l.EndReason, e2etest.DescribeBeats(bs, began))
	e2etest.SkipIfLapsedBefore(t, ws, ticket, began)
	if s.Exited() {
		t.Errorf("claude exited (%d) while the model stalled", s.Wait(time.Second))
	}
	// The call never ended: its marker is still there when the lease lapses.
	if ms, _ := d.InFlight(); len(ms) == 0 {
		t.Error("the denied call's marker is gone: the premise (PreToolUse without Post) does not hold")
	}
	if limit := e2etest.Secs(staleness) + window + e2etest.SweepEvery + 500*time.Millisecond; l.EndedAt.Sub(began) > limit {
		t.Errorf("lapsed %v after the denied call began, want within staleness + window + a sweep (%v)", l.EndedAt.Sub(began), limit)
	}
	if l.EndReason != warp.LapseNoActivity {
		t.Errorf("lapse reason %q, want %q", l.EndReason, warp.LapseNoActivity)
	}
	var firstStale time.Time
	for _, b := range bs {
		if b.At.Before(began.Add(500*time.Millisecond)) || b.At.Before(refused.Add(e2etest.Secs(2*interval)+100*time.Millisecond)) {
			continue // the loop reads the transcript at its next tick
		}
		// The denied call must not count as in flight. The CPU of a
		// process of the agent may count as its background work: here the
		// policy hook that refused the call, a Go test binary, used more
		// than 20 ms of CPU in a tick on a loaded machine (seen).
		if b.Body.InFlight != "" && !strings.HasPrefix(b.Body.InFlight, heartbeat.BackgroundPrefix) {
			t.Errorf("heartbeat %v after the denied call reports in_flight %q", b.At.Sub(began).Round(time.Millisecond), b.Body.InFlight)
		}
		if b.Body.Stale && firstStale.IsZero() {
			firstStale = b.At
		}
	}
	if firstStale.IsZero() || firstStale.Sub(began) > e2etest.Secs(staleness+3*interval)+300*time.Millisecond {
		t.Errorf("first stale report at %v after the call began, want about one staleness limit (%vs)", firstStale.Sub(began), staleness)
	}
	s.Kill()
}

// (3) `gyrum start-work T --worktree` from inside a session: the new
// worktree is outside the project, and Claude Code resets the Bash cwd to
// the project after every call (hook payloads never carry the worktree's
// cwd). The hook credits the lease of its agent (CLAUDE_PID in the agent
// index start-work wrote): the worktree's last-activity and hook-events
// move, warp's last_activity_at advances with the calls, the verdict is
// never unwired — and the stale lease.json of an earlier ticket left in
// the project is not credited.
//
// Before the agent index the hook walked up from the payload's cwd: every
// call after the claim credited the project's stale lease and none the
// worktree's, so the worktree's hook-events stay at 1 and warp's
// last_activity_at stays at the claim (the in-flight cap of 1 s keeps CPU
// sampling from covering for the hook).
func TestPointStartWorkWorktreeInsideSession(t *testing.T) {
	claude.Require(t)
	ctx := context.Background()
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(30*time.Second, 2*time.Second, 30*time.Second, time.Second))
	project := e2etest.NewProject(t)
	setupHooks(t, project)

	// An earlier ticket's lease.json, left behind in the project: the
	// server knows the ticket, the lease is over.
	oldEpoch := ws.Claim("T-1", "A")
	if _, err := ws.Svc.Release(ctx, "T-1", oldEpoch, "done"); err != nil {
		t.Fatal(err)
	}
	pd, err := gyrumdir.Create(project)
	if err != nil {
		t.Fatal(err)
	}
	if err := pd.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: oldEpoch, WarpURL: ws.URL(), Agent: "A", Host: "h",
		ClaimedAt: time.Now().Add(-2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := pd.TouchActivity(old); err != nil {
		t.Fatal(err)
	}

	ws.Create("T-2")
	root := t.TempDir()
	wt := filepath.Join(root, filepath.Base(project)+"-T-2")
	claim := claimCall("T-2 --worktree --json")
	write := Write(filepath.Join(wt, "notes.md"), "# T-2\n")
	cd := Bash("cd " + shellquote.Quote(wt) + " && ls")
	work := []agenttest.Call{write, cd, Bash("sleep 1; echo one"), Bash("sleep 1; echo two")}
	turns := []agenttest.Turn{agenttest.Calls(claim)}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	model := agenttest.NewAnthropic(t, append(turns, agenttest.Text("Done with T-2."))...)
	env := e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 1)
	env["GYRUM_WORKTREE_ROOT"] = root
	w := e2etest.WatchTicket(t, ws, "T-2")
	s := start(t, model, project, agenttest.Options{Env: env})
	wd, _ := gyrumdir.At(wt)
	e2etest.LogLoopOnFailure(t, wd)
	s.WaitOK(e2etest.SessionTimeout)

	sr := e2etest.StartResultOf(t, model, claim)
	if sr.Dir != wt || sr.WatchedPID != s.Pid() || sr.WatchedHow != "CLAUDE_PID" {
		t.Fatalf("start-work: dir %s, watches %d (%s); want %s and claude %d via CLAUDE_PID", sr.Dir, sr.WatchedPID, sr.WatchedHow, wt, s.Pid())
	}
	if !e2etest.Exists(filepath.Join(wt, "notes.md")) {
		t.Error("the Write into the worktree did not happen")
	}
	if tr, _ := model.ToolResult(cd.ID); !strings.Contains(tr.Content, "Shell cwd was reset to "+project) {
		t.Errorf("cd into the worktree: %q, want the cwd reset (the premise)", tr.Content)
	}
	// The worktree got every hook run after the claim: Post of the claim,
	// Pre and Post of each call.
	if got, want := e2etest.HookEvents(wd), int64(1+2*len(work)); got != want {
		t.Errorf("the worktree's hook-events counted %d, want %d (Post of the claim, Pre and Post of %d calls)", got, want, len(work))
	}
	rec, ok, last, err := wd.ReadActivity()
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUse" || rec.Tool != "Bash" {
		t.Errorf("the worktree's activity record %+v (ok %v, err %v), want the last Bash call's PostToolUse", rec, ok, err)
	}
	// The project's stale lease is not credited: at most the claim's own
	// PreToolUse (before start-work indexed the worktree) found it by cwd.
	if got := e2etest.Mtime(pd.File(gyrumdir.ActivityFile)); !got.Equal(old) {
		t.Errorf("the project's stale lease was credited: last-activity %v, was %v", got, old)
	}
	if n := e2etest.HookEvents(pd); n > 1 {
		t.Errorf("the project's .gyrum counted %d hook runs, want at most 1 (the claim's PreToolUse)", n)
	}
	// warp sees the activity: last_activity_at follows the worktree's
	// last-activity, well after the claim.
	e2etest.Poll(t, "warp's last_activity_at to reach the last tool call", func() bool {
		return !ws.Lease("T-2").LastActivityAt.Before(last.Add(-500 * time.Millisecond))
	})
	l := ws.Lease("T-2")
	if l.LastActivityAt.Sub(l.ClaimedAt) < 1500*time.Millisecond {
		t.Errorf("last_activity_at %v after the claim, want the calls' activity (> 1.5 s)", l.LastActivityAt.Sub(l.ClaimedAt))
	}
	w.Stop()
	hooked := w.VerdictsHooked()
	if len(hooked) == 0 {
		t.Errorf("verdicts %v: the loop never reported the hook", w.Verdicts())
	}
	for _, v := range hooked {
		if v == warp.VerdictUnwired {
			t.Errorf("verdicts %v once the hook was reported: unwired while the hook fired", hooked)
		}
	}
	if ms, _ := pd.InFlight(); len(ms) > 0 {
		t.Logf("note: the project's .gyrum kept %d in-flight marker(s) of the claim call: %+v", len(ms), ms)
	}
}

// (4) The agent is told its lease ended. While the session works (a held
// Bash call) an operator releases the lease; the loop's next POST gets
// 410, it asks warp how the lease ended and writes lease-ended.json; the
// hook's PostToolUse of the held call prints it as additionalContext, and
// the next request shows the model "gyrum: your lease on ticket T-4 …
// was released (operator) …", once.
//
// Before, the loop exited quietly on 410 and the agent worked on: no
// request ever showed the notice (SawText fails).
func TestPointAgentToldLeaseEnded(t *testing.T) {
	claude.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-4")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-4 --json")
	held := Bash("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	next := Bash("echo next")
	model := agenttest.NewAnthropic(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Calls(next), agenttest.Text("Stopping."))
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	sr := e2etest.StartResultOf(t, model, claim)

	const told = "your lease on ticket T-4"
	if model.SawText(told) {
		t.Fatal("the model was told before the lease ended")
	}
	before := len(model.MainRequests())
	if _, err := ws.Svc.Release(context.Background(), "T-4", sr.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	e2etest.Poll(t, "the loop's lease-ended notice", func() bool { return e2etest.Exists(d.File(gyrumdir.NoticeFile)) })
	e2etest.Poll(t, "the loop to exit", func() bool { return !e2etest.Exists(d.File(gyrumdir.LoopPIDFile)) })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)

	r, ok := model.FirstWithText(told)
	if !ok {
		t.Fatalf("no request showed the model %q", told)
	}
	if r.N <= before {
		t.Errorf("first shown in request %d, before the lease ended (%d requests then)", r.N, before)
	}
	tr, _ := model.ToolResult(held.ID)
	after := strings.Join(tr.After, "\n")
	t.Logf("shown after the held call's result (request %d):\n%s", tr.Request, after)
	want := fmt.Sprintf("PostToolUse:Bash hook additional context: gyrum: your lease on ticket T-4 (epoch %d) was released (operator)", sr.Epoch)
	if !strings.Contains(after, want) || !strings.Contains(after, "Stop working on T-4") {
		t.Errorf("after the held call's result %q, want %q and what to do", after, want)
	}
	if tr.Request != r.N {
		t.Errorf("the notice first came in request %d, the held call's result in %d", r.N, tr.Request)
	}
	// Told once: the last request (the history) holds it in one message,
	// and the next call's result brought nothing more.
	main := model.MainRequests()
	n := 0
	for _, x := range main[len(main)-1].Texts() {
		n += strings.Count(x, told)
	}
	if n != 1 {
		t.Errorf("the last request shows %q %d times, want once", told, n)
	}
	if tr, _ := model.ToolResult(next.ID); strings.Contains(strings.Join(tr.After, "\n"), told) {
		t.Error("the notice was shown again after the next call")
	}
	if e2etest.Exists(d.File(gyrumdir.NoticeFile)) {
		t.Error("lease-ended.json is still there after the agent was told")
	}
}

// (5) "stalled" stays distinct from "silent". The model stalls right after
// claiming (session alive, no tool call): the loop keeps POSTing stale
// reports, so the verdict goes active → stalled and stays stalled — never
// silent — until the lease lapses; stale reports never extend the lease
// (expires_at stays at the last activity + window). A second lease of the
// same session whose loop is SIGKILLed (a dead loop) turns silent.
//
// Before, a stale loop skipped its POSTs: the verdict went silent
// (here 2.5 s after the last fresh heartbeat, before the 4.5 s lapse),
// which the verdict assertion catches. A server that took a stale report
// as progress would move expires_at to the report's time + window: the
// expires_at assertion catches that.
func TestPointStalledStaysDistinctFromSilent(t *testing.T) {
	claude.Require(t)
	const (
		interval  = 0.2
		staleness = 0.8
	)
	window := 4500 * time.Millisecond
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 2500*time.Millisecond, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-A")
	ws.Create("T-B")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	other := e2etest.NewProject(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claimA := claimCall("T-A --json")
	claimB := claimCall("T-B --dir " + shellquote.Quote(other) + " --json")
	model := agenttest.NewAnthropic(t, agenttest.Calls(claimA), agenttest.Calls(claimB), agenttest.Stall())
	wa, wb := e2etest.WatchTicket(t, ws, "T-A"), e2etest.WatchTicket(t, ws, "T-B")
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	model.WaitRequests(e2etest.SessionTimeout, "the stalled request", func(r []agenttest.Request) bool { return len(r) >= 3 })
	// Post of claim B, credited to both leases (the agent holds both).
	e2etest.Poll(t, "claim B's PostToolUse", func() bool { return e2etest.HookEvents(d) >= 3 })
	t0 := e2etest.Mtime(d.File(gyrumdir.ActivityFile))
	srB := e2etest.StartResultOf(t, model, claimB)
	if err := syscall.Kill(srB.LoopPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill loop B (pid %d): %v", srB.LoopPID, err)
	}
	killed := time.Now()

	e2etest.Poll(t, "both leases to lapse", func() bool {
		return ws.Lease("T-A").State == warp.LeaseLapsed && ws.Lease("T-B").State == warp.LeaseLapsed
	})
	wa.Stop()
	wb.Stop()
	if s.Exited() {
		t.Errorf("claude exited while the model stalled")
	}
	la := ws.Lease("T-A")
	bs := e2etest.BeatsOf(ws, "T-A")
	t.Logf("T-A verdicts %v, lapsed %v after the last tool call; T-B verdicts %v; T-A heartbeats:\n%s",
		wa.Verdicts(), la.EndedAt.Sub(t0).Round(time.Millisecond), wb.Verdicts(), e2etest.DescribeBeats(bs, t0))

	// From the last tool call on: before it the agent thinks, which a
	// loaded machine can stretch past the staleness limit (stalled, then
	// active again at the call, is then the truth).
	if vs := wa.VerdictsBetween(t0, la.EndedAt); len(vs) != 2 || vs[0] != warp.VerdictActive || vs[1] != warp.VerdictStalled {
		t.Errorf("T-A verdicts while held after the last tool call %v (all: %v), want [active stalled]", vs, wa.Verdicts())
	}
	if la.EndReason != warp.LapseNoActivity {
		t.Errorf("T-A lapse reason %q, want %q", la.EndReason, warp.LapseNoActivity)
	}
	// Stale reports arrive all along. Each says how old the activity was
	// when its tick began; the server puts the activity at its arrival
	// minus that age, so the latest activity it may hold is the latest
	// such time (t0 plus a tick's latency), never a report's own time.
	var firstStale time.Time
	activity := t0
	stale := 0
	for _, b := range bs {
		if b.At.After(la.EndedAt) {
			break
		}
		if b.At.After(t0.Add(e2etest.Secs(staleness+interval)+300*time.Millisecond)) && !b.Body.Stale {
			t.Errorf("fresh heartbeat %v after the last tool call while the model stalled", b.At.Sub(t0))
		}
		if b.Body.ActivityAgeS != nil {
			if at := b.At.Add(-e2etest.Secs(*b.Body.ActivityAgeS)); at.After(activity) {
				activity = at
			}
		}
		if b.Body.Stale {
			stale++
			if firstStale.IsZero() {
				firstStale = b.At
			}
		}
	}
	if stale < 3 {
		t.Errorf("%d stale reports before the lapse, want them every interval", stale)
	}
	if lag := activity.Sub(t0); lag > 300*time.Millisecond {
		t.Logf("note: the reports' ages put the activity %v after the last tool call (the latency of a tick on this machine)", lag)
	}
	limit := activity.Add(window + 10*time.Millisecond)
	var lastBeat time.Time
	moved := false
	for _, x := range wa.Samples() {
		if !x.Lease.Held() || x.At.Before(firstStale) {
			continue
		}
		if x.Lease.ExpiresAt.After(limit) && !moved {
			moved = true
			t.Errorf("expires_at %v during stale reports: %v past the last activity the reports gave + window",
				x.Lease.ExpiresAt.Format("15:04:05.000"), x.Lease.ExpiresAt.Sub(limit))
		}
		lastBeat = x.Lease.LastHeartbeatAt
	}
	if !lastBeat.After(firstStale.Add(time.Second)) {
		t.Errorf("last_heartbeat_at %v: the stale reports were not recorded as heartbeats", lastBeat)
	}
	if got := la.EndedAt.Sub(activity); got > window+e2etest.SweepEvery+300*time.Millisecond {
		t.Errorf("T-A lapsed %v after its last activity, want one window (%v) and a sweep", got, window)
	}

	// The dead loop: no heartbeat after the kill, and its lease turned silent.
	for _, b := range e2etest.BeatsOf(ws, "T-B") {
		if b.At.After(killed.Add(100 * time.Millisecond)) {
			t.Errorf("T-B heartbeat %v after its loop was killed", b.At.Sub(killed))
		}
	}
	silent := false
	for _, v := range wb.Verdicts() {
		silent = silent || v == warp.VerdictSilent
	}
	if !silent {
		t.Errorf("T-B verdicts %v with a dead loop, want silent", wb.Verdicts())
	}
	s.Kill()
}

// (6) No outage length loses a healthy lease. A session works all along
// (short Bash calls); warp goes down for twice the lease window; it comes
// back with its startup grace opened (Service.Init, what warp serve does)
// and sweeps running. The loop never waits longer than the server's
// max_retry_gap_s (90 % of the grace), so a fresh heartbeat arrives within
// the grace and the lease survives.
//
// Timings: interval 1.2 s, window 2.7 s, outage 5.4 s, grace 2.1 s (the
// loop's cap: 1.89 s). The old backoff (1, 2, 4, 4 … intervals, ±10 %,
// capped at four intervals = 4.8 s, more than the grace) tries for the
// third time at most 4.4 intervals (5.28 s) and for the fourth at least
// 6.3 intervals (7.56 s) after the outage begins, whatever its phase: no
// attempt lands in the grace [5.4 s, 7.5 s], so the sweep at the grace's
// end lapses the lease.
func TestPointOutageLosesNoLease(t *testing.T) {
	claude.Require(t)
	const interval = 1.2
	window, grace := 2700*time.Millisecond, 2100*time.Millisecond
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Minute, time.Minute, grace))
	sweeps := e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-6")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	turns := []agenttest.Turn{agenttest.Calls(claimCall("T-6 --json"))}
	for i := range 60 {
		turns = append(turns, agenttest.Calls(Bash(fmt.Sprintf("sleep 0.3; echo tick-%d", i))))
	}
	model := agenttest.NewAnthropic(t, append(turns, agenttest.Text("Done."))...)
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	e2etest.Poll(t, "two answered heartbeats", func() bool { return len(e2etest.BeatsOf(ws, "T-6")) >= 2 })
	epoch := ws.Lease("T-6").Epoch

	sweeps.Close()
	ws.Down()
	down := time.Now()
	time.Sleep(2 * window)
	ws.Up()
	up := time.Now()
	if err := ws.Svc.Init(context.Background()); err != nil { // what warp serve does at start
		t.Fatal(err)
	}
	initAt := time.Now()
	e2etest.StartSweeps(t, ws.Svc)
	time.Sleep(time.Until(initAt.Add(grace + window + 300*time.Millisecond)))
	bs := e2etest.BeatsOf(ws, "T-6")
	v := ws.Ticket("T-6")
	if s.Exited() {
		t.Fatalf("the session ended during the test (%d)", s.Wait(time.Second))
	}
	t.Logf("down at %s, up %v later; heartbeats:\n%s", down.Format("15:04:05.000"), up.Sub(down).Round(time.Millisecond), e2etest.DescribeBeats(bs, down))

	if v.Ticket.State != warp.TicketClaimed || v.Lease.State != warp.LeaseHeld || v.Lease.Epoch != epoch {
		t.Errorf("after the outage: ticket %s, lease %s epoch %d (%s), want claimed and held epoch %d",
			v.Ticket.State, v.Lease.State, v.Lease.Epoch, v.Lease.EndReason, epoch)
	}
	var back time.Time
	for _, b := range bs {
		if b.Status != 200 && !b.At.Before(up) {
			t.Errorf("heartbeat %v after the restart answered %d", b.At.Sub(up), b.Status)
		}
		if back.IsZero() && b.Status == 200 && !b.At.Before(up) {
			back = b.At
			if b.Body.Stale {
				t.Error("the first heartbeat after the restart is a stale report")
			}
		}
	}
	switch {
	case back.IsZero():
		t.Errorf("no heartbeat answered after the restart, want one within the %v grace", grace)
	case back.After(initAt.Add(grace)):
		t.Errorf("first heartbeat after the restart %v after the grace opened, want within the %v grace", back.Sub(initAt), grace)
	}
	s.Kill()
}

// (7) Wrap mode: `gyrum start-work T -- claude -p …` runs claude as
// gyrum's child. SIGKILL of the gyrum wrapper (no chance to clean up)
// must take claude down too (Linux parent-death signal SIGTERM), and the
// loop, which watches the wrapper, reports parent-exited.
//
// Without the parent-death signal claude runs on, re-parented, without a
// lease: the "claude still running" poll fails.
func TestPointWrapModeKillsAgentWithWrapper(t *testing.T) {
	claude.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-7")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	started := filepath.Join(t.TempDir(), "started")
	held := Bash("touch " + shellquote.Quote(started) + "; while :; do sleep 0.05; done")
	model := agenttest.NewAnthropic(t, agenttest.Calls(held), agenttest.Text("Done."))
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60),
		Wrap: []string{gyrumBin, "start-work", "T-7", "--json", "--"}})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	claudePid := s.AgentPid()
	if claudePid == 0 || claudePid == s.Pid() {
		t.Fatalf("no claude below the wrapper %d:\n%s", s.Pid(), s.TreeString())
	}
	sr := e2etest.ParseStart(t, s.Stderr())
	if sr.WatchedPID != s.Pid() || sr.WatchedHow != "self" {
		t.Errorf("wrap mode watches %d (%s), want the wrapper %d (self)", sr.WatchedPID, sr.WatchedHow, s.Pid())
	}
	e2etest.Poll(t, "a heartbeat with the call in flight", func() bool {
		for _, b := range e2etest.BeatsOf(ws, "T-7") {
			if b.Body.InFlight == "Bash" {
				return true
			}
		}
		return false
	})

	if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if code := s.Wait(5 * time.Second); code != 128+int(syscall.SIGKILL) {
		t.Errorf("wrapper exit %d", code)
	}
	e2etest.Poll(t, "claude to die with its wrapper", func() bool { return !e2etest.Alive(claudePid) })
	t.Logf("claude gone %v after the wrapper's SIGKILL", time.Since(killed).Round(time.Millisecond))
	e2etest.ParentExitedAt(t, ws, "T-7", "")
	if v := ws.Ticket("T-7"); v.Verdict != warp.VerdictExited {
		t.Errorf("verdict %s after the exit report, want exited", v.Verdict)
	}
	e2etest.Poll(t, "the loop to exit", func() bool { return !e2etest.Exists(d.File(gyrumdir.LoopPIDFile)) })
	if left := s.Leftovers(); len(left) != 0 {
		t.Logf("note: processes of the session still running after claude died: %v", left)
	}
}

// (8) The ancestor walk recognises the real process: with CLAUDE_PID
// removed from the Bash call's environment, start-work walks up from its
// parent (the call's bash) and finds claude itself (the native binary,
// comm "claude"); the loop does not report the agent gone while the
// session works, and does once it is over.
//
// The walk once knew only node running cli.js: it fell back to the parent,
// the call's short-lived bash, and the loop reported parent-exited right
// after the claim; the watched_how and "no exit while working"
// assertions catch that.
func TestPointAncestorWalkFindsClaude(t *testing.T) {
	claude.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-8")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := Bash("env -u CLAUDE_PID " + shellquote.Quote(gyrumBin) + " start-work T-8 --json")
	work := []agenttest.Call{Bash("sleep 0.5; echo a"), Write(filepath.Join(project, "b.md"), "b\n"),
		Bash("sleep 0.5; echo c")}
	model, s, last := claimAndWork(t, ws, project, claim, work)

	sr := e2etest.StartResultOf(t, model, claim)
	if sr.WatchedPID != s.Pid() || sr.WatchedHow != "ancestor" || sr.Watched != "claude" {
		t.Fatalf("start-work without CLAUDE_PID watches %d %q (%s), want claude %d found by the ancestor walk",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, s.Pid())
	}
	working := 0
	for _, b := range e2etest.BeatsOf(ws, "T-8") {
		if b.At.Before(last) {
			working++
			if b.Body.Exit != "" {
				t.Errorf("exit report %q %v before the session ended", b.Body.Exit, s.Ended().Sub(b.At))
			}
		}
	}
	if working < 5 {
		t.Errorf("%d heartbeats while the session worked, want the loop to keep posting", working)
	}
	// The exit report must come after the session's last model request
	// (claude was still working then). It is not compared with s.Ended():
	// the loop may see claude gone (a zombie) before the test's Wait reaps
	// it and records the end, which made this assertion flaky in CI.
	report := e2etest.ParentExitedAt(t, ws, "T-8", "once claude exited")
	if report.Before(last) {
		t.Errorf("parent-exited report %v before the session's last request", last.Sub(report))
	}
}

// claimAndWork runs a session in project against ws whose model makes the
// claim call, then each work call, one a turn, then ends; it returns the
// model, the session (ended) and when the session's last request came.
func claimAndWork(t *testing.T, ws *warptest.Server, project string, claim agenttest.Call, work []agenttest.Call) (*agenttest.FakeModel, *Session, time.Time) {
	t.Helper()
	turns := []agenttest.Turn{agenttest.Calls(claim)}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	model := agenttest.NewAnthropic(t, append(turns, agenttest.Text("Done."))...)
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
	reqs := model.WaitRequests(e2etest.SessionTimeout, "the last request", func(r []agenttest.Request) bool { return len(r) >= len(turns)+1 })
	last := reqs[len(turns)].At
	s.WaitOK(e2etest.SessionTimeout)
	return model, s, last
}

// (8b) Another agent started from the session: the Bash call runs a
// "codex" (here a copy of /bin/sh by that name), which runs start-work.
// Claude Code put CLAUDE_PID — its own pid — in the call's environment,
// and codex hands it down; start-work must watch codex, the agent between
// it and claude, not the Claude Code session. Once codex has ended (its
// script returns right after start-work) the loop reports parent-exited
// while the session still works.
//
// start-work once watched CLAUDE_PID whatever ran in between: the lease
// of an agent that was gone stayed green for as long as the session ran.
func TestPointNestedAgentIsWatched(t *testing.T) {
	claude.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-8b")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	codex := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(codex, sh, 0o755); err != nil {
		t.Fatal(err)
	}
	// "; true" keeps codex from exec-ing gyrum: it stays the parent.
	claim := Bash(shellquote.Quote(codex) + " -c " + shellquote.Quote(shellquote.Quote(gyrumBin)+" start-work T-8b --json; true"))
	work := []agenttest.Call{Bash("sleep 1; echo a"), Bash("sleep 1; echo b")}
	model, s, last := claimAndWork(t, ws, project, claim, work)

	sr := e2etest.StartResultOf(t, model, claim)
	if sr.Watched != "codex" || sr.WatchedHow != "ancestor" || sr.WatchedPID == s.Pid() {
		t.Fatalf("start-work under codex in a Claude Code session watches %d %q (%s), want codex found by the walk, not claude %d",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, s.Pid())
	}
	report := e2etest.ParentExitedAt(t, ws, "T-8b", "once codex ended")
	if !report.Before(last) {
		t.Errorf("parent-exited report %v after the session's last request: the loop watched the session, not codex", report.Sub(last))
	}
}

// (9) gyrum doctor reports hooks switched off: "disableAllHooks": true next
// to the hook gyrum setup installed makes `gyrum doctor --json` fail the
// hook check with a fix naming disableAllHooks — and the real CLI with
// those settings indeed runs no hook (no hook-events, last-activity
// unchanged, the recorder hook in the same file never called). The same
// session with the switch set to false runs them: the measurement can
// see a hook fire.
//
// A doctor that only looked for the hook command passed this host while
// no hook ever ran; the hook-check assertion catches that.
func TestPointDoctorReportsHooksOff(t *testing.T) {
	claude.Require(t)
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	settingsPath := filepath.Join(project, ".claude", "settings.json")
	var settings map[string]any
	if err := json.Unmarshal([]byte(e2etest.ReadFile(settingsPath)), &settings); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	// The recorder joins gyrum's hook in the same file, for every event.
	hooks := settings["hooks"].(map[string]any)
	for ev, group := range rec.settings("PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop")["hooks"].(map[string]any) {
		prev, _ := hooks[ev].([]any)
		hooks[ev] = append(prev, group.([]any)...)
	}
	writeSettings := func(disable bool) {
		settings["disableAllHooks"] = disable
		data, err := json.MarshalIndent(settings, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, settingsPath, data, 0o644)
	}
	writeSettings(true)

	home := t.TempDir()
	out, code, _ := e2etest.GyrumCode(t, project, map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"),
		"GYRUM_HOME": filepath.Join(home, ".gyrum"), "WARP_URL": "http://127.0.0.1:9"}, "doctor", "--json")
	var rep struct {
		OK     bool `json:"ok"`
		Checks []struct{ Name, Status, Detail, Fix string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	found := false
	for _, c := range rep.Checks {
		if c.Name != "hook" {
			continue
		}
		found = true
		t.Logf("doctor hook check: %s: %s; fix: %s", c.Status, c.Detail, c.Fix)
		if c.Status != "fail" || !strings.Contains(c.Fix, "disableAllHooks") || !strings.Contains(c.Fix, settingsPath) {
			t.Errorf("hook check %s (%s), fix %q: want fail with a fix removing disableAllHooks from %s", c.Status, c.Detail, c.Fix, settingsPath)
		}
	}
	if !found || code == 0 || rep.OK {
		t.Errorf("doctor exit %d ok %v, hook check found %v:\n%s", code, rep.OK, found, out)
	}

	// The real CLI runs no hook with these settings.
	d, err := gyrumdir.Create(project)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-9", Epoch: 1, WarpURL: "http://127.0.0.1:9", Agent: "a", Host: "h", ClaimedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := d.TouchActivity(old); err != nil {
		t.Fatal(err)
	}
	// As start-work would: the hook writes only into prepared worktrees.
	gyrumHome := t.TempDir()
	if err := gyrumdir.NewPrepared(gyrumHome).Add(d.Worktree); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		model := agenttest.NewAnthropic(t, agenttest.Calls(Bash("echo work")),
			agenttest.Calls(Write(filepath.Join(project, "w.md"), "w\n")), agenttest.Text("Done."))
		k, v := rec.env()
		s := start(t, model, project, agenttest.Options{Env: map[string]string{k: v, "GYRUM_HOME": gyrumHome}})
		s.WaitOK(e2etest.SessionTimeout)
	}
	run()
	if n := e2etest.HookEvents(d); n != 0 {
		t.Errorf("hooks off: hook-events counted %d runs", n)
	}
	if got := e2etest.Mtime(d.File(gyrumdir.ActivityFile)); !got.Equal(old) {
		t.Errorf("hooks off: last-activity moved to %v", got)
	}
	if n := len(rec.records()); n != 0 {
		t.Errorf("hooks off: the recorder ran %d times:\n%s", n, rec.summary())
	}

	// Control: switched back on, the same session runs both hooks.
	writeSettings(false)
	run()
	if n := e2etest.HookEvents(d); n != 4 {
		t.Errorf("hooks on: hook-events counted %d runs, want 4 (Pre and Post of two calls)", n)
	}
	if got := e2etest.Mtime(d.File(gyrumdir.ActivityFile)); !got.After(old) {
		t.Error("hooks on: last-activity did not move")
	}
	if len(rec.records()) == 0 {
		t.Error("hooks on: the recorder never ran")
	}
}

// (33.4) $GYRUM_HOME deleted (rm -rf) under a working session: the loop
// restores its registry entry, the prepared worktree and the agent's index
// entry at its next tick, so the hook goes on crediting the worktree and
// the lease stays held and active well past staleness + window.
//
// Before the loop restored them, the hook stopped crediting (the worktree
// was no longer "prepared"), the loop sent stale reports, and the lease
// lapsed one window later: the lease, verdict and stale-report assertions
// catch that.
func TestPointLostHomeKeepsLease(t *testing.T) {
	claude.Require(t)
	const (
		interval  = 0.2
		staleness = 1.5
	)
	window := 2 * time.Second
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, 2*time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-home")
	project := e2etest.NewProject(t)
	setupHooks(t, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	turns := []agenttest.Turn{agenttest.Calls(claimCall("T-home --json"))}
	for i := range 80 {
		turns = append(turns, agenttest.Calls(Bash(fmt.Sprintf("sleep 0.3; echo step-%d", i))))
	}
	model := agenttest.NewAnthropic(t, append(turns, agenttest.Text("Done."))...)
	env := e2etest.AgentEnv(t, ws.URL(), interval, staleness, 30)
	home := env["GYRUM_HOME"]
	s := start(t, model, project, agenttest.Options{Env: env})
	e2etest.Poll(t, "two answered heartbeats", func() bool { return len(e2etest.BeatsOf(ws, "T-home")) >= 2 })
	w := e2etest.WatchTicket(t, ws, "T-home")
	epoch := ws.Lease("T-home").Epoch

	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	e2etest.Poll(t, "the loop to restore the prepared worktree", func() bool { return gyrumdir.NewPrepared(home).Has(project) })
	e2etest.Poll(t, "a hook run after the home went", func() bool { return e2etest.Mtime(d.File(gyrumdir.ActivityFile)).After(gone) })
	time.Sleep(time.Until(gone.Add(e2etest.Secs(staleness) + 2*window)))
	if s.Exited() {
		t.Fatalf("the session ended before the check (%d): give it more steps", s.Wait(time.Second))
	}
	w.Stop()
	bs := e2etest.BeatsOf(ws, "T-home")
	t.Logf("home deleted at %s; heartbeats:\n%s", gone.Format("15:04:05.000"), e2etest.DescribeBeats(bs, gone))

	if l := ws.Lease("T-home"); l.State != warp.LeaseHeld || l.Epoch != epoch {
		t.Errorf("after the home went: lease %s epoch %d (%s), want held epoch %d", l.State, l.Epoch, l.EndReason, epoch)
	}
	for _, b := range bs {
		if b.At.After(gone) && b.Body.Stale {
			t.Errorf("stale report %v after the home went, while the agent worked", b.At.Sub(gone).Round(time.Millisecond))
			break
		}
	}
	for _, x := range w.Samples() {
		if x.At.After(gone) && (!x.Lease.Held() || x.Verdict != warp.VerdictActive) {
			t.Errorf("%v after the home went: lease %s, verdict %s; want held and active", x.At.Sub(gone).Round(time.Millisecond), x.Lease.State, x.Verdict)
			break
		}
	}
	if entries, _, _ := gyrumdir.NewRegistry(home).List(); len(entries) != 1 {
		t.Errorf("registry after the home went: %+v, want the loop's entry restored", entries)
	}

	// The home goes again and the operator releases the lease at once:
	// the agent is still told, on its next tool call.
	const told = "your lease on ticket T-home"
	if model.SawText(told) {
		t.Fatal("the model was told before the lease ended")
	}
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Svc.Release(context.Background(), "T-home", epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	e2etest.Poll(t, "the model to be told its lease ended", func() bool { return model.SawText(told) })
	s.Kill()
}
