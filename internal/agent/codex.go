package agent

// codex is OpenAI's Codex CLI (docs/agents/codex.md): a native `codex`
// (and codex.js for node, and the platform binaries the npm package
// ships). Its hooks.json uses Claude Code's event names and output.
var codex = Agent{
	Name:    "codex",
	Product: "codex",
	Executables: []string{"codex", "codex.js", "codex-linux-x64", "codex-darwin-arm64",
		"codex-x86_64-unknown-linux-musl", "codex-aarch64-apple-darwin"},
	Packages: []string{"@openai/codex/"},
	Notice:   NoticeHookSpecific,
}
