package agent

import (
	"bytes"
	"encoding/json"
)

// qwenCode is Qwen Code (docs/agents/qwen-code.md), a fork of Gemini CLI
// whose hooks are Claude Code's: the same event names, payload keys
// (tool_use_id included) and output. Its npm launcher (`qwen`, a node
// script) starts `node --expose-gc …/@qwen-code/qwen-code/cli.js`, which
// runs the session, its tools and its hooks; start-work watches that
// child, the nearest agent above the tool call. The launcher's pid is
// handed down as QWEN_CODE_LAUNCHER_PID: it names the launcher, not the
// agent, and gyrum does not read it.
var qwenCode = Agent{
	Name:         "qwen",
	Product:      "qwen-code",
	Title:        "Qwen Code",
	Instructions: "QWEN.md",
	ShellTool:    "run_shell_command",
	Executables:  []string{"qwen"},
	Packages:     []string{"@qwen-code/qwen-code/"},
	Notice:       NoticeHookSpecific,
	// settings.json hooks, as its bundled docs (docs/features/hooks.md)
	// say: Claude Code's shape (event → matcher groups → command
	// handlers, "timeout" in seconds, "*" matches every tool), in
	// $QWEN_HOME (~/.qwen) or <project>/.qwen. Project hooks load only in
	// a trusted folder when folder trust is on (it is off by default).
	Hooks: &Hooks{
		Flag:    "qwen",
		Events:  []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"},
		Grouped: true, Matcher: "*", Typed: true, TimeoutScale: 1,
		ProjectDir: ".qwen", UserDir: ".qwen", HomeEnv: "QWEN_HOME", File: "settings.json",
		Notes: qwenNotes,
	},
}

// qwenNotes reports a settings file that turns every hook off
// ("disableAllHooks": true), and for project hooks the folder trust they
// may need.
func qwenNotes(in NoteInput) []string {
	var doc struct {
		DisableAllHooks json.RawMessage `json:"disableAllHooks"`
	}
	var out []string
	if json.Unmarshal(in.Data, &doc) == nil && string(bytes.TrimSpace(doc.DisableAllHooks)) == "true" {
		out = append(out, "Qwen Code will not run the gyrum hook: "+in.Path+" sets \"disableAllHooks\": true (remove it, or set it to false).\n"+
			"Until it runs, Qwen Code's tool calls are no evidence of work, and warp shows its leases as unwired.")
	}
	if in.Project != "" && in.Changed {
		out = append(out, "Qwen Code loads project hooks only in a folder it trusts when its folder trust is on (security.folderTrust.enabled): "+
			"if you turned it on, trust "+in.Project+" when qwen asks (or with /permissions). `gyrum doctor` in the project checks it.")
	}
	return out
}
