package agent

import _ "embed"

// piExtension is the extension gyrum setup writes for pi (plugins/pi.ts):
// pi loads TypeScript extensions whose tool_call and tool_result handlers
// run around every tool call.
//
//go:embed plugins/pi.ts
var piExtension string

// pi is pi (docs/agents/pi.md; npm @mariozechner/pi-coding-agent), a node
// program (dist/cli.js) that retitles itself: its comm and argv are `pi`.
// Its hooks are TypeScript extensions, loaded from ~/.pi/agent/extensions/
// ($PI_CODING_AGENT_DIR/extensions/) or a project's .pi/extensions/ with no
// trust step, so gyrum ships one (plugins/pi.ts) that feeds the hook Claude
// Code payloads: the notice comes back to it in Claude Code's shape and it
// adds it to the call's result.
var pi = Agent{
	Name:         "pi",
	Product:      "pi",
	Title:        "pi",
	Instructions: "AGENTS.md",
	ShellTool:    "bash",
	Executables:  []string{"pi"},
	Packages:     []string{"@mariozechner/pi-coding-agent/"},
	Notice:       NoticeHookSpecific,
	Hooks: &Hooks{
		Flag:       "pi",
		ProjectDir: ".pi", UserDir: ".pi/agent", HomeEnv: "PI_CODING_AGENT_DIR",
		File:   "extensions/gyrum.ts",
		Plugin: &Plugin{Template: piExtension},
	},
}
