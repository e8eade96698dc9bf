package agent_test

import (
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
)

// Every plugin template is gyrum's (the marker on its first line) and has
// one place for the hook command; what Render makes of a command, Command
// reads back, whatever the command holds (quotes, backslashes, the line
// separators JavaScript does not allow in a literal).
func TestPluginTemplates(t *testing.T) {
	n := 0
	for _, a := range agent.All() {
		if a.Hooks == nil || a.Hooks.Plugin == nil {
			continue
		}
		n++
		p := a.Hooks.Plugin
		if strings.Count(p.Template, agent.PluginPlaceholder) != 1 {
			t.Errorf("%s: the template holds %s %d times, want once", a.Name, agent.PluginPlaceholder, strings.Count(p.Template, agent.PluginPlaceholder))
		}
		if !p.Ours([]byte(p.Template)) || a.Hooks.File == "" {
			t.Errorf("%s: the template's first line lacks %q, or the plugin has no file name", a.Name, agent.PluginMarker)
		}
		for _, cmd := range []string{"/opt/gyrum/bin/gyrum-hook", `'/a b/gyrum' touch-activity`, "/x\"y\\z/gyrum-hook", "/p\u2028q/gyrum-hook"} {
			data := p.Render(cmd)
			if strings.ContainsRune(string(data), '\u2028') {
				t.Errorf("%s: U+2028 in the file unescaped", a.Name)
			}
			got, current, ok := p.Command(data)
			if got != cmd || !current || !ok {
				t.Errorf("%s: Command(Render(%q)) = %q, %v, %v", a.Name, cmd, got, current, ok)
			}
			edited := strings.Replace(string(data), "\n", "\n// edited\n", 3)
			if got, current, ok := p.Command([]byte(edited)); got != cmd || current || !ok {
				t.Errorf("%s: Command(edited) = %q, %v, %v; want %q, not current", a.Name, got, current, ok, cmd)
			}
		}
		if got, current, ok := p.Command([]byte("// " + agent.PluginMarker + "\nnothing\n")); got != "" || current || ok {
			t.Errorf("%s: Command of a file with no command = %q, %v, %v", a.Name, got, current, ok)
		}
		if p.Ours([]byte("export const X = 1\n// " + agent.PluginMarker + "\n")) {
			t.Errorf("%s: a file with the marker below its first line counts as gyrum's", a.Name)
		}
	}
	if n == 0 {
		t.Error("no agent has a plugin")
	}
}
