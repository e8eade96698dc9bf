package codex_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// startDaemon runs `codex app-server daemon start` in home with env (the
// environment the daemon keeps for every session it serves) and stops it,
// and its pid-update-loop helper, when the test ends.
func startDaemon(t *testing.T, home agenttest.Home, env map[string]string) (tag string) {
	t.Helper()
	tag = agenttest.TagVar + "=daemon-" + filepath.Base(t.TempDir())
	e := codex.Env(home, env)
	e = append(e, tag)
	cmd := exec.Command(codex.Require(t), "app-server", "daemon", "start")
	cmd.Env = e
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex app-server daemon start: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		stop := exec.Command(codex.Require(t), "app-server", "daemon", "stop")
		stop.Env = e
		_ = stop.Run()
		for range 5 {
			pids := agenttest.Tagged(tag)
			if len(pids) == 0 {
				return
			}
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return tag
}

// The interactive app on Codex's app-server daemon (its default once the
// daemon runs, when the provider comes from config.toml: with -c overrides
// on its command line 0.169.0's TUI runs its threads in process instead): the tool shells are the daemon's children, and the daemon
// keeps the environment of whoever started it — here a WARP_URL naming
// another warp. start-work must watch the TUI (the daemon's one Unix
// client), take the session's environment from it, and the lease must end
// `exited` within a tick of the user quitting, while the daemon lives on.
func TestInteractiveOnDaemon(t *testing.T) {
	codex.Require(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script (util-linux) is needed to give the TUI a terminal")
	}
	const interval = 0.2
	ws := warptest.Start(t)
	other := warptest.Start(t) // the daemon's inherited WARP_URL
	ws.Create("T-1")
	other.Create("T-1")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)

	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	claim := claimCall("T-1 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo worked")
	model := agenttest.NewResponses(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Text("Done with T-1.")).OneThread()
	trustProject(t, home, project, model)
	tag := startDaemon(t, home, e2etest.AgentEnv(t, other.URL(), interval, 30, 60))
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Terminal: true,
		Env: e2etest.AgentEnv(t, ws.URL(), interval, 30, 60)})
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	model.WaitRequests(e2etest.SessionTimeout, "the claim's output", func(rs []agenttest.Request) bool { _, ok := model.ToolResult(claim.ID); return ok })
	sr := e2etest.StartResultOf(t, model, claim)
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })

	tui := s.AgentPid()
	if sr.WatchedHow != "app-server-client" || sr.WatchedPID != tui {
		t.Fatalf("start-work watches pid %d %q (%s); want the TUI %d as app-server-client\n%s",
			sr.WatchedPID, sr.Watched, sr.WatchedHow, tui, s.TreeString())
	}
	if v := ws.Ticket("T-1"); v.Lease == nil {
		t.Errorf("T-1 on the session's warp holds no lease")
	}
	if v := other.Ticket("T-1"); v.Lease != nil {
		t.Errorf("T-1 was claimed on the daemon's inherited WARP_URL %s", other.URL())
	}
	// The session ends (its TUI killed) while the call runs on the daemon:
	// the lease ends exited within a tick.
	s.Kill()
	quit := time.Now()
	e2etest.Poll(t, "the verdict exited", func() bool { return ws.Ticket("T-1").Verdict == warp.VerdictExited })
	t.Logf("verdict exited %s after the TUI quit", time.Since(quit).Round(time.Millisecond))
	if !e2etest.Alive(daemonPid(tag)) {
		t.Errorf("the daemon did not outlive the session (the test proves nothing about it)")
	}
	_ = os.WriteFile(release, nil, 0o644)
}

// daemonPid is the pid of the app-server daemon started with tag.
func daemonPid(tag string) int {
	for _, p := range agenttest.Tagged(tag) {
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if strings.Contains(string(cmd), "--managed-daemon") {
			return p
		}
	}
	return 0
}

// trustProject records project as trusted in home's config.toml, as the
// TUI's "Trust this folder?" answer does, so the TUI starts on its prompt.
func trustProject(t *testing.T, home agenttest.Home, project string, model *agenttest.FakeModel) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(home.Config, "config.toml"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "model_provider = \"agenttest\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n[model_providers.agenttest]\nname = \"agenttest\"\nbase_url = %q\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n\n[projects.%q]\ntrust_level = \"trusted\"\n", model.URL()+"/v1", project); err != nil {
		t.Fatal(err)
	}
}

// A quiet foreground step on the daemon is held like one in process: the
// step's shell is the daemon's child, not the TUI's, and the hooks run
// under the daemon (with its environment: here the same GYRUM_HOME, as
// sessions of one user share it, and another warp's WARP_URL). The call's
// marker must be backed by that shell, so the lease stays active through
// a quiet `sleep` longer than window + staleness.
func TestDaemonQuietStepHeld(t *testing.T) {
	codex.Require(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script (util-linux) is needed to give the TUI a terminal")
	}
	const (
		interval  = 0.2
		staleness = 1.0
		step      = 5 * time.Second
	)
	window := 3 * time.Second
	ws := warptest.StartWithPolicy(t, e2etest.ScaledPolicy(window, time.Second, 30*time.Second, time.Second))
	e2etest.StartSweeps(t, ws.Svc)
	other := warptest.Start(t)
	ws.Create("T-1")
	project := e2etest.NewProject(t)
	home := codex.NewHome(t)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)

	claim := claimCall("T-1 --json")
	long := Shell(fmt.Sprintf("sleep %d; echo slept", int(step.Seconds())), YieldAfter(25*time.Second))
	model := agenttest.NewResponses(t, agenttest.Calls(claim), agenttest.Calls(long), agenttest.Text("Done with T-1.")).OneThread()
	trustProject(t, home, project, model)
	wireCodex(t, home, project)
	env := e2etest.AgentEnv(t, ws.URL(), interval, staleness, 60)
	daemonEnv := maps.Clone(env)
	daemonEnv["WARP_URL"] = other.URL()
	startDaemon(t, home, daemonEnv)
	w := e2etest.WatchTicket(t, ws, "T-1")
	s := codex.Start(t, model, agenttest.Options{Dir: project, Home: home, Terminal: true, Env: env})
	model.WaitRequests(e2etest.SessionTimeout, "the claim's output", func(rs []agenttest.Request) bool { _, ok := model.ToolResult(claim.ID); return ok })
	if sr := e2etest.StartResultOf(t, model, claim); sr.WatchedHow != "app-server-client" || sr.WatchedPID != s.AgentPid() {
		t.Fatalf("start-work watches pid %d (%s); want the TUI %d as app-server-client", sr.WatchedPID, sr.WatchedHow, s.AgentPid())
	}
	marker := filepath.Join(d.Path, gyrumdir.InFlightDir, gyrumdir.MarkerName(long.ID))
	e2etest.Poll(t, "the long call's marker", func() bool { return e2etest.Exists(marker) })
	st, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	pre := st.ModTime()
	e2etest.Poll(t, "the long call's PostToolUse", func() bool { return !e2etest.Exists(marker) })
	post := time.Now()
	model.WaitRequests(e2etest.SessionTimeout, "the long call's output", func(rs []agenttest.Request) bool { _, ok := model.ToolResult(long.ID); return ok })
	w.Stop()

	if out, _ := model.ToolResult(long.ID); !strings.Contains(out.Content, "slept") {
		t.Fatalf("the long call's output %q: it did not run to its end in one call (the premise)", out.Content)
	}
	if l := ws.Lease("T-1"); l.State == warp.LeaseLapsed {
		t.Errorf("the lease lapsed (%s) during a %v foreground step on the daemon", l.EndReason, step)
	}
	for _, v := range w.Verdicts() {
		if v != warp.VerdictActive {
			t.Errorf("verdicts %v during the step, want active only", w.Verdicts())
			break
		}
	}
	stepBeatsFresh(t, ws, "T-1", pre, post, staleness, interval)
}
