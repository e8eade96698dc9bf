package kilo_test

import (
	"os"
	"path/filepath"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// kilo is Kilo CLI (npm @kilocode/cli, pinned by .ci/install-kilo) as the
// suite drives it, an opencode fork (e2etest.Opencode): `kilo run --model
// fake/gpt-fake PROMPT` against the fake chat completions API, declared
// in the user's ~/.config/kilo/kilo.json as a provider "fake", the only
// provider enabled (Kilo's own gateway would fetch its model list), so
// nothing is fetched: no models list (KILO_DISABLE_MODELS_FETCH), no
// update check, no LSP download, no sharing, no telemetry
// (KILO_TELEMETRY_LEVEL=off).
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
	Prepare: e2etest.Opencode{
		Config:   "kilo.json",
		Schema:   "https://app.kilo.ai/config.json",
		Settings: map[string]any{"enabled_providers": []string{"fake"}},
		// Kilo 7.7.7 asks for @kilocode/plugin@7.7.7, which the registry
		// does not have (its newest is 7.3.1: that is what
		// .ci/install-kilo installs); with the package there in any
		// version it asks for nothing.
		PluginAPI: "@kilocode/plugin",
	}.Prepare,
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
