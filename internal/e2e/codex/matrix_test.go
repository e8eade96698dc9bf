package codex_test

// The matrix of issue 32 under the real Codex CLI: each test drives `codex
// exec` against the scripted fake, with the real gyrum hooks (wired by
// setup, trusted as a user does), the real loop and a real warp on scaled
// timings.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// A foreground step longer than window + staleness is held: a quiet
// `sleep` of 5 s in one exec_command call (window 3 s, staleness 1 s), with
// no hook between its PreToolUse and its PostToolUse. The call's marker is
// backed by the shell Codex started for it under the watched codex, so the
// loop reports Bash in flight with fresh heartbeats, the lease never
// lapses and the verdict stays active.
func TestForegroundStepHeld(t *testing.T) {
	codex.Require(t)
	const (
		interval  = 0.2
		staleness = 1.0
		step      = 5 * time.Second
	)
	window := 3 * time.Second
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-2")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-2 --json")
	long := Shell(fmt.Sprintf("sleep %d; echo slept", int(step.Seconds())), YieldAfter(25*time.Second))
	model := agenttest.NewResponses(t, agenttest.Calls(claim), agenttest.Calls(long), agenttest.Text("Done with T-2."))
	w := e2etest.WatchTicket(t, ws, "T-2")
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	// The marker's life is the call's, PreToolUse to PostToolUse.
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(long.ID))
	e2etest.Poll(t, "the long call's marker", func() bool { return e2etest.Exists(marker) })
	st, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	pre := st.ModTime()
	e2etest.Poll(t, "the long call's PostToolUse", func() bool { return !e2etest.Exists(marker) })
	post := time.Now()
	s.WaitOK(e2etest.SessionTimeout)
	w.Stop()

	out, ok := model.ToolResult(long.ID)
	if !ok || !strings.Contains(out.Content, "slept") || !strings.Contains(out.Content, "exited with code 0") {
		t.Fatalf("the long call's output %q: it did not run to its end in one call (the premise)", out.Content)
	}
	e2etest.SkipIfLapsedBefore(t, ws, "T-2", pre)
	l := ws.Lease("T-2")
	if l.State == warp.LeaseLapsed {
		t.Errorf("the lease lapsed (%s) during a %v foreground step", l.EndReason, step)
	}
	// During the step; before it the agent thinks, which a loaded machine
	// can stretch past the scaled stall threshold (stalled is then true).
	for _, v := range w.VerdictsBetween(pre.Add(e2etest.Secs(interval)), post) {
		if v != warp.VerdictActive && v != warp.VerdictExited {
			t.Errorf("verdicts %v during the step (all: %v), want active only", w.VerdictsBetween(pre, post), w.Verdicts())
			break
		}
	}
	// The marker's whole life is quiet: no heartbeat in it is stale.
	if post.Sub(pre) < step {
		t.Errorf("PreToolUse to PostToolUse %v, want the step's %v", post.Sub(pre), step)
	}
	stepBeatsFresh(t, ws, "T-2", pre, post, staleness, interval)
}

// A denied call, then a wedge: a PreToolUse hook of the user blocks the
// call (exit 2), so gyrum's PreToolUse made its marker and no PostToolUse
// follows; then the model never answers. The marker is backed by no
// process of the call, so the loop reports stale one staleness limit
// after the call: the verdict goes active → stalled, and the lease lapses
// one window after the last activity.
func TestDeniedCallThenWedge(t *testing.T) {
	codex.Require(t)
	const (
		interval  = 0.2
		staleness = 1.0
	)
	window := 3 * time.Second
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	ws.Create("T-3")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	addBlocker(t, home, project, "BLOCK-ME")
	wireCodex(t, home, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-3 --json")
	denied := Shell("echo BLOCK-ME")
	model := agenttest.NewResponses(t, agenttest.Calls(claim), agenttest.Calls(denied), agenttest.Stall())
	w := e2etest.WatchTicket(t, ws, "T-3")
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)})
	model.WaitRequests(e2etest.SessionTimeout, "the stalled request after the denied call", func(r []agenttest.Request) bool { return len(r) >= 3 })
	out, ok := model.ToolResult(denied.ID)
	if !ok || strings.Contains(out.Content, "exited with code 0") {
		t.Fatalf("the call was not blocked: %q", out.Content)
	}
	var marker gyrumdir.Marker
	e2etest.Poll(t, "the denied call's in-flight marker", func() bool {
		ms, _ := d.InFlight()
		for _, m := range ms {
			if m.ToolUseID() == denied.ID {
				marker = m
				return true
			}
		}
		return false
	})
	began := marker.Since
	e2etest.Poll(t, "the lease to lapse", func() bool { return ws.Lease("T-3").State == warp.LeaseLapsed })
	w.Stop()
	l := ws.Lease("T-3")
	t.Logf("denied call at %s, lapsed %v later (%s); verdicts %v; heartbeats:\n%s", began.Format("15:04:05.000"),
		l.EndedAt.Sub(began).Round(time.Millisecond), l.EndReason, w.Verdicts(), e2etest.DescribeBeats(e2etest.BeatsOf(ws, "T-3"), began))
	e2etest.SkipIfLapsedBefore(t, ws, "T-3", began)
	if s.Exited() {
		t.Errorf("codex exited (%d) while the model stalled", s.Wait(time.Second))
	}
	if vs := w.Verdicts(); len(vs) != 2 || vs[0] != warp.VerdictActive || vs[1] != warp.VerdictStalled {
		t.Errorf("verdicts while held %v, want [active stalled]", vs)
	}
	if l.EndReason != warp.LapseNoActivity {
		t.Errorf("lapse reason %q, want %q", l.EndReason, warp.LapseNoActivity)
	}
	if limit := e2etest.Secs(staleness) + window + e2etest.SweepEvery + time.Second; l.EndedAt.Sub(began) > limit {
		t.Errorf("lapsed %v after the denied call, want within staleness + window + a sweep (%v)", l.EndedAt.Sub(began), limit)
	}
	if ms, _ := d.InFlight(); len(ms) == 0 {
		t.Error("the denied call's marker is gone: the premise (PreToolUse without PostToolUse) does not hold")
	}
	s.Kill()
}

// addBlocker writes a user PreToolUse hook into home's hooks.json that
// blocks (exit 2, reason on stderr) every call whose payload holds word;
// setup then merges gyrum's hooks into the same file.
func addBlocker(t *testing.T, home agenttest.Home, project, word string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "blocker.sh")
	body := "#!/bin/sh\nif grep -q " + shellquote.Quote(word) + "; then echo 'blocked by policy' >&2; exit 2; fi\nexit 0\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "",
		"hooks": []any{map[string]any{"type": "command", "command": script, "timeout": 5}}}}}}
	data, _ := json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(filepath.Join(home.Config, "hooks.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An operator releases the lease while the agent works (a held call): the
// loop's next heartbeat gets 410, it writes lease-ended.json and exits;
// the held call's PostToolUse hook gives the notice to Codex, and the next
// request shows the model "gyrum: your lease on ticket T-4 … was released
// (operator)", once.
func TestOperatorReleaseToldOnNextCall(t *testing.T) {
	codex.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-4")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	wireCodex(t, home, project)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")

	claim := claimCall("T-4 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	next := Shell("echo next")
	model := agenttest.NewResponses(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Calls(next), agenttest.Text("Stopping."))
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
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
	out, _ := model.ToolResult(held.ID)
	if out.Request != r.N {
		t.Errorf("the notice first came in request %d, the held call's output in %d", r.N, out.Request)
	}
	var shown []string
	for _, it := range r.Messages {
		if strings.Contains(it.Text(), told) {
			shown = append(shown, fmt.Sprintf("%s: %s", it.Role, it.Text()))
		}
	}
	t.Logf("shown in request %d as:\n%s", r.N, strings.Join(shown, "\n"))
	want := fmt.Sprintf("gyrum: your lease on ticket T-4 (epoch %d) was released (operator)", sr.Epoch)
	if len(shown) != 1 || !strings.Contains(shown[0], want) || !strings.Contains(shown[0], "Stop working on T-4") {
		t.Errorf("the request shows %q, want %q and what to do, once", shown, want)
	}
	// Told once: the last request holds it once, the next call brought
	// nothing more.
	last := model.MainRequests()[len(model.MainRequests())-1]
	n := 0
	for _, it := range last.Messages {
		n += strings.Count(it.Text(), told)
	}
	if n != 1 {
		t.Errorf("the last request shows %q %d times, want once", told, n)
	}
	if e2etest.Exists(d.File(gyrumdir.NoticeFile)) {
		t.Error("lease-ended.json is still there after the agent was told")
	}
}
