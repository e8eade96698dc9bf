package agent

import "strings"

// codex is OpenAI's Codex CLI (docs/agents/codex.md): a native `codex`
// (and codex.js for node, and the platform binaries the npm package
// ships). Its hooks.json uses Claude Code's event names and output.
var codex = Agent{
	Name:         "codex",
	Product:      "codex",
	Title:        "Codex",
	Instructions: "AGENTS.md",
	ShellTool:    "its shell, exec_command",
	Executables: []string{"codex", "codex.js", "codex-linux-x64", "codex-darwin-arm64",
		"codex-x86_64-unknown-linux-musl", "codex-aarch64-apple-darwin"},
	Packages: []string{"@openai/codex/"},
	Notice:   NoticeHookSpecific,
	// hooks.json, as documented at https://developers.openai.com/codex/hooks:
	// Claude Code's shape (event → matcher groups → command handlers,
	// "timeout" in seconds), in $CODEX_HOME (~/.codex) or <repo>/.codex.
	// PreToolUse and PostToolUse carry hook_event_name, cwd, tool_name and
	// tool_use_id. Its matcher is a regular expression, so "" (every tool)
	// rather than Claude's "*".
	Hooks: &Hooks{
		Flag:    "codex",
		Events:  []string{"PreToolUse", "PostToolUse"},
		Grouped: true, Matcher: "", Typed: true, TimeoutScale: 1,
		ProjectDir: ".codex", UserDir: ".codex", HomeEnv: "CODEX_HOME", File: "hooks.json",
		Notes: codexNotes,
	},
	Server: &Server{
		Is:    codexAppServer,
		Name:  "the Codex app-server daemon",
		Avoid: "run the app without the shared server (codex --no-daemon)",
	},
}

// codexAppServer reports whether a codex command line is an app server
// that serves clients over a socket: the shared daemon the interactive app
// runs its tools on (measured, 0.169.0: `codex app-server --listen unix://
// --analytics-default-enabled --managed-daemon`, started detached by
// `codex app-server daemon start` or by the app itself), or any `codex
// app-server --listen URL` but stdio://. remote is true when it listens on
// something other than a Unix socket (ws://…).
func codexAppServer(args []string) (server, remote bool) {
	app := false
	for i, a := range args {
		switch {
		case a == "app-server":
			app = true
		case !app:
		case a == "--managed-daemon":
			server = true
		case a == "--listen" && i+1 < len(args):
			server, remote = listenServer(args[i+1], server, remote)
		case strings.HasPrefix(a, "--listen="):
			server, remote = listenServer(strings.TrimPrefix(a, "--listen="), server, remote)
		}
	}
	return app && server, app && remote
}

func listenServer(url string, server, remote bool) (bool, bool) {
	switch {
	case url == "" || strings.HasPrefix(url, "stdio"):
		return server, remote
	case strings.HasPrefix(url, "unix:"):
		return true, remote
	}
	return true, true
}

// codexNotes: Codex records trust per hook definition, so a hook it has not
// seen (or one whose command changed) is skipped, silently, until the user
// trusts it (https://developers.openai.com/codex/hooks, "Review and trust
// hooks"); project hooks load only in a trusted project.
func codexNotes(in NoteInput) []string {
	if !in.Changed {
		return nil
	}
	msg := "Codex runs the gyrum hook only after you trust it: setup adds (or changes) it in " + in.Path + ", and Codex skips a new or changed hook, without a word, until it is trusted.\n" +
		"Start codex: it lists new or changed hooks at startup; answer \"Trust all and continue\" (or open /hooks, review and trust the two gyrum entries, PreToolUse and PostToolUse).\n" +
		"Until then Codex's tool calls are no evidence of work, and warp shows its leases as unwired; `gyrum doctor` fails until they are trusted. setup never writes Codex's trust itself."
	if in.Project != "" {
		msg += "\nProject hooks load only in a project Codex trusts: trust " + in.Project + " when Codex asks."
	}
	return []string{msg}
}
