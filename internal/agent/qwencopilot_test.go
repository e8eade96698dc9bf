package agent_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
)

// Qwen Code and GitHub Copilot CLI as the process walk, the hook and
// setup see them (measured: docs/agents/qwen-code.md, copilot-cli.md).
func TestQwenAndCopilot(t *testing.T) {
	for exe, want := range map[string]string{"qwen": "qwen", "copilot": "copilot", "MainThread": "", "cli.js": "", "npm-loader.js": ""} {
		if a, _ := agent.ByExecutable(exe); a.Name != want {
			t.Errorf("ByExecutable(%q) = %q, want %q", exe, a.Name, want)
		}
	}
	for script, want := range map[string]string{
		"/usr/lib/node_modules/@qwen-code/qwen-code/cli.js":       "qwen",
		"/usr/lib/node_modules/@qwen-code/qwen-code/cli-entry.js": "qwen",
		// Copilot's launcher is not the agent: its native child is.
		"/usr/lib/node_modules/@github/copilot/npm-loader.js": "",
	} {
		if a, _ := agent.ByPackage(script); a.Name != want {
			t.Errorf("ByPackage(%q) = %q, want %q", script, a.Name, want)
		}
	}
	for name, want := range map[string]string{"qwen": "qwen-code", "copilot": "copilot-cli"} {
		if got := agent.Product(name); got != want {
			t.Errorf("Product(%q) = %q, want %q", name, got, want)
		}
	}

	q, ok := agent.ByFlag("qwen")
	if !ok || q.Name != "qwen" || q.Hooks.Announce || q.Notice != agent.NoticeHookSpecific {
		t.Fatalf("ByFlag(qwen) = %+v, %v", q, ok)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		project string
		env     map[string]string
		want    string
	}{
		{"", nil, "/home/u/.qwen/settings.json"},
		{"", map[string]string{"QWEN_HOME": "/q"}, "/q/settings.json"},
		{"/p", map[string]string{"QWEN_HOME": "/q"}, "/p/.qwen/settings.json"},
	} {
		if got := q.Hooks.Path(c.project, "/home/u", env(c.env)); got != c.want {
			t.Errorf("qwen Path(%q, %v) = %s, want %s", c.project, c.env, got, c.want)
		}
	}

	c, ok := agent.ByFlag("copilot")
	if !ok || c.Name != "copilot" || !c.Hooks.Announce || c.Notice != agent.NoticeAdditionalContext || c.Hooks.Version != 1 || c.Hooks.Grouped {
		t.Fatalf("ByFlag(copilot) = %+v, %v", c, ok)
	}
	for _, cc := range []struct {
		project string
		env     map[string]string
		want    string
	}{
		{"", nil, "/home/u/.copilot/hooks/gyrum.json"},
		{"", map[string]string{"COPILOT_HOME": "/c"}, "/c/hooks/gyrum.json"},
		{"/p", nil, "/p/.github/hooks/gyrum.json"},
	} {
		if got := c.Hooks.Path(cc.project, "/home/u", env(cc.env)); got != cc.want {
			t.Errorf("copilot Path(%q, %v) = %s, want %s", cc.project, cc.env, got, cc.want)
		}
	}
	if got := c.Hooks.Files("/p", "/home/u", nil); len(got) != 2 || got[1] != filepath.FromSlash("/p/.github/hooks/gyrum.json") {
		t.Errorf("copilot Files = %v", got)
	}
	// Copilot sends Claude Code's event names: they stay Claude Code's,
	// whose output shape is the default; the agent is told by --agent.
	if agent.NoticeFor("PostToolUse") != agent.NoticeHookSpecific {
		t.Error("PostToolUse must keep Claude Code's notice shape")
	}
}

func TestQwenNotes(t *testing.T) {
	q, _ := agent.ByFlag("qwen")
	for _, c := range []struct {
		data    string
		project string
		want    []string
	}{
		{`{"hooks":{}}`, "", nil},
		{`{"disableAllHooks": true, "hooks":{}}`, "", []string{"disableAllHooks"}},
		{`{"disableAllHooks": false}`, "", nil},
		{`not json`, "", nil},
		{`{"hooks":{}}`, "/p", []string{"folder trust"}},
		{`{"disableAllHooks": true}`, "/p", []string{"disableAllHooks", "folder trust"}},
	} {
		got := q.Hooks.Notes(agent.NoteInput{Path: "/x/settings.json", Data: []byte(c.data), Changed: true, Project: c.project})
		if len(got) != len(c.want) {
			t.Errorf("notes for %s (project %q) = %q, want %d", c.data, c.project, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("note %d for %s = %q, want it to mention %q", i, c.data, got[i], w)
			}
		}
	}
	cp, _ := agent.ByFlag("copilot")
	if n := cp.Hooks.Notes(agent.NoteInput{Path: "/p/.github/hooks/gyrum.json", Changed: true, Project: "/p"}); len(n) != 1 || !strings.Contains(n[0], "trust") {
		t.Errorf("copilot project notes = %q", n)
	}
	if n := cp.Hooks.Notes(agent.NoteInput{Path: "/h/.copilot/hooks/gyrum.json", Changed: true}); len(n) != 0 {
		t.Errorf("copilot user notes = %q, want none: user hooks run without trust", n)
	}
}
