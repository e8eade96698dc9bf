package e2etest

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// Plugin is an agent CLI gyrum wires with a plugin file of its own
// (opencode, Kilo, pi), which `gyrum setup --agents NAME` writes at the
// user's scope: how a suite runs it wired, and what the plugin tests of
// Matrix need of it.
type Plugin struct {
	// Name is the CLI as setup's --agents names it ("kilo").
	Name string
	// Agent is the CLI as the harness runs it.
	Agent *agenttest.Agent
	// Dir is the directory of the plugin file in h.
	Dir func(h agenttest.Home) string
	// FailingRead is a call of the CLI's read tool of path (which does
	// not exist), and FailureText what its result says.
	FailingRead func(path string) agenttest.Call
	FailureText string
}

// Home makes the session's HOME and wires gyrum into it with the real
// `gyrum setup --agents NAME` at the user's scope, as a user does: it
// writes gyrum's plugin into Dir (and Claude Code's hooks, which setup
// always wires). It fails the test unless the plugin is there and runs
// the gyrum-hook beside the gyrum under test.
func (p *Plugin) Home(t *testing.T) agenttest.Home {
	t.Helper()
	h := p.Agent.NewHome(t)
	Gyrum(t, h.Dir, map[string]string{"HOME": h.Dir, "GYRUM_HOME": filepath.Join(h.Dir, ".gyrum")},
		"setup", "--agents", p.Name, "--watchdog", "none")
	a, _ := agent.ByFlag(p.Name)
	path := filepath.Join(p.Dir(h), a.Hooks.File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cmd, current, _ := a.Hooks.Plugin.Command(data); !current || !strings.Contains(cmd, filepath.Join(filepath.Dir(gyrumBin), "gyrum-hook")) {
		t.Fatalf("gyrum setup did not write its plugin running gyrum-hook into %s:\n%s", path, data)
	}
	return h
}

// Start runs the CLI in project against model, in a HOME Home wired
// unless o.Home is given.
func (p *Plugin) Start(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
	t.Helper()
	o.Dir = project
	if o.Home == (agenttest.Home{}) {
		o.Home = p.Home(t)
	}
	return p.Agent.Start(t, model, o)
}

// OpencodePlugin is the Plugin of opencode and its fork Kilo, cli: the
// file under the config directory's plugins/, its read tool's filePath,
// and "not found" from a missing file.
func OpencodePlugin(name string, cli *agenttest.Agent) *Plugin {
	return &Plugin{
		Name:  name,
		Agent: cli,
		Dir:   func(h agenttest.Home) string { return filepath.Join(h.Config, "plugins") },
		FailingRead: func(path string) agenttest.Call {
			return agenttest.Tool("read", map[string]any{"filePath": path})
		},
		FailureText: "not found",
	}
}

// Opencode is how a CLI of the opencode family (opencode, its fork Kilo)
// runs a session, its agenttest.Agent's Prepare: `BINARY run --print-logs
// --model fake/gpt-fake --auto PROMPT` against the fake chat completions
// API (agenttest.NewChat), declared in the user's config file (Config, in
// the agent's config directory) as a provider "fake" of the bundled
// @ai-sdk/openai-compatible with a dummy key, so nothing is fetched (the
// agent's variables turn off the models list, the update check, LSP
// downloads and sharing). Options.Settings are merged into that file at
// the top level. Its logs go to stderr (--print-logs), which the harness
// shows when a test fails. Options.Ask leaves --auto out.
type Opencode struct {
	// Config is the config file's name ("opencode.json"), Schema its
	// $schema, and Settings what else it holds for every session.
	Config   string
	Schema   string
	Settings map[string]any
	// PluginAPI is the npm package of the plugin API the CLI installs
	// into every config directory at start, and waits for before it
	// loads local plugins ("@opencode-ai/plugin").
	PluginAPI string
}

// Prepare is the agenttest.Agent's Prepare of a CLI of the family.
func (o Opencode) Prepare(t testing.TB, s *agenttest.Session, opt agenttest.Options) agenttest.Launch {
	t.Helper()
	cfg := map[string]any{
		"$schema":    o.Schema,
		"autoupdate": false,
		"share":      "disabled",
		"model":      "fake/gpt-fake",
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": s.Model.URL() + "/v1", "apiKey": "agenttest-dummy-key"},
			"models":  map[string]any{"gpt-fake": map[string]any{"name": "gpt-fake", "tool_call": true}},
		}},
	}
	maps.Copy(cfg, o.Settings)
	maps.Copy(cfg, opt.Settings)
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(s.Home.Config, o.Config), data, 0o600)
	env := map[string]string{}
	if o.linkPluginAPI(t, s) {
		// Installed already: a fetch would be a fault. The registry is
		// one where nothing answers.
		env["npm_config_registry"] = "http://127.0.0.1:9/"
	}
	args := []string{"run", "--print-logs", "--model", "fake/gpt-fake"}
	if !opt.Ask {
		args = append(args, "--auto")
	}
	return agenttest.Launch{Args: append(append(args, opt.Args...), opt.Prompt), Env: env}
}

// linkPluginAPI gives the config directory of s the PluginAPI package as
// the CLI's install script installed it beside the binary
// (<prefix>/config): package.json and package-lock.json copied,
// node_modules linked. The CLI then finds it installed and fetches
// nothing. false when there is none (a CLI from elsewhere): the CLI then
// tries the registry, as it does for its users.
func (o Opencode) linkPluginAPI(t testing.TB, s *agenttest.Session) bool {
	t.Helper()
	deps := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(s.Bin))), "config")
	if _, err := os.Stat(filepath.Join(deps, "node_modules", o.PluginAPI, "package.json")); err != nil {
		t.Logf("no %s installed in %s (run %s): %s will try the registry", o.PluginAPI, deps, s.Agent.Install, s.Agent.Title)
		return false
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(deps, f))
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(s.Home.Config, f), data, 0o644)
	}
	if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(s.Home.Config, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return true
}

// OpencodeProgress describes opencode or Kilo CLI (one family, one
// plugin of gyrum's) to Progress: gyrum's plugin hands the hook each
// call's input and, at its end, its output and a shell call's exit
// status, and appends what the hook says to the call's output, where the
// model reads it. shell is a call of the CLI's bash tool.
func OpencodeProgress(p *Plugin, shell func(command string) agenttest.Call) *Progress {
	return &Progress{
		Agent:     p.Agent,
		NewModel:  agenttest.NewChat,
		Start:     p.Start,
		Shell:     shell,
		ShellTool: "bash",
		Read: func(path string) agenttest.Call {
			return agenttest.Tool("read", map[string]any{"filePath": path})
		},
		// For a GPT model the CLI offers apply_patch, not write: an edit
		// goes through the shell.
		Write: func(path, content string) agenttest.Call { return shell(WriteCommand(path, content)) },
		// Its file tools keep to the project unless the user allows more.
		FilesInProject: true,
		Marker:         MarkerCallID,
		// With the exit status the repetition is the same failure (3).
		Loop:   LoopTold{Fails: 6, At: 3, Suffix: ": exit 1"},
		ToldIn: func(tr agenttest.ToolResult) string { return tr.Content },
	}
}
