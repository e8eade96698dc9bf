package pi_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// pi is pi (npm @mariozechner/pi-coding-agent, pinned by .ci/install-pi)
// as the suite drives it: `pi -p --model fake/gpt-fake PROMPT` (print mode:
// one prompt, then exit) against the fake chat completions API
// (agenttest.NewChat), declared in the user's ~/.pi/agent/models.json as a
// provider "fake" (api openai-completions) with a dummy key; PI_OFFLINE
// keeps it from the network at start (update checks, telemetry).
// Options.Settings are merged into ~/.pi/agent/settings.json.
var pi = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:      "pi",
		Binary:     "pi",
		Version:    "0.73.1",
		EnvBinary:  "GYRUM_TEST_PI",
		Cache:      ".cache/pi/node_modules/.bin/pi",
		Install:    ".ci/install-pi",
		VersionEnv: []string{"HOME=" + os.TempDir(), "PI_OFFLINE=1"},
	},
	ConfigDir: ".pi/agent",
	Vars:      map[string]string{"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0", "NO_COLOR": "1"},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		t.Helper()
		models := map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": s.Model.URL() + "/v1",
			"api":     "openai-completions",
			"apiKey":  "agenttest-dummy-key",
			"compat":  map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
			"models":  []any{map[string]any{"id": "gpt-fake", "name": "gpt-fake"}},
		}}}
		data, err := json.MarshalIndent(models, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(s.Home.Config, "models.json"), data, 0o600)
		if o.Settings != nil {
			settings := map[string]any{}
			maps.Copy(settings, o.Settings)
			data, err := json.MarshalIndent(settings, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			agenttest.WriteFile(t, filepath.Join(s.Home.Config, "settings.json"), data, 0o600)
		}
		args := []string{"-p", "--model", "fake/gpt-fake"}
		return agenttest.Launch{Args: append(append(args, o.Args...), o.Prompt)}
	},
	// The agent is the node process running dist/cli.js, which retitles
	// itself "pi" (comm and argv); the npm bin is that script.
	IsAgent: func(s *agenttest.Session) func(agenttest.Proc) bool {
		return func(p agenttest.Proc) bool { return p.PID == s.Pid() }
	},
}

// Shell returns a call of pi's shell tool, bash ({"command"}).
func Shell(command string) agenttest.Call {
	return agenttest.Tool("bash", map[string]any{"command": command})
}
