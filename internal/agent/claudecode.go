package agent

// claudeCode is Claude Code (docs/agents/claude-code.md). Its npm package
// runs the native bin/claude.exe (the `claude` symlink's target); older
// ones ran cli.js under node. It hands its pid to everything it starts as
// CLAUDE_PID. Its hook events are the names the others are mapped to.
var claudeCode = Agent{
	Name:         "claude",
	Product:      "claude-code",
	Title:        "Claude Code",
	Instructions: "CLAUDE.md",
	ShellTool:    "Bash",
	Executables:  []string{"claude", "claude.exe"},
	Packages:     []string{"@anthropic-ai/claude-code/"},
	PIDEnv:       "CLAUDE_PID",
	Notice:       NoticeHookSpecific,
	// Setup always wires Claude Code (Flag ""), in $CLAUDE_CONFIG_DIR or
	// ~/.claude/settings.json, or the project's .claude/settings.json.
	Hooks: &Hooks{
		Events:  []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"},
		Grouped: true, Matcher: "*", Typed: true, TimeoutScale: 1,
		ProjectDir: ".claude", UserDir: ".claude", HomeEnv: "CLAUDE_CONFIG_DIR", File: "settings.json",
		Layers:     []string{"settings.json", "settings.local.json"},
		DisableKey: "disableAllHooks", ManagedOnlyKey: "allowManagedHooksOnly",
		Managed: map[string][]string{
			"linux":  {"/etc/claude-code/managed-settings.json"},
			"darwin": {"/Library/Application Support/ClaudeCode/managed-settings.json"},
		},
	},
}
