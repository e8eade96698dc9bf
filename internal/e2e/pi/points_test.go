package pi_test

// The matrix of issue 42 for pi: each test drives the real CLI
// against the scripted fake chat completions API, with the real gyrum
// binary (the hook gyrum's plugin runs, the detached loop start-work
// spawns) and a real warp on scaled timings (tick 0.2 s, staleness 1 s,
// window 1.5 s).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agenttest"
	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// Scaled timings of the matrix.
const (
	interval  = 0.2
	staleness = 1.0
	window    = 1500 * time.Millisecond
)

// scaledWarp starts a warp with the scaled policy and its sweeps.
func scaledWarp(t *testing.T) *warptest.Server {
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	return ws
}

// quietHeld checks that the lease of ticket was held, fresh, through
// [from, to]: every heartbeat in it is fresh, and most name bash in
// flight.
func quietHeld(t *testing.T, ws *warptest.Server, ticket string, from, to time.Time) {
	t.Helper()
	n, named := 0, 0
	for _, b := range e2etest.BeatsOf(ws, ticket) {
		if b.At.Before(from) || b.At.After(to) {
			continue
		}
		n++
		if b.Body.Stale {
			t.Errorf("heartbeat %v into the call is stale; want fresh, bash in flight:\n%s",
				b.At.Sub(from).Round(time.Millisecond), e2etest.DescribeBeats(e2etest.BeatsOf(ws, ticket), from))
			return
		}
		if b.Body.InFlight == "bash" {
			named++
		} else if b.Body.InFlight != "" {
			t.Errorf("heartbeat %v into the call names %q in flight; want bash", b.At.Sub(from).Round(time.Millisecond), b.Body.InFlight)
		}
	}
	if n < 5 || named*2 < n {
		t.Errorf("%d heartbeats during the call, %d naming it; want one a tick, most naming it:\n%s", n, named, e2etest.DescribeBeats(e2etest.BeatsOf(ws, ticket), from))
	}
}

// heldActiveThroughTheCalls checks the verdicts from from, when the calls
// under test began, until a staleness limit after the last tool call ended
// (the last-activity record): active only, or exited last. Before from the
// agent thinks, and after the last call it is idle on its way out, which a
// loaded machine can stretch past the scaled stall threshold: stalled is
// then the truth.
func heldActiveThroughTheCalls(t *testing.T, w *e2etest.Watcher, d gyrumdir.Dir, from time.Time, staleness float64) {
	t.Helper()
	last, err := d.LastActivity()
	if err != nil {
		t.Fatalf("the last tool call's time: %v", err)
	}
	vs := w.VerdictsBetween(from, last.Add(e2etest.Secs(staleness)))
	for i, v := range vs {
		if v != warp.VerdictActive && (v != warp.VerdictExited || i != len(vs)-1) {
			t.Errorf("verdicts while held from the calls until %vs after the last one %v (all: %v), want active (then exited) only", staleness, vs, w.Verdicts())
			break
		}
	}
}

// noExitReportBefore checks that no heartbeat of ticket before at (the
// CLI's exit) reported an exit: under warp's --release-on-exit a false
// report would release the ticket of a working agent.
func noExitReportBefore(t *testing.T, ws *warptest.Server, ticket string, at time.Time) {
	t.Helper()
	for _, b := range e2etest.BeatsOf(ws, ticket) {
		if b.Body.Exit != "" && b.At.Before(at) {
			t.Errorf("the loop reported %q %v before the CLI exited", b.Body.Exit, at.Sub(b.At).Round(time.Millisecond))
		}
	}
}

// lastAlive samples pid every 5 ms until it is gone and returns when it
// was last seen alive (so far).
func lastAlive(t *testing.T, pid int) func() time.Time {
	var mu sync.Mutex
	seen := time.Now()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			now := time.Now()
			if !e2etest.Alive(pid) {
				return
			}
			mu.Lock()
			seen = now
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// A quiet foreground call longer than window + staleness is held: the
// call's bash is a child of the watched pi and backs the marker the
// extension's PreToolUse left, so the heartbeats stay fresh and the lease
// never stalls; when the session ends the exit is reported and the
// verdict is exited.
//
// The timings are opencode's (3 s + 3 s, the step 7 s); pi thinks for less
// than a second between calls.
func TestForegroundStepHeld(t *testing.T) {
	pi.Require(t)
	const (
		staleness = 3.0
		window    = 3 * time.Second
	)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, e2etest.Secs(staleness), 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	started := filepath.Join(t.TempDir(), "started")
	const quiet = 7.0 // > window + staleness
	claim := claimCall("T-1 --json")
	step := Shell(fmt.Sprintf("touch %s; sleep %g; echo slept", shellquote.Quote(started), quiet))
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(step), agenttest.Text("Done."))
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	e2etest.Poll(t, "the quiet step to start", func() bool { return e2etest.Exists(started) })
	alive := lastAlive(t, s.Pid())
	from := time.Now()
	e2etest.SkipIfLapsedBefore(t, ws, "T-1", from)
	s.WaitOK(e2etest.SessionTimeout)
	to := from.Add(e2etest.Secs(quiet) - 300*time.Millisecond)

	if sr := e2etest.StartResultOf(t, model, claim); sr.WatchedPID != s.Pid() || sr.WatchedHow != "ancestor" {
		t.Errorf("start-work watches %d (%s); want pi %d, the ancestor", sr.WatchedPID, sr.WatchedHow, s.Pid())
	}
	quietHeld(t, ws, "T-1", from.Add(e2etest.Secs(staleness)), to)
	// Not s.Ended(): the harness sees the exit after the loop may have.
	noExitReportBefore(t, ws, "T-1", alive())
	if res, _ := model.ToolResult(step.ID); !strings.Contains(res.Content, "slept") {
		t.Errorf("the step's result %q", res.Content)
	}
	if l := ws.Lease("T-1"); l.State == warp.LeaseLapsed && l.EndReason == warp.LapseNoActivity {
		last, _ := d.LastActivity()
		if l.EndedAt.Before(last.Add(e2etest.Secs(staleness))) {
			t.Fatalf("the lease lapsed %v after the last call", l.EndedAt.Sub(last))
		}
		t.Logf("the agent idled on its way out: the lease lapsed %v after its last call", l.EndedAt.Sub(last).Round(time.Millisecond))
	} else {
		parentExitedAt(t, ws, "T-1")
		e2etest.Poll(t, "the verdict exited", func() bool { return ws.Ticket("T-1").Verdict == warp.VerdictExited })
	}
	w.Stop()
	heldActiveThroughTheCalls(t, w, d, from, staleness)
}

// The model wedges (the API never answers) after the claim: pi is
// alive, waiting on its model, and does no work. The lease goes stalled
// and then lapses within staleness + window + a sweep, and the agent's
// own process, waiting on the API, is never credited as its background
// work.
func TestWedgeLapses(t *testing.T) {
	pi.Require(t)
	ws := scaledWarp(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-1 --json")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Stall())
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	model.WaitRequests(e2etest.SessionTimeout, "the stalled request after the claim", func([]agenttest.Request) bool {
		_, ok := model.ToolResult(claim.ID)
		return ok
	})
	wedged := time.Now()
	e2etest.Poll(t, "the lease to lapse", func() bool { return ws.Lease("T-1").State == warp.LeaseLapsed })
	l := ws.Lease("T-1")
	bs := e2etest.BeatsOf(ws, "T-1")
	t.Logf("lapsed %v after the wedge (%s); heartbeats:\n%s", l.EndedAt.Sub(wedged).Round(time.Millisecond), l.EndReason, e2etest.DescribeBeats(bs, wedged))
	if s.Exited() {
		t.Fatalf("pi exited (%d) while the model stalled", s.Wait(time.Second))
	}
	if limit := e2etest.Secs(staleness) + window + e2etest.SweepEvery + time.Second; l.EndedAt.Sub(wedged) > limit {
		t.Errorf("lapsed %v after the wedge, want within staleness + window + a sweep (%v)", l.EndedAt.Sub(wedged), limit)
	}
	if l.EndReason != warp.LapseNoActivity {
		t.Errorf("lapse reason %q, want %q", l.EndReason, warp.LapseNoActivity)
	}
	for _, b := range bs {
		if strings.HasPrefix(b.Body.InFlight, "background") {
			t.Errorf("heartbeat %v after the wedge credits %q: the agent's own process", b.At.Sub(wedged).Round(time.Millisecond), b.Body.InFlight)
			break
		}
		if b.Body.Exit != "" {
			t.Errorf("heartbeat %v after the wedge reports exit %q while pi runs", b.At.Sub(wedged).Round(time.Millisecond), b.Body.Exit)
		}
	}
	w.Stop()
	if vs := w.Verdicts(); len(vs) == 0 || vs[len(vs)-1] != warp.VerdictStalled {
		t.Errorf("verdicts while held %v, want to end stalled", vs)
	}
}

// An operator releases the lease while a call runs: the loop's next POST
// gets 410 and leaves the notice; the call's tool.execute.after runs the
// hook, which prints it as Claude Code's additionalContext, and the plugin
// appends it to the call's output, so the model is told in the held
// call's result on its next request, once.
func TestOperatorReleaseTold(t *testing.T) {
	pi.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-4")
	project := e2etest.NewProject(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-4 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	next := Shell("echo next")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Calls(next), agenttest.Text("Stopping."))
	s := start(t, model, project, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	sr := e2etest.StartResultOf(t, model, claim)
	const told = "your lease on ticket T-4"
	if model.SawText(told) {
		t.Fatal("the model was told before the lease ended")
	}
	if _, err := ws.Svc.Release(context.Background(), "T-4", sr.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	e2etest.Poll(t, "the loop's lease-ended notice", func() bool { return e2etest.Exists(d.File(gyrumdir.NoticeFile)) })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)

	res, ok := model.ToolResult(held.ID)
	if !ok || !strings.Contains(res.Content, told) || !strings.Contains(res.Content, "released (operator)") || !strings.Contains(res.Content, "held-done") {
		t.Fatalf("the held call's result %q, want its output and the notice", res.Content)
	}
	t.Logf("the held call's result as the model saw it (request %d):\n%s", res.Request, res.Content)
	if r, _ := model.FirstWithText(told); r.N != res.Request {
		t.Errorf("first told in request %d, the held call's result came in %d", r.N, res.Request)
	}
	if res, _ := model.ToolResult(next.ID); strings.Contains(res.Content, told) {
		t.Error("the notice was shown again after the next call")
	}
	if e2etest.Exists(d.File(gyrumdir.NoticeFile)) {
		t.Error("lease-ended.json is still there after the agent was told")
	}
}

// `gyrum start-work T --worktree` from inside a session, then calls that
// `cd` into the worktree, as models do: the plugin's payloads carry the
// project as cwd, so the hook credits the lease of its agent, found
// through the agent index: the hook's nearest agent is the pi that
// start-work indexed. The worktree
// counts every hook run after the claim and the verdict is never unwired.
func TestWorktreeWithCdCredited(t *testing.T) {
	pi.Require(t)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(30*time.Second, 2*time.Second, 30*time.Second, time.Second))
	ws.Create("T-2")
	project := e2etest.NewProject(t)
	root := t.TempDir()
	wt := filepath.Join(root, filepath.Base(project)+"-T-2")
	q := shellquote.Quote(wt)
	claim := claimCall("T-2 --worktree --json")
	work := []agenttest.Call{
		Shell("cd " + q + " && echo '# T-2' > notes.md"),
		Shell("cd " + q + " && sleep 1 && echo one"),
		Shell("cd " + q + " && sleep 1 && echo two"),
	}
	turns := []agenttest.Turn{agenttest.Calls(claim)}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	model := agenttest.NewChat(t, append(turns, agenttest.Text("Done with T-2."))...)
	env := e2etest.AgentEnv(t, ws.URL(), interval, 30, 1)
	env["GYRUM_WORKTREE_ROOT"] = root
	w := e2etest.WatchTicket(t, ws, "T-2")
	s := start(t, model, project, agenttest.Options{Env: env})
	sr := e2etest.WaitStart(t, model, claim)
	wd, err := gyrumdir.At(wt)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.LogLoopOnFailure(t, wd)
	s.WaitOK(e2etest.SessionTimeout)

	if sr.Dir != wt || sr.WatchedPID != s.Pid() || sr.WatchedHow != "ancestor" {
		t.Fatalf("start-work: dir %s, watches %d (%s); want %s and pi %d, the ancestor", sr.Dir, sr.WatchedPID, sr.WatchedHow, wt, s.Pid())
	}
	if e2etest.Exists(filepath.Join(project, gyrumdir.DirName)) {
		t.Error("the project got a .gyrum/: the claim was not made in the worktree only")
	}
	if !e2etest.Exists(filepath.Join(wt, "notes.md")) {
		t.Error("the write into the worktree did not happen")
	}
	if got, want := e2etest.HookEvents(wd), int64(1+2*len(work)); got != want {
		t.Errorf("the worktree's hook-events counted %d, want %d (the claim's PostToolUse, PreToolUse and PostToolUse of %d calls)", got, want, len(work))
	}
	rec, ok, last, err := wd.ReadActivity()
	if err != nil || !ok || rec.Event != "PostToolUse" || rec.Tool != "bash" {
		t.Errorf("the worktree's activity record %+v (ok %v, err %v), want the last call's PostToolUse", rec, ok, err)
	}
	e2etest.Poll(t, "warp's last_activity_at to reach the last call", func() bool {
		return !ws.Lease("T-2").LastActivityAt.Before(last.Add(-500 * time.Millisecond))
	})
	if l := ws.Lease("T-2"); l.LastActivityAt.Sub(l.ClaimedAt) < 1500*time.Millisecond {
		t.Errorf("last_activity_at %v after the claim, want the calls' activity (> 1.5 s)", l.LastActivityAt.Sub(l.ClaimedAt))
	}
	w.Stop()
	if len(w.VerdictsHooked()) == 0 {
		t.Errorf("verdicts %v: the loop never reported the hook", w.Verdicts())
	}
	for _, v := range w.VerdictsHooked() {
		if v == warp.VerdictUnwired {
			t.Errorf("verdicts %v once the hook was reported: unwired while the hook fired", w.VerdictsHooked())
		}
	}
}
