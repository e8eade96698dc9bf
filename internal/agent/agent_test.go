package agent_test

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
)

func TestLookups(t *testing.T) {
	for _, c := range []struct {
		exe, want string
	}{
		{"claude.exe", "claude"}, {"claude", "claude"}, {"codex-linux-x64", "codex"}, {"gemini.js", "gemini"},
		{"cursor-agent", "cursor-agent"}, {"aider", "aider"}, {"opencode", "opencode"}, {".kilo", "kilo"}, {"pi", "pi"}, {"bash", ""}, {"node", ""},
	} {
		a, ok := agent.ByExecutable(c.exe)
		if a.Name != c.want || ok != (c.want != "") {
			t.Errorf("ByExecutable(%q) = %q, %v; want %q", c.exe, a.Name, ok, c.want)
		}
	}
	for script, want := range map[string]string{
		"/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js":          "claude",
		"/usr/local/lib/node_modules/@openai/codex/bin/codex.js":          "codex",
		"/home/u/.npm/lib/node_modules/@google/gemini-cli/dist/index.js":  "gemini",
		"/opt/venv/lib/python3.11/site-packages/aider/main.py":            "aider",
		"/opt/qwen/node_modules/@qwen-code/qwen-code/cli.js":              "qwen",
		"/usr/lib/node_modules/@kilocode/cli/bin/kilo":                    "kilo",
		"/usr/lib/node_modules/@mariozechner/pi-coding-agent/dist/cli.js": "pi",
	} {
		if a, _ := agent.ByPackage(script); a.Name != want {
			t.Errorf("ByPackage(%q) = %q, want %q", script, a.Name, want)
		}
	}
	for name, want := range map[string]string{"claude": "claude-code", "claude.exe": "claude-code", "gemini": "gemini-cli", "cursor-agent": "cursor", "opencode": "opencode", "bash": "agent"} {
		if got := agent.Product(name); got != want {
			t.Errorf("Product(%q) = %q, want %q", name, got, want)
		}
	}
	for event, want := range map[string]string{"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse", "postToolUseFailure": "PostToolUseFailure", "PostToolUse": "PostToolUse", "Stop": "Stop"} {
		if got := agent.Canonical(event); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", event, got, want)
		}
	}
	if agent.NoticeFor("postToolUse") != agent.NoticeTopLevel || agent.NoticeFor("PostToolUse") != agent.NoticeHookSpecific || agent.NoticeFor("AfterTool") != agent.NoticeHookSpecific {
		t.Error("notice shapes: want Cursor's top-level, Claude Code's and Gemini CLI's hook-specific")
	}
}

// Each agent is whole, and no name is claimed twice: a name that meant
// two agents would make the walk's answer depend on the list's order.
func TestAgentsAreConsistent(t *testing.T) {
	claudeEvents := map[string]bool{"PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true}
	seen := map[string]string{}
	for _, a := range agent.All() {
		if a.Name == "" || a.Product == "" || len(a.Executables) == 0 {
			t.Errorf("%+v: want a name, a product and executables", a)
		}
		for _, e := range append(append([]string(nil), a.Executables...), a.Packages...) {
			if other, dup := seen[e]; dup {
				t.Errorf("%q is claimed by %s and %s", e, other, a.Name)
			}
			seen[e] = a.Name
		}
		for own, canonical := range a.Events {
			if !claudeEvents[canonical] {
				t.Errorf("%s maps %q to %q, not one of Claude Code's tool events", a.Name, own, canonical)
			}
			if other, dup := seen["event:"+own]; dup {
				t.Errorf("event %q is claimed by %s and %s", own, other, a.Name)
			}
			seen["event:"+own] = a.Name
		}
	}
	if got := agent.Names(); len(got) != len(agent.All()) {
		t.Errorf("Names() = %v", got)
	}
}

// The variables agents hand their pids down in, and whose each is.
func TestPIDEnvs(t *testing.T) {
	got := agent.PIDEnvs()
	if len(got) == 0 || got[0] != "CLAUDE_PID" {
		t.Errorf("PIDEnvs() = %v, want CLAUDE_PID first", got)
	}
	for k, want := range map[string]string{"CLAUDE_PID": "claude", "OPENCODE_PID": "opencode", "KILO_PID": "kilo", "GEMINI_PID": ""} {
		if a, ok := agent.ByPIDEnv(k); a.Name != want || ok != (want != "") {
			t.Errorf("ByPIDEnv(%q) = %q, %v; want %q", k, a.Name, ok, want)
		}
	}
}
