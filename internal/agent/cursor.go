package agent

// cursor is Cursor's CLI agent, cursor-agent (docs/agents/cursor.md,
// documented, not measured). Its hooks are camel-case (preToolUse,
// postToolUse, postToolUseFailure), and it reads a top-level
// additional_context.
var cursor = Agent{
	Name:        "cursor-agent",
	Product:     "cursor",
	Executables: []string{"cursor-agent"},
	Events:      map[string]string{"preToolUse": "PreToolUse", "postToolUse": "PostToolUse", "postToolUseFailure": "PostToolUseFailure"},
	Notice:      NoticeTopLevel,
}
