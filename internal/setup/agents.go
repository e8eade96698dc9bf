package setup

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gyrum-labs/warp/internal/clikit"
)

// Agents lists the agents besides Claude Code whose public hook formats
// setup can wire with Options.Agents.
var agentNames = []string{"codex", "gemini", "cursor"}

// Agents returns the names Options.Agents accepts.
func Agents() []string { return append([]string(nil), agentNames...) }

// codexFormat is Codex's hooks.json, as documented at
// https://developers.openai.com/codex/hooks: Claude Code's shape (event →
// matcher groups → command handlers, "timeout" in seconds), discovered in
// ~/.codex/hooks.json ($CODEX_HOME) and <repo>/.codex/hooks.json. PreToolUse
// and PostToolUse carry hook_event_name, cwd, tool_name and tool_use_id, the
// names touch-activity already reads. Its matcher is a regular expression,
// so "" (match every tool) rather than Claude's "*". Codex runs a new or
// changed non-managed hook only after the user trusted it in /hooks
// (codexNotes says so).
func codexFormat() hookFormat {
	return hookFormat{
		events:       []string{"PreToolUse", "PostToolUse"},
		grouped:      true,
		matcher:      "",
		typed:        true,
		timeoutScale: 1,
	}
}

// geminiFormat is Gemini CLI's settings.json hooks, as documented at
// https://geminicli.com/docs/hooks/reference (configuration schema: event →
// {matcher, hooks: [{name, type, command, timeout}]}, timeout in
// milliseconds, matcher a regular expression on the tool name). BeforeTool
// fires before a tool runs and AfterTool after it; both send
// hook_event_name, cwd and tool_name on stdin (no tool_use_id): they have
// PreToolUse (in-flight marker) and PostToolUse (activity) semantics, which
// touch-activity gives them (hook.eventAliases). The entry is named so `/hooks disable
// gyrum-touch-activity` and the hooks.disabled list can refer to it.
func geminiFormat() hookFormat {
	return hookFormat{
		events:       []string{"BeforeTool", "AfterTool"},
		grouped:      true,
		matcher:      ".*",
		name:         geminiHookName,
		typed:        true,
		timeoutScale: 1000,
	}
}

// geminiHookName is the "name" of our Gemini CLI hook entries.
const geminiHookName = "gyrum-touch-activity"

// cursorFormat is Cursor's hooks.json, as documented at
// https://cursor.com/docs/agent/hooks: {"version": 1, "hooks": {EVENT:
// [{"command": "...", "timeout": 5}]}}, a flat list of handlers per event
// (timeout in seconds), in ~/.cursor/hooks.json or <project>/.cursor/.
// preToolUse, postToolUse and postToolUseFailure are its generic tool
// hooks: they fire for every tool (Shell, Read, Write, MCP, Task, ...), so
// the narrower pairs beforeShellExecution/afterShellExecution and
// beforeMCPExecution/afterMCPExecution are not wired as well — they would
// run the hook twice for one call, the second time without a tool_use_id.
// The handlers of an event are listed flat, with no matcher groups (an
// entry without "matcher" runs for every tool), and the file carries
// "version": 1.
func cursorFormat() hookFormat {
	return hookFormat{
		events:       []string{"preToolUse", "postToolUse", "postToolUseFailure"},
		timeoutScale: 1,
		header:       []member{{"version", newNumber(1)}},
	}
}

// agentTarget returns the settings file and format of one of the other
// agents of Options.Agents.
func agentTarget(o Options, agent string) (hookTarget, error) {
	scope := func(projectDir, userDir, file string) string {
		if o.Project != "" {
			return filepath.Join(o.Project, projectDir, file)
		}
		return filepath.Join(userDir, file)
	}
	switch agent {
	case "codex":
		home := o.CodexHome
		if home == "" {
			home = filepath.Join(o.Home, ".codex")
		}
		f := codexFormat()
		return hookTarget{agent: agent, path: scope(".codex", home, "hooks.json"), install: f.install, uninstall: f.uninstall, notes: codexNotes(o)}, nil
	case "gemini":
		f := geminiFormat()
		return hookTarget{agent: agent, path: scope(".gemini", filepath.Join(o.Home, ".gemini"), "settings.json"), install: f.install, uninstall: f.uninstall, notes: geminiNotes}, nil
	case "cursor":
		f := cursorFormat()
		return hookTarget{agent: agent, path: scope(".cursor", filepath.Join(o.Home, ".cursor"), "hooks.json"), install: f.install, uninstall: f.uninstall}, nil
	default:
		return hookTarget{}, clikit.Usagef("--agents: unknown agent %q (want codex, gemini or cursor)", agent)
	}
}

// codexNotes returns what the user must do after setup wrote Codex's
// hooks.json: Codex records trust per hook definition, so a hook it has not
// seen (or one whose command changed) is skipped, silently, until the user
// trusts it (https://developers.openai.com/codex/hooks, "Review and trust
// hooks"); project hooks load only in a trusted project.
func codexNotes(o Options) func(path string, data []byte, changed bool) []string {
	return func(path string, data []byte, changed bool) []string {
		if !changed {
			return nil
		}
		msg := "Codex runs the gyrum hook only after you trust it: setup adds (or changes) it in " + path + ", and Codex skips a new or changed hook, without a word, until it is trusted.\n" +
			"Start codex: it lists new or changed hooks at startup; answer \"Trust all and continue\" (or open /hooks, review and trust the two gyrum entries, PreToolUse and PostToolUse).\n" +
			"Until then Codex's tool calls are no evidence of work, and warp shows its leases as unwired; `gyrum doctor` fails until they are trusted. setup never writes Codex's trust itself."
		if o.Project != "" {
			msg += "\nProject hooks load only in a project Codex trusts: trust " + o.Project + " when Codex asks."
		}
		return []string{msg}
	}
}

// geminiNotes reports settings in Gemini CLI's file that keep our hook from
// running (https://geminicli.com/docs/hooks, "Enable and disable the hooks
// system", "Disabled hooks configuration"): the hooks system turned off, or
// our entry in a disabled list. It only reads what is there.
func geminiNotes(path string, data []byte, _ bool) []string {
	doc, err := parseDocument(path, data)
	if err != nil || !doc.isObj {
		return nil
	}
	var off []string
	isFalse := func(n *node) bool { return n != nil && !n.isObj && !n.isArr && string(n.scalar) == "false" }
	for _, p := range [][2]string{{"hooksConfig", "enabled"}, {"tools", "enableHooks"}, {"hooks", "enabled"}} {
		if parent, _ := doc.get(p[0]); parent != nil && parent.isObj {
			if v, _ := parent.get(p[1]); isFalse(v) {
				off = append(off, fmt.Sprintf("%q is false (set it to true, or remove it)", p[0]+"."+p[1]))
			}
		}
	}
	for _, p := range []string{"hooks", "hooksConfig"} {
		parent, _ := doc.get(p)
		if parent == nil || !parent.isObj {
			continue
		}
		list, _ := parent.get("disabled")
		if list == nil || !list.isArr {
			continue
		}
		for _, e := range list.arr {
			if s, ok := e.str(); ok && (s == geminiHookName || IsHookCommand(s)) {
				off = append(off, fmt.Sprintf("%q lists %q (remove it, or run /hooks enable %s in gemini)", p+".disabled", s, geminiHookName))
			}
		}
	}
	if len(off) == 0 {
		return nil
	}
	return []string{"Gemini CLI will not run the gyrum hook: in " + path + " " + strings.Join(off, "; ") + ".\n" +
		"Until it runs, Gemini's tool calls are no evidence of work, and warp shows its leases as unwired."}
}
