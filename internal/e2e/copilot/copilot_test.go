package copilot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// copilot is GitHub Copilot CLI (npm @github/copilot, pinned by
// .ci/install-copilot) as the suite drives it: `copilot -p PROMPT
// --allow-all-tools` against the fake chat completions API
// (agenttest.NewChat) as a BYOK provider (COPILOT_PROVIDER_BASE_URL,
// COPILOT_MODEL, a dummy COPILOT_PROVIDER_API_KEY), offline
// (COPILOT_OFFLINE=true: no GitHub sign-in, no telemetry, no update),
// with COPILOT_HOME in the session's HOME. Options.Ask leaves
// --allow-all-tools out.
var copilot = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:     "GitHub Copilot CLI",
		Binary:    "copilot",
		Version:   "1.0.102",
		EnvBinary: "GYRUM_TEST_COPILOT",
		Cache:     ".cache/copilot-cli/node_modules/.bin/copilot",
		Install:   ".ci/install-copilot",
		// "GitHub Copilot CLI 1.0.102." and a line about updates.
		VersionOf: func(out string) string {
			f := strings.Fields(strings.SplitN(out, "\n", 2)[0])
			if len(f) == 0 {
				return ""
			}
			return strings.TrimSuffix(f[len(f)-1], ".")
		},
		VersionEnv: []string{"HOME=" + os.TempDir(), "COPILOT_OFFLINE=true"},
	},
	ConfigDir: ".copilot",
	ConfigVar: "COPILOT_HOME",
	Vars: map[string]string{"COPILOT_OFFLINE": "true", "COPILOT_MODEL": "gpt-fake", "COPILOT_PROVIDER_API_KEY": "sk-agenttest-dummy",
		"COPILOT_AUTO_UPDATE": "false", "NO_COLOR": "1"},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		args := []string{"-p", o.Prompt}
		if !o.Ask {
			args = append(args, "--allow-all-tools")
		}
		return agenttest.Launch{Args: append(args, o.Args...), Env: map[string]string{"COPILOT_PROVIDER_BASE_URL": s.Model.URL() + "/v1"}}
	},
	// The agent is the native copilot binary the npm launcher (a node
	// script, npm-loader.js) runs as its child (kernel name MainThread).
	IsAgent: func(*agenttest.Session) func(agenttest.Proc) bool {
		return func(p agenttest.Proc) bool {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
			return err == nil && filepath.Base(exe) == "copilot"
		}
	},
}

// start runs the CLI in project against model, in home (setupHooks).
func start(t *testing.T, model *agenttest.FakeModel, project string, home agenttest.Home, o agenttest.Options) *agenttest.Session {
	t.Helper()
	o.Dir, o.Home = project, home
	return copilot.Start(t, model, o)
}

// Shell returns a call of the CLI's shell tool, bash (sync: Copilot waits
// up to its initial_wait, 30 s by default, then leaves the command
// running in the background and answers with what it printed so far).
// The command runs in a fresh bash, a child of the native agent process.
func Shell(command string) agenttest.Call {
	return agenttest.Tool("bash", map[string]any{"command": command, "description": "run a command"})
}

// The fake drives the real CLI through a shell call and a final answer:
// the call runs in the project under the native agent, its result comes
// back on the call's id, the CLI prints the answer and exits 0, and
// nothing it started is left.
func TestShellCallAndExit(t *testing.T) {
	copilot.Require(t)
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	call := Shell("echo $PPID > " + mark + "; pwd")
	model := agenttest.NewChat(t, agenttest.Calls(call), agenttest.Text("All done."))
	s := copilot.Start(t, model, agenttest.Options{Dir: dir})
	agenttest.Poll(t, e2etest.SessionTimeout, "the shell call to run", func() bool { _, err := os.Stat(mark); return err == nil })
	agent := s.AgentPid()
	tree := s.TreeString()
	if agent == 0 || agent == s.Pid() {
		t.Fatalf("no native agent below the launcher %d:\n%s", s.Pid(), tree)
	}
	s.WaitOK(e2etest.SessionTimeout)
	if got := s.Stdout(); !strings.HasSuffix(strings.TrimSpace(got), "All done.") {
		t.Errorf("stdout %q, want the final answer last", got)
	}
	res, ok := model.ToolResult(call.ID)
	if !ok || res.Request != 2 || !strings.Contains(res.Content, dir) {
		t.Errorf("result %+v (found %v), want the project's path in request 2", res, ok)
	}
	if got := strings.TrimSpace(e2etest.ReadFile(mark)); got != strconv.Itoa(agent) {
		t.Errorf("the shell call's parent is %s, want the native agent %d:\n%s", got, agent, tree)
	}
	t.Logf("processes while the call ran:\n%s", tree)
	if left := s.Leftovers(); len(left) > 0 {
		t.Errorf("processes left after exit: %v", left)
	}
}
