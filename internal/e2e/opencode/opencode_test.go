package opencode_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// opencode is opencode (npm opencode-ai, pinned by .ci/install-opencode) as
// the suite drives it: `opencode run --model fake/gpt-fake PROMPT` against
// the fake chat completions API (agenttest.NewChat), declared in the
// user's ~/.config/opencode/opencode.json as a provider "fake" of the
// bundled @ai-sdk/openai-compatible with a dummy key, so nothing is
// fetched: no models list (OPENCODE_DISABLE_MODELS_FETCH), no update
// check, no LSP download, no sharing. Options.Settings are merged into that
// file at the top level. Its logs go to stderr (--print-logs), which the
// harness shows when a test fails. Options.Ask leaves --auto out.
var opencode = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:      "opencode",
		Binary:     "opencode",
		Version:    "1.18.33",
		EnvBinary:  "GYRUM_TEST_OPENCODE",
		Cache:      ".cache/opencode/node_modules/.bin/opencode",
		Install:    ".ci/install-opencode",
		VersionEnv: []string{"HOME=" + os.TempDir()},
	},
	ConfigDir: ".config/opencode",
	Vars: map[string]string{
		"OPENCODE_DISABLE_AUTOUPDATE":   "1",
		"OPENCODE_DISABLE_MODELS_FETCH": "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
		"OPENCODE_DISABLE_SHARE":        "1",
		"NO_COLOR":                      "1",
	},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		t.Helper()
		cfg := map[string]any{
			"$schema":    "https://opencode.ai/config.json",
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
		data, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(s.Home.Config, "opencode.json"), data, 0o600)
		env := map[string]string{}
		if linkPluginAPI(t, s.Home.Config, s.Bin) {
			// Installed already: a fetch would be a fault. The registry
			// is one where nothing answers.
			env["npm_config_registry"] = "http://127.0.0.1:9/"
		}
		args := []string{"run", "--print-logs", "--model", "fake/gpt-fake"}
		if !o.Ask {
			args = append(args, "--auto")
		}
		return agenttest.Launch{Args: append(append(args, o.Args...), o.Prompt), Env: env}
	},
	// The agent is the process started: the npm bin runs the native
	// binary itself, no launcher.
}

// plugin runs opencode with gyrum's plugin, which `gyrum setup --agents opencode`
// writes into ~/.config/opencode/plugins/.
var plugin = e2etest.OpencodePlugin("opencode", opencode)

// Shell returns a call of opencode's shell tool, bash (it runs the command
// with /usr/bin/bash -c in the project, a child of the opencode process).
// Its result's text is the command's output.
func Shell(command string) agenttest.Call {
	return agenttest.Tool("bash", map[string]any{"command": command, "description": "run a command"})
}

// linkPluginAPI gives the config directory dir the @opencode-ai/plugin that
// opencode installs into every config directory at start (and waits for
// before it loads local plugins), as .ci/install-opencode installed it
// beside the binary bin (<prefix>/config): package.json and
// package-lock.json copied, node_modules linked. opencode then finds it
// installed and fetches nothing. false when there is none (a CLI from
// elsewhere): opencode then installs it from the registry, as it does for
// its users.
func linkPluginAPI(t testing.TB, dir, bin string) bool {
	t.Helper()
	deps := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(bin))), "config")
	if _, err := os.Stat(filepath.Join(deps, "node_modules", "@opencode-ai", "plugin", "package.json")); err != nil {
		t.Logf("no @opencode-ai/plugin installed in %s (run .ci/install-opencode): opencode will fetch it from the registry", deps)
		return false
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(deps, f))
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(dir, f), data, 0o644)
	}
	if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return true
}
