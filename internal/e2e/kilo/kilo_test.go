package kilo_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// kilo is Kilo CLI (npm @kilocode/cli, pinned by .ci/install-kilo) as the
// suite drives it: `kilo run --model fake/gpt-fake PROMPT` against the fake
// chat completions API (agenttest.NewChat), declared in the user's
// ~/.config/kilo/kilo.json as a provider "fake" of the bundled
// @ai-sdk/openai-compatible with a dummy key, the only provider enabled
// (Kilo's own gateway would fetch its model list), so nothing is fetched:
// no models list (KILO_DISABLE_MODELS_FETCH), no update check, no LSP
// download, no sharing, no telemetry (KILO_TELEMETRY_LEVEL=off).
// Options.Settings are merged into that file at the top level. Its logs go
// to stderr (--print-logs). Options.Ask leaves --auto out.
var kilo = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:      "Kilo CLI",
		Binary:     "kilo",
		Version:    "7.7.7",
		EnvBinary:  "GYRUM_TEST_KILO",
		Cache:      ".cache/kilo/node_modules/.bin/kilo",
		Install:    ".ci/install-kilo",
		VersionEnv: []string{"HOME=" + os.TempDir()},
	},
	ConfigDir: ".config/kilo",
	Vars: map[string]string{
		"KILO_DISABLE_AUTOUPDATE":   "1",
		"KILO_DISABLE_MODELS_FETCH": "1",
		"KILO_DISABLE_LSP_DOWNLOAD": "1",
		"KILO_DISABLE_SHARE":        "1",
		"KILO_TELEMETRY_LEVEL":      "off",
		"NO_COLOR":                  "1",
	},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		t.Helper()
		cfg := map[string]any{
			"$schema":           "https://app.kilo.ai/config.json",
			"autoupdate":        false,
			"share":             "disabled",
			"model":             "fake/gpt-fake",
			"enabled_providers": []string{"fake"},
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
		agenttest.WriteFile(t, filepath.Join(s.Home.Config, "kilo.json"), data, 0o600)
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
	// The agent is the native binary the node launcher runs as its child
	// (bin/.kilo), which runs the session.
	IsAgent: func(s *agenttest.Session) func(agenttest.Proc) bool {
		return func(p agenttest.Proc) bool { return len(p.Args) > 0 && filepath.Base(p.Args[0]) == ".kilo" }
	},
}

// plugin runs Kilo with gyrum's plugin, which `gyrum setup --agents kilo`
// writes into ~/.config/kilo/plugins/.
var plugin = e2etest.OpencodePlugin("kilo", kilo)

// Shell returns a call of Kilo's shell tool, bash (it runs the command
// with /usr/bin/bash -c in the project, a child of .kilo). Its result's
// text is the command's output.
func Shell(command string) agenttest.Call {
	return agenttest.Tool("bash", map[string]any{"command": command, "description": "run a command"})
}

// linkPluginAPI gives the config directory dir the @kilocode/plugin that
// Kilo installs into every config directory at start (and waits for
// before it loads local plugins), as .ci/install-kilo installed it beside
// the binary bin (<prefix>/config): package.json and package-lock.json
// copied, node_modules linked. Kilo 7.7.7 asks for @kilocode/plugin@7.7.7,
// which the registry does not have (its newest is 7.3.1: that is what is
// installed); with the package there in any version it asks for nothing.
// false when there is none (a CLI from elsewhere): Kilo then tries the
// registry, as it does for its users.
func linkPluginAPI(t testing.TB, dir, bin string) bool {
	t.Helper()
	deps := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(bin))), "config")
	if _, err := os.Stat(filepath.Join(deps, "node_modules", "@kilocode", "plugin", "package.json")); err != nil {
		t.Logf("no @kilocode/plugin installed in %s (run .ci/install-kilo): Kilo will try the registry", deps)
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
