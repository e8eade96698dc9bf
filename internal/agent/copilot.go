package agent

// copilotCLI is GitHub Copilot CLI (docs/agents/copilot-cli.md): a node
// launcher (`copilot`, npm-loader.js) that runs the native binary of its
// platform package (…/@github/copilot-linux-x64/copilot, kernel name
// MainThread) as its child; the native process runs the session, its
// tools and its hooks.
//
// Its hooks name events two ways, and the name picks the payload
// (measured, 1.0.102): camelCase (preToolUse) sends {sessionId, cwd,
// toolName, toolArgs} with no event name; PascalCase (PreToolUse), its
// "VS Code compatible" format, sends Claude Code's keys: hook_event_name,
// session_id, cwd, tool_name (Claude's names: Bash), tool_input. gyrum
// wires the PascalCase events, so the hook reads Copilot's payload as
// Claude Code's; there is no tool_use_id (calls are named by their input,
// as Gemini CLI's are). What reaches the model is a top-level
// "additionalContext" in the hook's output, for either naming: Copilot
// ignores Claude Code's hookSpecificOutput. As its events are Claude
// Code's names, the hook cannot tell Copilot from its payload: setup
// writes `--agent copilot` into the command (Hooks.Announce).
var copilotCLI = Agent{
	Name:         "copilot",
	Product:      "copilot-cli",
	Title:        "GitHub Copilot CLI",
	Instructions: "AGENTS.md",
	ShellTool:    "bash",
	Executables:  []string{"copilot"},
	Notice:       NoticeAdditionalContext,
	// A hooks file of gyrum's own, which Copilot merges with the others:
	// {"version": 1, "hooks": {EVENT: [{"type": "command", "command":
	// "...", "timeout": 5}]}}, a flat list of handlers per event, timeout
	// in seconds ("command" is the cross-platform field, copied to "bash";
	// "timeout" the alias of "timeoutSec"). The user's hooks
	// ($COPILOT_HOME or ~/.copilot, hooks/*.json) run without trust; a
	// repository's (.github/hooks/*.json) only in a folder the user
	// trusted (trustedFolders in ~/.copilot/config.json).
	Hooks: &Hooks{
		Flag:         "copilot",
		Events:       []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"},
		Typed:        true,
		TimeoutScale: 1, Version: 1,
		Announce:   true,
		ProjectDir: ".github", UserDir: ".copilot", HomeEnv: "COPILOT_HOME", File: "hooks/gyrum.json",
		Notes: copilotNotes,
	},
}

// copilotNotes: a repository's hooks run only in a folder Copilot trusts.
func copilotNotes(in NoteInput) []string {
	if in.Project == "" || !in.Changed {
		return nil
	}
	return []string{"GitHub Copilot CLI runs a repository's hooks (" + in.Path + ") only in a folder it trusts: start copilot in " + in.Project +
		" and trust the folder when it asks. Until then its tool calls are no evidence of work, and warp shows its leases as unwired.\n" +
		"Or wire the user's hooks instead (gyrum setup --agents copilot, without --project), which run without trust."}
}
