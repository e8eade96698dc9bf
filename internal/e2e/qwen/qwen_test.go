package qwen_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// qwen is Qwen Code (npm @qwen-code/qwen-code, pinned by
// .ci/install-qwen) as the suite drives it: `qwen --auth-type openai
// --yolo PROMPT` (one-shot) against the fake chat completions API
// (agenttest.NewChat) as OPENAI_BASE_URL, with a dummy OPENAI_API_KEY and
// OPENAI_MODEL, in a HOME whose .qwen/settings.json turns usage
// statistics off; Options.Settings are merged into those settings at the
// top level ("hooks", say). Options.Ask leaves --yolo out.
var qwen = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:      "Qwen Code",
		Binary:     "qwen",
		Version:    "0.24.4",
		EnvBinary:  "GYRUM_TEST_QWEN",
		Cache:      ".cache/qwen-code/node_modules/.bin/qwen",
		Install:    ".ci/install-qwen",
		VersionEnv: []string{"HOME=" + os.TempDir()},
	},
	ConfigDir: ".qwen",
	Vars: map[string]string{"OPENAI_API_KEY": "sk-agenttest-dummy", "OPENAI_MODEL": "gpt-fake", "NO_COLOR": "1",
		"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		t.Helper()
		settings := map[string]any{
			"privacy": map[string]any{"usageStatisticsEnabled": false},
		}
		maps.Copy(settings, o.Settings)
		data, err := json.MarshalIndent(settings, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(s.Home.Config, "settings.json"), data, 0o600)
		args := []string{"--auth-type", "openai"}
		if !o.Ask {
			args = append(args, "--yolo")
		}
		args = append(append(args, o.Args...), o.Prompt)
		return agenttest.Launch{Args: args, Env: map[string]string{"OPENAI_BASE_URL": s.Model.URL() + "/v1"}}
	},
	// The agent is the relaunched `node --expose-gc … cli.js` (the
	// launcher runs cli-entry.js, whose child cli.js relaunches itself
	// once more): the process running cli.js whose parent runs it too.
	IsAgent: func(s *agenttest.Session) func(agenttest.Proc) bool {
		return func(p agenttest.Proc) bool {
			if !runsCLI(p) {
				return false
			}
			parent, ok := agenttest.Lookup(p.PPID)
			return ok && runsCLI(parent)
		}
	},
}

// runsCLI reports whether p runs Qwen Code's cli.js.
func runsCLI(p agenttest.Proc) bool {
	return slices.ContainsFunc(p.Args, func(a string) bool { return strings.HasSuffix(a, "/@qwen-code/qwen-code/cli.js") })
}

// start runs the CLI in project against model.
func start(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
	t.Helper()
	o.Dir = project
	return qwen.Start(t, model, o)
}

// Shell returns a run_shell_command call of command, the CLI's shell tool
// (`bash -c`, in the project, a child of the agent process). Its result's
// text is Qwen's report ("Command: …\nOutput: …\nExit Code: 0 …").
func Shell(command string) agenttest.Call {
	return agenttest.Tool("run_shell_command", map[string]any{"command": command, "description": "run a command"})
}

// The fake drives the real CLI through a shell call and a final answer:
// the call runs in the project under the agent process, its result comes
// back on the call's id, the CLI prints the answer and exits 0, and
// nothing it started is left.
func TestShellCallAndExit(t *testing.T) {
	qwen.Require(t)
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	// The working directory goes to a file: Qwen's captured output came
	// back empty once on a loaded machine ("Output: (empty)"), though the
	// command ran.
	where := filepath.Join(t.TempDir(), "where")
	call := Shell("echo $PPID > " + mark + "; pwd > " + where)
	model := agenttest.NewChat(t, agenttest.Calls(call), agenttest.Text("All done."))
	s := start(t, model, dir, agenttest.Options{})
	agenttest.Poll(t, e2etest.SessionTimeout, "the shell call to run", func() bool { _, err := os.Stat(mark); return err == nil })
	agent := s.AgentPid()
	tree := s.TreeString()
	if agent == 0 {
		t.Fatalf("no agent process below the launcher:\n%s", tree)
	}
	s.WaitOK(e2etest.SessionTimeout)

	if got := strings.TrimSpace(s.Stdout()); got != "All done." {
		t.Errorf("stdout %q, want the final answer", got)
	}
	res, ok := model.ToolResult(call.ID)
	if !ok || res.Request != 2 || !strings.Contains(res.Content, "Exit Code: 0") {
		t.Errorf("result %+v (found %v), want the call's report (exit code 0) in request 2", res, ok)
	}
	if got := strings.TrimSpace(e2etest.ReadFile(where)); got != dir {
		t.Errorf("the shell call ran in %q, want the project %q", got, dir)
	}
	if got := strings.TrimSpace(e2etest.ReadFile(mark)); got != strconv.Itoa(agent) {
		t.Errorf("the shell call's parent is %s, want the agent %d:\n%s", got, agent, tree)
	}
	t.Logf("processes while the call ran:\n%s", tree)
	if left := s.Leftovers(); len(left) > 0 {
		t.Errorf("processes left after exit: %v", left)
	}
	_ = time.Second
}
