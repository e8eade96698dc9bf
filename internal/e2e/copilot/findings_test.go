package copilot_test

// What GitHub Copilot CLI does where gyrum's wiring is not what setup
// writes for the user, measured (docs/agents/copilot-cli.md).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// A repository's hooks (gyrum setup --project --agents copilot writes
// .github/hooks/gyrum.json) do not run in prompt mode until the user
// trusts the folder: the claim and a call leave hook-events empty. Once
// the folder is in trustedFolders of ~/.copilot/config.json they run —
// and so do the Claude Code hooks setup --project always writes into
// .claude/settings.json, which Copilot reads too: each event runs the hook
// twice (once with --agent copilot, once without), a call is still one
// marker's life, and the notice is printed by whichever run takes it
// first.
func TestRepositoryHooksNeedTrust(t *testing.T) {
	copilot.Require(t)
	for _, c := range []struct {
		name    string
		trust   func(project string) []string
		trusted bool
	}{
		{"untrusted", func(string) []string { return nil }, false},
		{"trusted", func(p string) []string { return []string{p} }, true},
		{"parent-trusted", func(p string) []string { return []string{filepath.Dir(p)} }, true},
		{"sibling-trusted", func(p string) []string { return []string{p + "-other"} }, false},
	} {
		name, trusted := c.name, c.trusted
		t.Run(name, func(t *testing.T) {
			ws := warptest.Start(t)
			ws.Create("T-1")
			project := e2etest.NewProject(t)
			e2etest.SetupHooks(t, project, filepath.Join(".github", "hooks", "gyrum.json"), []string{"PreToolUse", "PostToolUse"}, "--agents", "copilot")
			home := copilot.NewHome(t)
			if folders := c.trust(project); folders != nil {
				data, _ := json.Marshal(map[string]any{"trustedFolders": folders})
				agenttest.WriteFile(t, filepath.Join(home.Config, "config.json"), data, 0o600)
			}
			claim := claimCall("T-1 --json")
			work := Shell("echo worked")
			model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(work), agenttest.Text("Done."))
			s := start(t, model, project, home, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
			s.WaitOK(e2etest.SessionTimeout)
			d, err := gyrumdir.At(project)
			if err != nil {
				t.Fatal(err)
			}
			n := e2etest.HookEvents(d)
			t.Logf("%s: hook-events %d after the claim and one call", name, n)
			switch {
			case !trusted && n != 0:
				t.Errorf("untrusted: the repository's hooks ran %d times, want none", n)
			case trusted && n != 6:
				// The claim's PostToolUse and the call's PreToolUse and
				// PostToolUse, each through gyrum.json and .claude/settings.json.
				t.Errorf("trusted: hook-events %d, want 6 (3 events, each run twice)", n)
			}
			if ms, _ := d.InFlight(); len(ms) != 0 {
				t.Errorf("markers left: %+v", ms)
			}
			if res, _ := model.ToolResult(work.ID); !strings.Contains(res.Content, "worked") {
				t.Errorf("the call's result %q", res.Content)
			}
		})
	}
}

// A hook command without --agent copilot (Claude Code's settings, which
// Copilot also reads from a repository's .claude/settings.json, or a
// hand-written entry) still tells Copilot's model: the hook, having a
// notice to print and no --agent, finds the agent running it (the native
// copilot, an agent that needs announcing) and prints Copilot's shape.
// Claude Code's hookSpecificOutput would be dropped: Copilot reads only a
// top-level additionalContext (TestOperatorReleaseTold's shape).
func TestUnannouncedHookToldByProcess(t *testing.T) {
	copilot.Require(t)
	ws := warptest.Start(t)
	ws.Create("T-4")
	project := e2etest.NewProject(t)
	home := setupHooks(t)
	p := filepath.Join(home.Config, "hooks", "gyrum.json")
	data := strings.ReplaceAll(e2etest.ReadFile(p), " --agent copilot", "")
	agenttest.WriteFile(t, p, []byte(data), 0o644)
	d, _ := gyrumdir.At(project)
	e2etest.LogLoopOnFailure(t, d)
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	claim := claimCall("T-4 --json")
	held := Shell("touch " + shellquote.Quote(started) + "; while [ ! -e " + shellquote.Quote(release) + " ]; do sleep 0.05; done; echo held-done")
	model := agenttest.NewChat(t, agenttest.Calls(claim), agenttest.Calls(held), agenttest.Text("Stopping."))
	s := start(t, model, project, home, agenttest.Options{Env: e2etest.AgentEnv(t, ws.URL(), 0.2, 30, 60)})
	e2etest.Poll(t, "the held call to start", func() bool { return e2etest.Exists(started) })
	sr := e2etest.StartResultOf(t, model, claim)
	if _, err := ws.Svc.Release(t.Context(), "T-4", sr.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	e2etest.Poll(t, "the loop's lease-ended notice", func() bool { return e2etest.Exists(d.File(gyrumdir.NoticeFile)) })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(e2etest.SessionTimeout)
	const told = "your lease on ticket T-4"
	if res, _ := model.ToolResult(held.ID); !strings.Contains(res.Content, told) {
		t.Errorf("the held call's result %q, want the notice", res.Content)
	}
	if e2etest.Exists(d.File(gyrumdir.NoticeFile)) {
		t.Error("the hook did not take the notice")
	}
}
