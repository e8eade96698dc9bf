package agent

// kilo is Kilo CLI (docs/agents/kilo.md; npm @kilocode/cli), an opencode
// fork: its npm bin `kilo` is a node launcher that runs the native binary
// beside it, bin/.kilo (the platform package's bin/kilo), as its child and
// waits for it; the native process runs the session, its tools and its
// plugins, and hands its pid to its tools as KILO_PID. Its hooks are
// opencode's JavaScript plugins, loaded from ~/.config/kilo/plugins/
// ($XDG_CONFIG_HOME/kilo/plugins/) or a project's .kilo/plugins/: gyrum
// writes the plugin it writes for opencode (plugins/opencode.js).
var kilo = Agent{
	Name:         "kilo",
	Product:      "kilo-cli",
	Title:        "Kilo CLI",
	Instructions: "AGENTS.md",
	ShellTool:    "bash",
	Executables:  []string{".kilo", "kilo", "kilocode"},
	Packages:     []string{"@kilocode/cli/"},
	PIDEnv:       "KILO_PID",
	Notice:       NoticeHookSpecific,
	Hooks: &Hooks{
		Flag:       "kilo",
		ProjectDir: ".kilo/plugins", UserDir: ".config/kilo/plugins", ConfigHomeDir: "kilo/plugins",
		File:   "gyrum.js",
		Plugin: &Plugin{Template: opencodePlugin},
	},
}
