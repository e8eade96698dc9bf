package e2etest

import (
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
