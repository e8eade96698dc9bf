package agent

// geminiCLI is Google's Gemini CLI (docs/agents/gemini-cli.md): a node
// script (`gemini`, bundle/gemini.js) that relaunches itself as a node
// child. Its hooks are BeforeTool and AfterTool, with no tool_use_id; it
// reads Claude Code's output shape.
var geminiCLI = Agent{
	Name:        "gemini",
	Product:     "gemini-cli",
	Executables: []string{"gemini", "gemini.js"},
	Packages:    []string{"@google/gemini-cli/"},
	Events:      map[string]string{"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse"},
	Notice:      NoticeHookSpecific,
}
