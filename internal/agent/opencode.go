package agent

import _ "embed"

// opencodePlugin is the plugin gyrum setup writes for opencode and Kilo CLI
// (plugins/opencode.js): both load JavaScript plugins whose
// tool.execute.before and tool.execute.after hooks run around every tool
// call.
//
//go:embed plugins/opencode.js
var opencodePlugin string

// opencode is opencode (docs/agents/opencode.md; npm opencode-ai, a native
// binary: the npm bin `opencode` runs bin/opencode.exe, whose process goes
// by `opencode`). Its hooks are JavaScript plugins, loaded from
// ~/.config/opencode/plugins/ ($XDG_CONFIG_HOME/opencode/plugins/) or a
// project's .opencode/plugins/ with no trust step, so gyrum ships one
// (plugins/opencode.js) that feeds the hook Claude Code payloads: the
// notice comes back to it in Claude Code's shape and it appends it to the
// call's output. It hands its pid to its tools as OPENCODE_PID.
var opencode = Agent{
	Name:         "opencode",
	Product:      "opencode",
	Title:        "opencode",
	Instructions: "AGENTS.md",
	ShellTool:    "bash",
	Executables:  []string{"opencode", "opencode.exe"},
	PIDEnv:       "OPENCODE_PID",
	Notice:       NoticeHookSpecific,
	Hooks: &Hooks{
		Flag:       "opencode",
		ProjectDir: ".opencode/plugins", UserDir: ".config/opencode/plugins", ConfigHomeDir: "opencode/plugins",
		File:   "gyrum.js",
		Plugin: &Plugin{Template: opencodePlugin},
	},
}
