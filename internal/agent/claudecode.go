package agent

// claudeCode is Claude Code (docs/agents/claude-code.md). Its npm package
// runs the native bin/claude.exe (the `claude` symlink's target); older
// ones ran cli.js under node. It hands its pid to everything it starts as
// CLAUDE_PID. Its hook events are the names the others are mapped to.
var claudeCode = Agent{
	Name:        "claude",
	Product:     "claude-code",
	Executables: []string{"claude", "claude.exe"},
	Packages:    []string{"@anthropic-ai/claude-code/"},
	Notice:      NoticeHookSpecific,
}
