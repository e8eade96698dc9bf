package agent

// cursor is Cursor's CLI agent, cursor-agent (docs/agents/cursor.md,
// documented, not measured). Its hooks are camel-case (preToolUse,
// postToolUse, postToolUseFailure), and it reads a top-level
// additional_context.
var cursor = Agent{
	Name:         "cursor-agent",
	Product:      "cursor",
	Title:        "Cursor",
	Instructions: "AGENTS.md",
	ShellTool:    "the terminal",
	Executables:  []string{"cursor-agent"},
	Events:       map[string]string{"preToolUse": "PreToolUse", "postToolUse": "PostToolUse", "postToolUseFailure": "PostToolUseFailure"},
	Notice:       NoticeTopLevel,
	// hooks.json, as documented at https://cursor.com/docs/agent/hooks:
	// {"version": 1, "hooks": {EVENT: [{"command": "...", "timeout": 5}]}},
	// a flat list of handlers per event (timeout in seconds), in
	// ~/.cursor/hooks.json or <project>/.cursor/. preToolUse, postToolUse
	// and postToolUseFailure fire for every tool, so the narrower
	// beforeShellExecution/afterShellExecution pairs are not wired too:
	// they would run the hook twice for one call.
	Hooks: &Hooks{
		Flag:         "cursor",
		Events:       []string{"preToolUse", "postToolUse", "postToolUseFailure"},
		TimeoutScale: 1, Version: 1,
		ProjectDir: ".cursor", UserDir: ".cursor", File: "hooks.json",
	},
}
