package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// geminiCLI is Google's Gemini CLI (docs/agents/gemini-cli.md): a node
// script (`gemini`, bundle/gemini.js) that relaunches itself as a node
// child. Its hooks are BeforeTool and AfterTool, with no tool_use_id; it
// reads Claude Code's output shape.
var geminiCLI = Agent{
	Name:         "gemini",
	Product:      "gemini-cli",
	Title:        "Gemini CLI",
	Instructions: "GEMINI.md",
	ShellTool:    "run_shell_command",
	Executables:  []string{"gemini", "gemini.js"},
	Packages:     []string{"@google/gemini-cli/"},
	Events:       map[string]string{"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse"},
	Notice:       NoticeHookSpecific,
	// settings.json hooks, as documented at
	// https://geminicli.com/docs/hooks/reference: event → {matcher, hooks:
	// [{name, type, command, timeout}]}, timeout in milliseconds, matcher
	// a regular expression on the tool name. The entry is named so
	// `/hooks disable gyrum-touch-activity` and the hooks.disabled list
	// can refer to it.
	Hooks: &Hooks{
		Flag:    "gemini",
		Events:  []string{"BeforeTool", "AfterTool"},
		Grouped: true, Matcher: ".*", Name: GeminiHookName, Typed: true, TimeoutScale: 1000,
		ProjectDir: ".gemini", UserDir: ".gemini", File: "settings.json",
		Notes: geminiNotes,
	},
}

// GeminiHookName is the "name" of gyrum's Gemini CLI hook entries.
const GeminiHookName = "gyrum-touch-activity"

// geminiNotes reports settings in Gemini CLI's file that keep gyrum's hook
// from running (https://geminicli.com/docs/hooks, "Enable and disable the
// hooks system", "Disabled hooks configuration"): the hooks system turned
// off, or our entry in a disabled list. It only reads what is there.
func geminiNotes(in NoteInput) []string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(in.Data, &doc) != nil {
		return nil
	}
	section := func(name string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if raw, ok := doc[name]; ok && json.Unmarshal(raw, &m) == nil {
			return m
		}
		return nil
	}
	var off []string
	for _, p := range [][2]string{{"hooksConfig", "enabled"}, {"tools", "enableHooks"}, {"hooks", "enabled"}} {
		if v, ok := section(p[0])[p[1]]; ok && string(bytes.TrimSpace(v)) == "false" {
			off = append(off, fmt.Sprintf("%q is false (set it to true, or remove it)", p[0]+"."+p[1]))
		}
	}
	for _, p := range []string{"hooks", "hooksConfig"} {
		var list []json.RawMessage
		if json.Unmarshal(section(p)["disabled"], &list) != nil {
			continue
		}
		for _, e := range list {
			var s string
			if json.Unmarshal(e, &s) == nil && (s == GeminiHookName || in.IsHookCommand != nil && in.IsHookCommand(s)) {
				off = append(off, fmt.Sprintf("%q lists %q (remove it, or run /hooks enable %s in gemini)", p+".disabled", s, GeminiHookName))
			}
		}
	}
	if len(off) == 0 {
		return nil
	}
	return []string{"Gemini CLI will not run the gyrum hook: in " + in.Path + " " + strings.Join(off, "; ") + ".\n" +
		"Until it runs, Gemini's tool calls are no evidence of work, and warp shows its leases as unwired."}
}
