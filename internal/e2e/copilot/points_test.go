package copilot_test

// The rest of the matrix of issue 42 for GitHub Copilot CLI: each test drives the
// real CLI against the scripted fake chat API, with the real gyrum binary
// (the hook gyrum setup wires and the detached loop start-work spawns)
// and a real warp on scaled timings (tick 0.2 s, staleness 2 s, window
// 3 s: room for the CLI's few seconds between a call's end and the
// next call's start on a loaded machine).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	staleness = 2.0
	window    = 3 * time.Second
)

// scaledWarp starts a warp with the scaled policy and its sweeps.
func scaledWarp(t *testing.T) *warptest.Server {
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	return ws
}

// Matrix point 2: a quiet foreground call longer than staleness + window
// is held: its bash is the agent's child and backs its marker, so every
// heartbeat through it is fresh and names the call, the verdict stays
// active, and the lease never stalls.
func TestQuietStepHeld(t *testing.T) {
	copilot.Require(t)
	ws := scaledWarp(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	home := setupHooks(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	started := filepath.Join(t.TempDir(), "started")
	const quiet = 8.0 // > staleness + window
	claim := claimCall("T-1 --json")
	step := Shell(fmt.Sprintf("touch %s; sleep %g; echo slept", shellquote.Quote(started), quiet))
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(step), agenttest.Text("Done."))
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := start(t, model, project, home, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	e2etest.Poll(t, "the quiet step to start", func() bool { return e2etest.Exists(started) })
	from := time.Now()
	e2etest.SkipIfLapsedBefore(t, ws, "T-1", from)
	agent := s.AgentPid()
	s.WaitOK(e2etest.SessionTimeout)
	to := from.Add(e2etest.Secs(quiet) - 300*time.Millisecond)

	if sr := e2etest.StartResultOf(t, model, claim); sr.WatchedPID != agent || agent == s.Pid() {
		t.Errorf("start-work watches %d; want the agent %d, not the launcher %d", sr.WatchedPID, agent, s.Pid())
	}
	quietHeld(t, ws, "T-1", from.Add(e2etest.Secs(staleness)), to)
	w.Stop()
	for _, v := range w.VerdictsBetween(from, to) {
		if v != warp.VerdictActive {
			t.Errorf("verdicts during the quiet step %v, want active only", w.VerdictsBetween(from, to))
			break
		}
	}
	if l := ws.Lease("T-1"); l.State == warp.LeaseLapsed && l.EndedAt.Before(to) {
		t.Errorf("the lease lapsed (%s) %v into the quiet step", l.EndReason, l.EndedAt.Sub(from))
	}
}

// quietHeld checks that the lease of ticket was held, fresh, through
// [from, to]: every heartbeat in it is fresh, and most name the call in
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
			t.Errorf("heartbeat %v into the call is stale; want fresh, Bash in flight:\n%s",
				b.At.Sub(from).Round(time.Millisecond), e2etest.DescribeBeats(e2etest.BeatsOf(ws, ticket), from))
			return
		}
		if b.Body.InFlight == "Bash" {
			named++
		}
	}
	if n < 5 || named*2 < n {
		t.Errorf("%d heartbeats during the call, %d naming it; want one a tick, most naming it:\n%s", n, named, e2etest.DescribeBeats(e2etest.BeatsOf(ws, ticket), from))
	}
}

// Matrix point 3: the model wedges after the claim (the API never
// answers): the session is alive, waiting on its model, and does no
// work. The lease goes stalled and then lapses within staleness + window
// + a sweep; the agent's own node process, waiting on the API, is never
// credited as its background work.
func TestWedgedModelLapses(t *testing.T) {
	copilot.Require(t)
	ws := scaledWarp(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	home := setupHooks(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-1 --json")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Stall())
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := start(t, model, project, home, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	model.WaitRequests(e2etest.SessionTimeout, "the stalled request after the claim", func(r []agenttest.Request) bool { return len(mainOf(r)) >= 2 })
	wedged := time.Now()
	e2etest.Poll(t, "the lease to lapse", func() bool { return ws.Lease("T-1").State == warp.LeaseLapsed })
	l := ws.Lease("T-1")
	bs := e2etest.BeatsOf(ws, "T-1")
	t.Logf("lapsed %v after the wedge (%s); heartbeats:\n%s", l.EndedAt.Sub(wedged).Round(time.Millisecond), l.EndReason, e2etest.DescribeBeats(bs, wedged))
	if s.Exited() {
		t.Errorf("copilot exited (%d) while the model stalled", s.Wait(time.Second))
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
			t.Errorf("exit report %q while the agent lived: a false exit report", b.Body.Exit)
		}
	}
	w.Stop()
	if vs := w.Verdicts(); len(vs) == 0 || vs[len(vs)-1] != warp.VerdictStalled {
		t.Errorf("verdicts while held %v, want to end stalled", vs)
	}
}

// mainOf keeps the main requests.
func mainOf(rs []agenttest.Request) []agenttest.Request {
	var out []agenttest.Request
	for _, r := range rs {
		if r.Kind == agenttest.KindMain {
			out = append(out, r)
		}
	}
	return out
}

// Matrix point 4: an operator releases the lease while a call runs: the
// loop's next POST gets 410 and leaves the notice; the call's PostToolUse
// prints it as a top-level additionalContext (the hook is run with
// --agent copilot: Copilot ignores Claude Code's hookSpecificOutput), which
// Copilot appends to that call's result, so the model is told on its
// next request, once.
func TestOperatorReleaseTold(t *testing.T) {
	copilot.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-4")
	project := e2etest.NewProject(t)
	home := setupHooks(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-4 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	next := Shell("echo next")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Calls(next), agenttest.Text("Stopping."))
	s := start(t, model, project, home, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
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
	n := res.Request
	if !ok || !strings.Contains(res.Content, told) || !strings.Contains(res.Content, "released (operator)") {
		t.Fatalf("the held call's result %q, want the notice", res.Content)
	}
	t.Logf("the held call's result as the model saw it (request %d):\n%s", n, res.Content)
	if r, _ := model.FirstWithText(told); r.N != n {
		t.Errorf("first told in request %d, the held call's result came in %d", r.N, n)
	}
	if res, _ := model.ToolResult(next.ID); strings.Contains(res.Content, told) {
		t.Error("the notice was shown again after the next call")
	}
	if e2etest.Exists(d.File(gyrumdir.NoticeFile)) {
		t.Error("lease-ended.json is still there after the agent was told")
	}
}

// Matrix point 6: `gyrum start-work T --worktree` from inside a session,
// then calls that `cd` into the worktree, as models do: the hook's cwd is
// the project, so the hook credits the lease of its agent, found through
// the agent index (the nearest agent above the hook is the native copilot
// start-work indexed). The worktree counts every hook run after the
// claim and the verdict is never unwired.
func TestWorktreeWithCdCredited(t *testing.T) {
	copilot.Require(t)
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(30*time.Second, 2*time.Second, 30*time.Second, time.Second))
	ws.Create("T-2")
	project := e2etest.NewProject(t)
	home := setupHooks(t)
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
	s := start(t, model, project, home, agenttest.Options{Env: env})
	sr := e2etest.WaitStart(t, model, claim)
	agent := s.AgentPid()
	wd, err := gyrumdir.At(wt)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.LogLoopOnFailure(t, wd)
	s.WaitOK(e2etest.SessionTimeout)

	if sr.Dir != wt || sr.WatchedPID != agent || sr.WatchedHow == "caller" {
		t.Fatalf("start-work: dir %s, watches %d (%s); want %s and the agent %d", sr.Dir, sr.WatchedPID, sr.WatchedHow, wt, agent)
	}
	if !e2etest.Exists(filepath.Join(wt, "notes.md")) {
		t.Error("the write into the worktree did not happen")
	}
	if got, want := e2etest.HookEvents(wd), int64(1+2*len(work)); got != want {
		t.Errorf("the worktree's hook-events counted %d, want %d (the claim's PostToolUse, PreToolUse and PostToolUse of %d calls)", got, want, len(work))
	}
	rec, ok, last, err := wd.ReadActivity()
	if err != nil || !ok || rec.Event != "PostToolUse" || rec.Tool != "Bash" {
		t.Errorf("the worktree's activity record %+v (ok %v, err %v), want the last call's PostToolUse", rec, ok, err)
	}
	e2etest.Poll(t, "warp's last_activity_at to reach the last call", func() bool {
		return !ws.Lease("T-2").LastActivityAt.Before(last.Add(-500 * time.Millisecond))
	})
	w.Stop()
	for _, v := range w.VerdictsHooked() {
		if v == warp.VerdictUnwired {
			t.Errorf("verdicts %v once the hook was reported: unwired while the hook fired", w.VerdictsHooked())
		}
	}
}
