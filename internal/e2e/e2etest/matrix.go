package e2etest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Interval is the loop's scaled tick in the matrix, in seconds.
const Interval = 0.2

// Matrix is the part of issue 42's matrix every agent CLI passes the
// same way: a quiet foreground step held, a wedged model lapsing, an
// operator's release told in the held call's result, and a worktree made
// from inside the session credited through the agent index. Each suite
// describes its agent once (how to start it, its shell tool, how
// start-work finds it, its timings) and runs the four tests from it.
type Matrix struct {
	// Name is the CLI as the messages name it ("opencode").
	Name string
	// Agent is the CLI as the harness runs it; a test skips (or, under
	// CI, fails) without it.
	Agent *agenttest.Agent
	// NewModel is the fake model server of the CLI's API shape
	// (agenttest.NewChat, ...).
	NewModel func(testing.TB, ...agenttest.Turn) *agenttest.FakeModel
	// Start runs the CLI in project against model with gyrum wired in as
	// a user would (its setup's hooks or plugin), o's Dir set to project.
	Start func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session
	// Shell is a call of the CLI's shell tool running command; ShellTool
	// is that tool's name as the hook records it ("bash", "Bash").
	Shell     func(command string) agenttest.Call
	ShellTool string
	// WatchedHow is how start-work finds the agent above the call's
	// shell ("OPENCODE_PID", "ancestor").
	WatchedHow string
	// ReliableOutput: the call's result always carries the command's
	// output (Qwen Code's came back empty once on a loaded machine).
	ReliableOutput bool
	// Staleness (seconds), Window and Stall are the scaled timings of
	// the wedge: the CLI's thinking between calls must fit within
	// staleness + window, or the lease lapses while it thinks, truthfully.
	Staleness float64
	Window    time.Duration
	Stall     time.Duration
	// Step is the quiet foreground step's timings.
	Step StepTiming
	// Launcher: the process the harness starts is a launcher, and the
	// agent start-work must watch is a process below it.
	Launcher bool
	// Marker is how the hook names a call's in-flight marker under this
	// CLI.
	Marker MarkerNaming
	// Offline, when set, is text on the CLI's stderr that says the
	// session fetched something: the baseline fails on it.
	Offline string
	// Plugin is set for an agent gyrum wires with a plugin file of its
	// own (opencode, Kilo, pi): PluginSetupDoctorUninstall and
	// FailingToolCall run from it.
	Plugin *Plugin
}

// MarkerNaming is how a CLI's calls name their in-flight markers.
type MarkerNaming int

const (
	// MarkerCallID: the hook gets the model's call id.
	MarkerCallID MarkerNaming = iota
	// MarkerOwnID: the CLI gives the call an id of its own.
	MarkerOwnID
	// MarkerInput: no id at all; the marker is named by the call's input.
	MarkerInput
)

// StepTiming is the quiet step's staleness (seconds, also warp's stall
// threshold) and window, and the step's length (seconds, longer than
// both together).
type StepTiming struct {
	Staleness float64
	Window    time.Duration
	Quiet     float64
}

// ClaimCall is a shell call running `gyrum start-work ARGS`.
func (m *Matrix) ClaimCall(args string) agenttest.Call {
	return m.Shell(shellquote.Quote(gyrumBin) + " start-work " + args)
}

// session starts the CLI, in project, with the env of a loop of the given
// staleness and in-flight cap.
func (m *Matrix) session(t *testing.T, ws *warptest.Server, model *agenttest.FakeModel, project string, staleness, inFlightMax float64, extra map[string]string) *agenttest.Session {
	t.Helper()
	env := AgentEnv(t, ws.URL(), Interval, staleness, inFlightMax)
	for k, v := range extra {
		env[k] = v
	}
	return m.Start(t, model, project, agenttest.Options{Env: env})
}

// ForegroundStepHeld: a quiet foreground call longer than window +
// staleness is held. The call's shell is a child of the watched agent
// and backs the marker the hook's PreToolUse left, so every heartbeat
// through it is fresh and most name the call; no exit is reported while
// the agent lives; when the session ends the exit is reported and the
// verdict is exited (or, when the agent idled past staleness + window on
// its way out, the lease lapsed for that, truthfully).
func (m *Matrix) ForegroundStepHeld(t *testing.T) {
	m.Agent.Require(t)
	st := m.Step
	ws := warptest.StartWithPolicy(t, ScaledPolicy(st.Window, Secs(st.Staleness), 30*time.Second, time.Second))
	StartSweeps(t, ws.Svc)
	ws.Create("T-1")
	project := NewProject(t)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)
	started := filepath.Join(t.TempDir(), "started")
	claim := m.ClaimCall("T-1 --json")
	step := m.Shell(fmt.Sprintf("touch %s; sleep %g; echo slept", shellquote.Quote(started), st.Quiet))
	model := m.NewModel(t, agenttest.Calls(claim), agenttest.Calls(step), agenttest.Text("Done."))
	w := WatchTicket(t, ws, "T-1")
	s := m.session(t, ws, model, project, st.Staleness, 60, nil)
	agenttest.Poll(t, SessionTimeout, "the quiet step to start", func() bool { return Exists(started) })
	agent := s.AgentPid()
	alive := lastAlive(t, agent)
	from := time.Now()
	SkipIfLapsedBefore(t, ws, "T-1", from)
	s.WaitOK(SessionTimeout)
	to := from.Add(Secs(st.Quiet) - 300*time.Millisecond)

	if sr := StartResultOf(t, model, claim); sr.WatchedPID != agent || sr.WatchedHow != m.WatchedHow {
		t.Errorf("start-work watches %d (%s); want %s %d through %s", sr.WatchedPID, sr.WatchedHow, m.Name, agent, m.WatchedHow)
	}
	m.quietHeld(t, ws, "T-1", from.Add(Secs(st.Staleness)), to)
	// Not s.Ended(): the harness sees the exit after the loop may have
	// (and an agent under a launcher exits before it).
	noExitReportBefore(t, ws, "T-1", alive())
	if res, _ := model.ToolResult(step.ID); m.ReliableOutput && !strings.Contains(res.Content, "slept") {
		t.Errorf("the step's result %q", res.Content)
	}
	if l := ws.Lease("T-1"); l.State == warp.LeaseLapsed && l.EndReason == warp.LapseNoActivity {
		last, _ := d.LastActivity()
		if l.EndedAt.Before(last.Add(Secs(st.Staleness))) {
			t.Fatalf("the lease lapsed %v after the last call", l.EndedAt.Sub(last))
		}
		t.Logf("the agent idled on its way out: the lease lapsed %v after its last call", l.EndedAt.Sub(last).Round(time.Millisecond))
	} else {
		ParentExitedAt(t, ws, "T-1", "")
		Poll(t, "the verdict exited", func() bool { return ws.Ticket("T-1").Verdict == warp.VerdictExited })
	}
	w.Stop()
	HeldActiveThroughTheCalls(t, w, d, from, st.Staleness)
}

// quietHeld checks that the lease of ticket was held, fresh, through
// [from, to]: every heartbeat in it is fresh, and most name the shell
// tool in flight.
func (m *Matrix) quietHeld(t *testing.T, ws *warptest.Server, ticket string, from, to time.Time) {
	t.Helper()
	n, named := 0, 0
	for _, b := range BeatsOf(ws, ticket) {
		if b.At.Before(from) || b.At.After(to) {
			continue
		}
		n++
		if b.Body.Stale {
			t.Errorf("heartbeat %v into the call is stale; want fresh, %s in flight:\n%s",
				b.At.Sub(from).Round(time.Millisecond), m.ShellTool, DescribeBeats(BeatsOf(ws, ticket), from))
			return
		}
		// A tick whose evidence is fresh from the agent's own busy
		// processes (Kilo's git snapshots during the call) does not
		// sample the call's backing, and names those processes: fresh
		// all the same.
		if b.Body.InFlight == m.ShellTool {
			named++
		} else if b.Body.InFlight != "" && !strings.HasPrefix(b.Body.InFlight, heartbeat.BackgroundPrefix) {
			t.Errorf("heartbeat %v into the call names %q in flight; want %s", b.At.Sub(from).Round(time.Millisecond), b.Body.InFlight, m.ShellTool)
		}
	}
	if n < 5 || named*2 < n {
		t.Errorf("%d heartbeats during the call, %d naming it; want one a tick, most naming it:\n%s", n, named, DescribeBeats(BeatsOf(ws, ticket), from))
	}
}

// HeldActiveThroughTheCalls checks the verdicts from from, when the calls
// under test began, until a staleness limit after the last tool call ended
// (the last-activity record): active only, or exited last. Before from the
// agent thinks, and after the last call it is idle on its way out, which a
// loaded machine can stretch past the scaled stall threshold: stalled is
// then the truth.
func HeldActiveThroughTheCalls(t *testing.T, w *Watcher, d gyrumdir.Dir, from time.Time, staleness float64) {
	t.Helper()
	last, err := d.LastActivity()
	if err != nil {
		t.Fatalf("the last tool call's time: %v", err)
	}
	vs := w.VerdictsBetween(from, last.Add(Secs(staleness)))
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
	for _, b := range BeatsOf(ws, ticket) {
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
			if !Alive(pid) {
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

// WedgeLapses: the model wedges (the API never answers) after the claim.
// The agent is alive, waiting on its model, and does no work: the lease
// goes stalled and then lapses within staleness + window + a sweep, no
// exit is reported, and the agent's own process, waiting on the API, is
// never credited as its background work.
func (m *Matrix) WedgeLapses(t *testing.T) {
	m.Agent.Require(t)
	ws := warptest.StartWithPolicy(t, ScaledPolicy(m.Window, m.Stall, 30*time.Second, time.Second))
	StartSweeps(t, ws.Svc)
	ws.Create("T-1")
	project := NewProject(t)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)

	claim := m.ClaimCall("T-1 --json")
	model := m.NewModel(t, agenttest.Calls(claim), agenttest.Stall())
	w := WatchTicket(t, ws, "T-1")
	s := m.session(t, ws, model, project, m.Staleness, 60, nil)
	model.WaitRequests(SessionTimeout, "the stalled request after the claim", func([]agenttest.Request) bool {
		_, ok := model.ToolResult(claim.ID)
		return ok
	})
	wedged := time.Now()
	Poll(t, "the lease to lapse", func() bool { return ws.Lease("T-1").State == warp.LeaseLapsed })
	l := ws.Lease("T-1")
	bs := BeatsOf(ws, "T-1")
	t.Logf("lapsed %v after the wedge (%s); heartbeats:\n%s", l.EndedAt.Sub(wedged).Round(time.Millisecond), l.EndReason, DescribeBeats(bs, wedged))
	if s.Exited() {
		t.Fatalf("%s exited (%d) while the model stalled", m.Name, s.Wait(time.Second))
	}
	if limit := Secs(m.Staleness) + m.Window + SweepEvery + time.Second; l.EndedAt.Sub(wedged) > limit {
		t.Errorf("lapsed %v after the wedge, want within staleness + window + a sweep (%v)", l.EndedAt.Sub(wedged), limit)
	}
	if l.EndReason != warp.LapseNoActivity {
		t.Errorf("lapse reason %q, want %q", l.EndReason, warp.LapseNoActivity)
	}
	for _, b := range bs {
		if b.At.Before(wedged) {
			continue // before the wedge the agent may work (Kilo snapshots with git)
		}
		if strings.HasPrefix(b.Body.InFlight, "background") {
			t.Errorf("heartbeat %v after the wedge credits %q: the agent's own process", b.At.Sub(wedged).Round(time.Millisecond), b.Body.InFlight)
			break
		}
		if b.Body.Exit != "" {
			t.Errorf("heartbeat %v after the wedge reports exit %q while %s runs", b.At.Sub(wedged).Round(time.Millisecond), b.Body.Exit, m.Name)
		}
	}
	w.Stop()
	if vs := w.Verdicts(); len(vs) == 0 || vs[len(vs)-1] != warp.VerdictStalled {
		t.Errorf("verdicts while held %v, want to end stalled", vs)
	}
}

// OperatorReleaseTold: an operator releases the lease while a call runs.
// The loop's next POST gets 410 and leaves the notice; the call's end
// runs the hook, which hands it to the CLI in the form it reads, and the
// CLI puts it in the held call's result: the model is told on its next
// request, once, and the notice is gone.
func (m *Matrix) OperatorReleaseTold(t *testing.T) {
	m.Agent.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-4")
	project := NewProject(t)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := m.ClaimCall("T-4 --json")
	held := m.Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	next := m.Shell("echo next")
	model := m.NewModel(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Calls(next), agenttest.Text("Stopping."))
	s := m.session(t, ws, model, project, 30, 60, nil)
	agenttest.Poll(t, SessionTimeout, "the held call to start", func() bool { return Exists(started) })
	sr := StartResultOf(t, model, claim)
	const told = "your lease on ticket T-4"
	if model.SawText(told) {
		t.Fatal("the model was told before the lease ended")
	}
	if _, err := ws.Svc.Release(context.Background(), "T-4", sr.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	Poll(t, "the loop's lease-ended notice", func() bool { return Exists(d.File(gyrumdir.NoticeFile)) })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(SessionTimeout)

	res, ok := model.ToolResult(held.ID)
	if !ok || !strings.Contains(res.Content, told) || !strings.Contains(res.Content, "released (operator)") ||
		m.ReliableOutput && !strings.Contains(res.Content, "held-done") {
		t.Fatalf("the held call's result %q, want the notice (and its output)", res.Content)
	}
	t.Logf("the held call's result as the model saw it (request %d):\n%s", res.Request, res.Content)
	if r, _ := model.FirstWithText(told); r.N != res.Request {
		t.Errorf("first told in request %d, the held call's result came in %d", r.N, res.Request)
	}
	if res, _ := model.ToolResult(next.ID); strings.Contains(res.Content, told) {
		t.Error("the notice was shown again after the next call")
	}
	if Exists(d.File(gyrumdir.NoticeFile)) {
		t.Error("lease-ended.json is still there after the agent was told")
	}
}

// WorktreeWithCdCredited: `gyrum start-work T --worktree` from inside a
// session, then calls that `cd` into the worktree, as models do. The
// hook's cwd is the project, so it credits the lease of its agent, found
// through the agent index. The worktree counts every hook run after the
// claim, warp's last_activity_at follows the calls, and the verdict is
// never unwired once the hook was reported.
func (m *Matrix) WorktreeWithCdCredited(t *testing.T) {
	m.Agent.Require(t)
	ws := warptest.StartWithPolicy(t, ScaledPolicy(30*time.Second, 2*time.Second, 30*time.Second, time.Second))
	ws.Create("T-2")
	project := NewProject(t)
	root := t.TempDir()
	wt := filepath.Join(root, filepath.Base(project)+"-T-2")
	q := shellquote.Quote(wt)
	claim := m.ClaimCall("T-2 --worktree --json")
	work := []agenttest.Call{
		m.Shell("cd " + q + " && echo '# T-2' > notes.md"),
		m.Shell("cd " + q + " && sleep 1 && echo one"),
		m.Shell("cd " + q + " && sleep 1 && echo two"),
	}
	turns := []agenttest.Turn{agenttest.Calls(claim)}
	for _, c := range work {
		turns = append(turns, agenttest.Calls(c))
	}
	model := m.NewModel(t, append(turns, agenttest.Text("Done with T-2."))...)
	w := WatchTicket(t, ws, "T-2")
	s := m.session(t, ws, model, project, 30, 1, map[string]string{"GYRUM_WORKTREE_ROOT": root})
	sr := WaitStart(t, model, claim)
	agent := s.AgentPid()
	wd, err := gyrumdir.At(wt)
	if err != nil {
		t.Fatal(err)
	}
	LogLoopOnFailure(t, wd)
	s.WaitOK(SessionTimeout)

	if sr.Dir != wt || sr.WatchedPID != agent || sr.WatchedHow != m.WatchedHow {
		t.Fatalf("start-work: dir %s, watches %d (%s); want %s and %s %d through %s", sr.Dir, sr.WatchedPID, sr.WatchedHow, wt, m.Name, agent, m.WatchedHow)
	}
	if Exists(filepath.Join(project, gyrumdir.DirName)) {
		t.Error("the project got a .gyrum/: the claim was not made in the worktree only")
	}
	if !Exists(filepath.Join(wt, "notes.md")) {
		t.Error("the write into the worktree did not happen")
	}
	if got, want := HookEvents(wd), int64(1+2*len(work)); got != want {
		t.Errorf("the worktree's hook-events counted %d, want %d (the claim's PostToolUse, PreToolUse and PostToolUse of %d calls)", got, want, len(work))
	}
	rec, ok, last, err := wd.ReadActivity()
	if err != nil || !ok || rec.Event != "PostToolUse" || rec.Tool != m.ShellTool {
		t.Errorf("the worktree's activity record %+v (ok %v, err %v), want the last call's PostToolUse", rec, ok, err)
	}
	Poll(t, "warp's last_activity_at to reach the last call", func() bool {
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

// doctorChecks runs the real `gyrum doctor --json` in dir with env and
// returns its checks by name.
func doctorChecks(t *testing.T, dir string, env map[string]string) map[string]struct{ Status, Detail string } {
	t.Helper()
	out, _, _ := GyrumCode(t, dir, env, "doctor", "--json")
	var rep struct {
		Checks []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	m := map[string]struct{ Status, Detail string }{}
	for _, c := range rep.Checks {
		m[c.Name] = struct{ Status, Detail string }{c.Status, c.Detail}
	}
	return m
}

// PluginSetupDoctorUninstall: `gyrum setup --agents NAME` writes gyrum's
// plugin at the user's scope, `gyrum doctor` finds it current and runs the
// hook it names, an edited plugin fails doctor's check and setup backs it
// up before writing its own again, and `gyrum setup --uninstall --agents
// NAME` removes it (and the directory it alone filled, not one the user's
// backup is in), after which doctor has nothing of it to check.
func (m *Matrix) PluginSetupDoctorUninstall(t *testing.T) {
	m.Agent.Require(t)
	h := m.Plugin.Home(t)
	a, _ := agent.ByFlag(m.Name)
	path := filepath.Join(m.Plugin.Dir(h), a.Hooks.File)
	check := m.Name + "-plugin"
	env := map[string]string{"HOME": h.Dir, "GYRUM_HOME": filepath.Join(h.Dir, ".gyrum"), "WARP_URL": "http://127.0.0.1:9"}
	c := doctorChecks(t, h.Dir, env)[check]
	if c.Status != "ok" || !strings.Contains(c.Detail, path) || !strings.Contains(c.Detail, "gyrum-hook") {
		t.Errorf("doctor's %s check %+v, want ok naming %s and gyrum-hook", check, c, path)
	}
	if r := doctorChecks(t, h.Dir, env)["hook-run"]; r.Status != "ok" {
		t.Errorf("doctor's hook-run %+v", r)
	}

	// Edited: doctor says so.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, append(data, "// edited\n"...), 0o644)
	if c := doctorChecks(t, h.Dir, env)[check]; c.Status != "fail" || !strings.Contains(c.Detail, "differs") {
		t.Errorf("doctor's check of an edited plugin %+v, want fail", c)
	}
	Gyrum(t, h.Dir, env, "setup", "--agents", m.Name, "--watchdog", "none")

	baks, _ := filepath.Glob(path + ".bak-*")
	if len(baks) != 1 || !strings.HasSuffix(ReadFile(baks[0]), "// edited\n") {
		t.Errorf("backups %v, want the edited file's", baks)
	}
	out := Gyrum(t, h.Dir, env, "setup", "--uninstall", "--agents", m.Name, "--watchdog", "none")
	if Exists(path) {
		t.Errorf("%s left after --uninstall:\n%s", path, out)
	}
	// The backup is the user's: it stays, and so does its directory.
	for _, b := range baks {
		os.Remove(b)
	}
	Gyrum(t, h.Dir, env, "setup", "--agents", m.Name, "--watchdog", "none")
	Gyrum(t, h.Dir, env, "setup", "--uninstall", "--agents", m.Name, "--watchdog", "none")
	if Exists(filepath.Dir(path)) {
		t.Errorf("%s left empty after --uninstall", filepath.Dir(path))
	}
	if _, ok := doctorChecks(t, h.Dir, env)[check]; ok {
		t.Errorf("doctor checks a %s plugin after --uninstall", m.Name)
	}
}

// FailingToolCall: a call that fails in the tool itself (a read of a file
// that does not exist) still reaches the hook, as PostToolUseFailure: the
// call's marker goes, and the failure is the last activity.
func (m *Matrix) FailingToolCall(t *testing.T) {
	m.Agent.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-3")
	project := NewProject(t)
	d, _ := gyrumdir.At(project)
	LogLoopOnFailure(t, d)
	claim := m.ClaimCall("T-3 --json")
	bad := m.Plugin.FailingRead(filepath.Join(project, "no-such-file"))
	model := m.NewModel(t, agenttest.Calls(claim), agenttest.Calls(bad), agenttest.Text("Done."))
	s := m.session(t, ws, model, project, 30, 60, nil)
	s.WaitOK(SessionTimeout)
	res, _ := model.ToolResult(bad.ID)
	if !strings.Contains(res.Content, m.Plugin.FailureText) {
		t.Errorf("the read's result %q, want its failure (%q)", res.Content, m.Plugin.FailureText)
	}
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("markers left after the failed call: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Event != "PostToolUseFailure" || rec.Tool != bad.Name {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUseFailure/%s", rec, ok, err, bad.Name)
	}
	// The claim's PostToolUse, the read's PreToolUse and its failure.
	if n := HookEvents(d); n != 3 {
		t.Errorf("hook-events holds %d events, want 3", n)
	}
}

// Baseline: the whole agent side under the real CLI. gyrum is wired as
// its setup does, the agent claims its ticket from inside a shell call,
// works (a held call) and ends. start-work watches the agent (below its
// launcher, if any); the call's PreToolUse leaves a marker while it runs
// and the loop reports it in flight; PostToolUse removes it and records
// the activity; the verdict is active throughout; when the session ends
// the loop reports parent-exited within a tick, never before the agent's
// last model request, the verdict is exited, and nothing is left behind.
func (m *Matrix) Baseline(t *testing.T) {
	m.Agent.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-1")
	project := NewProject(t)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := m.ClaimCall("T-1 --json")
	held := m.Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo worked")
	model := m.NewModel(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Text("Done with T-1."))
	w := WatchTicket(t, ws, "T-1")
	s := m.session(t, ws, model, project, 30, 60, nil)
	d, err := gyrumdir.At(project)
	if err != nil {
		t.Fatal(err)
	}
	LogLoopOnFailure(t, d)
	agenttest.Poll(t, SessionTimeout, "the held call to start", func() bool { return Exists(started) })

	sr := StartResultOf(t, model, claim)
	agent := s.AgentPid()
	if m.Launcher && (agent == 0 || agent == s.Pid()) {
		t.Fatalf("no %s process below the launcher %d (agent %d):\n%s", m.Name, s.Pid(), agent, s.TreeString())
	}
	if sr.WatchedPID != agent || sr.WatchedHow != m.WatchedHow || sr.Watched != m.Name || sr.Dir != project {
		t.Errorf("start-work watches %d (%s, %s) in %s; want %s %d (the launcher is %d) through %s, in %s:\n%s",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, sr.Dir, m.Name, agent, s.Pid(), m.WatchedHow, project, s.TreeString())
	}
	ms, _ := d.InFlight()
	named := len(ms) == 1 && ms[0].Tool == m.ShellTool
	switch m.Marker {
	case MarkerCallID:
		named = named && ms[0].Name == held.ID
	case MarkerOwnID:
		named = named && ms[0].Name != "" && !strings.HasPrefix(ms[0].Name, "input-")
	case MarkerInput:
		named = named && strings.HasPrefix(ms[0].Name, "input-")
	}
	if !named {
		t.Errorf("in-flight markers while the call runs %+v, want one %s marker named as the CLI names its calls (%d; the model's id %s)", ms, m.ShellTool, m.Marker, held.ID)
	}
	Poll(t, "a heartbeat reporting "+m.ShellTool+" in flight", func() bool {
		for _, b := range BeatsOf(ws, "T-1") {
			if b.Body.InFlight == m.ShellTool && !b.Body.Stale {
				return true
			}
		}
		return false
	})
	if v := ws.Ticket("T-1"); v.Verdict != warp.VerdictActive {
		t.Errorf("verdict %q while the agent works, want active", v.Verdict)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(SessionTimeout)
	ended := s.Ended()

	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Errorf("in-flight markers left: %+v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUse" || rec.Tool != m.ShellTool {
		t.Errorf("activity record %+v (ok %v, err %v), want hook/PostToolUse/%s", rec, ok, err, m.ShellTool)
	}
	// One byte per hook run once .gyrum/ exists: the claim's PostToolUse,
	// then PreToolUse and PostToolUse of the held call.
	if n := HookEvents(d); n != 3 {
		t.Errorf("hook-events holds %d events, want 3", n)
	}
	if m.Offline != "" && strings.Contains(s.Stderr(), m.Offline) {
		t.Errorf("%s's stderr says %q: the session was not offline", m.Name, m.Offline)
	}
	at := ParentExitedAt(t, ws, "T-1", "")
	// ended is the launcher's exit, which follows the agent's.
	t.Logf("parent-exited reported %v after the CLI exited", at.Sub(ended).Round(time.Millisecond))
	if lag := at.Sub(ended); lag > Secs(Interval*1.1)+time.Second {
		t.Errorf("parent-exited reported %v after the exit, want within a tick (±10 %%) and a POST", lag)
	}
	// The agent below a launcher exits a little before it, so the report
	// may come before s.Ended(); but never while the agent still worked:
	// not before its last model request.
	reqs := model.Requests()
	last := reqs[len(reqs)-1].At
	for _, b := range BeatsOf(ws, "T-1") {
		if b.Body.Exit != "" && b.At.Before(last) {
			t.Errorf("exit report %q %v before the agent's last model request: a false exit report", b.Body.Exit, last.Sub(b.At))
		}
	}
	if v := ws.Ticket("T-1"); v.Verdict != warp.VerdictExited {
		t.Errorf("verdict %q after the session ended, want exited", v.Verdict)
	}
	Poll(t, "the loop to exit", func() bool { return !Exists(d.File(gyrumdir.LoopPIDFile)) })
	Poll(t, "nothing of the session left running", func() bool { return len(s.Leftovers()) == 0 })
	w.Stop()
	if len(w.VerdictsHooked()) == 0 {
		t.Errorf("verdicts %v: the loop never reported the hook", w.Verdicts())
	}
	for _, v := range w.VerdictsHooked() {
		if v != warp.VerdictActive && v != warp.VerdictExited {
			t.Errorf("verdicts %v once the hook was reported: %s while the agent worked", w.VerdictsHooked(), v)
			break
		}
	}
	if res, _ := model.ToolResult(held.ID); m.ReliableOutput && !strings.Contains(res.Content, "worked") {
		t.Errorf("held call's result %q", res.Content)
	}
}
