package opencode_test

import (
	"os"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// opencode is opencode (npm opencode-ai, pinned by .ci/install-opencode)
// as the suite drives it (e2etest.Opencode): `opencode run --model
// fake/gpt-fake PROMPT` against the fake chat completions API, declared
// in the user's ~/.config/opencode/opencode.json as a provider "fake", so
// nothing is fetched: no models list (OPENCODE_DISABLE_MODELS_FETCH), no
// update check, no LSP download, no sharing. The agent is the process
// started: the npm bin runs the native binary itself, no launcher.
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
	Prepare: e2etest.Opencode{
		Config:    "opencode.json",
		Schema:    "https://opencode.ai/config.json",
		PluginAPI: "@opencode-ai/plugin",
	}.Prepare,
}

// plugin runs opencode with gyrum's plugin, which `gyrum setup --agents
// opencode` writes into ~/.config/opencode/plugins/.
var plugin = e2etest.OpencodePlugin("opencode", opencode)

// Shell returns a call of opencode's shell tool, bash (it runs the command
// with /usr/bin/bash -c in the project, a child of the opencode process).
// Its result's text is the command's output.
func Shell(command string) agenttest.Call {
	return agenttest.Tool("bash", map[string]any{"command": command, "description": "run a command"})
}
