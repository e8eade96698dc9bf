package gemini_test

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

// gemini is the Gemini CLI (npm @google/gemini-cli, pinned by
// .ci/install-gemini) as the suite drives it: `gemini -p PROMPT --yolo`
// against the fake Gemini API (agenttest.NewGemini) as
// GOOGLE_GEMINI_BASE_URL, with a dummy GEMINI_API_KEY, in a HOME whose
// .gemini/settings.json selects API-key auth (gemini-api-key: with only
// GOOGLE_GEMINI_BASE_URL the CLI picks "gateway" auth, which -p refuses)
// and turns usage statistics off; Options.Settings are merged into those
// settings at the top level ("hooks", say). The project is trusted as a
// user trusts it at the CLI's trust prompt (trustFolder): -p refuses to
// run in an untrusted folder. Options.Ask leaves --yolo out.
var gemini = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:      "Gemini CLI",
		Binary:     "gemini",
		Version:    "0.61.0",
		EnvBinary:  "GYRUM_TEST_GEMINI",
		Cache:      ".cache/gemini-cli/node_modules/.bin/gemini",
		Install:    ".ci/install-gemini",
		VersionEnv: []string{"HOME=" + os.TempDir()},
	},
	ConfigDir: ".gemini",
	Vars:      map[string]string{"GEMINI_API_KEY": "agenttest-dummy-key", "NO_COLOR": "1"},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		t.Helper()
		settings := map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"privacy":  map[string]any{"usageStatisticsEnabled": false},
		}
		maps.Copy(settings, o.Settings)
		data, err := json.MarshalIndent(settings, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(s.Home.Config, "settings.json"), data, 0o600)
		trustFolder(t, s.Home.Config, o.Dir)
		args := []string{"-p", o.Prompt}
		if !o.Ask {
			args = append(args, "--yolo")
		}
		return agenttest.Launch{Args: append(args, o.Args...), Env: map[string]string{"GOOGLE_GEMINI_BASE_URL": s.Model.URL()}}
	},
	// The agent is the node child the launcher relaunched (`node
	// --max-old-space-size=N <binary> ...`, GEMINI_CLI_NO_RELAUNCH=true in
	// its environment): a process running the binary whose parent runs it
	// too. With GEMINI_CLI_NO_RELAUNCH set the launcher runs the session
	// and there is none.
	IsAgent: func(s *agenttest.Session) func(agenttest.Proc) bool {
		runs := map[int]bool{}
		return func(p agenttest.Proc) bool {
			if !slices.Contains(p.Args, s.Bin) {
				return false
			}
			runs[p.PID] = true
			return runs[p.PPID]
		}
	},
}

// trustFolder records dir in geminiDir/trustedFolders.json as the CLI's
// folder trust prompt does when the user picks "Trust folder": the real
// path mapped to "TRUST_FOLDER", written 0600. Project-scope settings (the
// hooks gyrum setup writes in .gemini/settings.json) count only in a
// trusted folder.
func trustFolder(t testing.TB, geminiDir, dir string) {
	t.Helper()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	p := filepath.Join(geminiDir, "trustedFolders.json")
	folders := map[string]string{}
	if data, err := os.ReadFile(p); err == nil {
		if err := json.Unmarshal(data, &folders); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	folders[dir] = "TRUST_FOLDER"
	data, err := json.MarshalIndent(folders, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, p, data, 0o600)
}

// start runs the CLI in project against model.
func start(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
	t.Helper()
	o.Dir = project
	return gemini.Start(t, model, o)
}

// Shell returns a run_shell_command call of command, the CLI's shell tool
// (it runs `bash -c` in the project, a child of the agent process). Its
// result's text is the functionResponse's "output".
func Shell(command string) agenttest.Call {
	return agenttest.Tool("run_shell_command", map[string]any{"command": command, "description": "run a command"})
}

// The fake drives the real CLI through a shell call and a final answer:
// the call runs in the project under the relaunched node child (the
// launcher stays its parent), its result comes back on the call's id, the
// CLI prints the answer and exits 0, and nothing it started is left.
// Besides the conversation the CLI sends only generateContent (the router's
// classifier).
func TestShellCallAndExit(t *testing.T) {
	gemini.Require(t)
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	call := Shell("echo $PPID > " + mark + "; pwd")
	model := agenttest.NewGemini(t, agenttest.Calls(call), agenttest.Text("All done."))
	s := start(t, model, dir, agenttest.Options{})
	agenttest.Poll(t, 30*time.Second, "the shell call to run", func() bool { _, err := os.Stat(mark); return err == nil })
	agent := s.AgentPid()
	if agent == 0 {
		t.Fatalf("no relaunched agent child under the launcher:\n%s", s.TreeString())
	}
	s.WaitOK(30 * time.Second)

	if got := strings.TrimSpace(s.Stdout()); got != "All done." {
		t.Errorf("stdout %q, want the final answer", got)
	}
	res, ok := model.ToolResult(call.ID)
	if !ok || res.Request != 2 || !strings.Contains(res.Content, dir) {
		t.Errorf("result %+v (found %v), want the project's path in request 2", res, ok)
	}
	// The tool's bash is a child of the relaunched agent.
	if got := strings.TrimSpace(e2etest.ReadFile(mark)); got != strconv.Itoa(agent) {
		t.Errorf("the shell call's parent is %s, want the agent child %d", got, agent)
	}
	kinds := map[agenttest.Kind]int{}
	for _, r := range model.Requests() {
		kinds[r.Kind]++
	}
	if kinds[agenttest.KindMain] != 2 || kinds[agenttest.KindOther] != 0 {
		t.Errorf("requests by kind %v, want 2 main and nothing unknown:\n%s", kinds, model.Summary())
	}
	if left := s.Leftovers(); len(left) > 0 {
		t.Errorf("processes left after exit: %v", left)
	}
}
