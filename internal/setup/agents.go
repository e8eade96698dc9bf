package setup

import (
	"github.com/gyrum-labs/warp/internal/agent"
)

// Agents returns the names Options.Agents accepts: the agents package
// agent knows how to wire besides Claude Code.
func Agents() []string {
	var out []string
	for _, a := range agent.Wired() {
		out = append(out, a.Hooks.Flag)
	}
	return out
}

// formatOf is the hook format of an agent's settings file.
func formatOf(h *agent.Hooks) hookFormat {
	f := hookFormat{events: h.Events, grouped: h.Grouped, matcher: h.Matcher, name: h.Name, typed: h.Typed, timeoutScale: h.TimeoutScale}
	if h.Version != 0 {
		f.header = []member{{"version", newNumber(h.Version)}}
	}
	return f
}

// defaultFormat is the hooks format of the agent setup always wires
// (agent.Default: Claude Code's settings.json).
func defaultFormat() hookFormat { return formatOf(agent.Default().Hooks) }

// agentTarget returns the settings file and format of agent a.
func agentTarget(o Options, a agent.Agent) hookTarget {
	h := a.Hooks
	f := formatOf(h)
	t := hookTarget{agent: a.Name, title: a.Title, path: h.Path(o.Project, o.Home, o.Getenv), install: f.install, uninstall: f.uninstall}
	if h.Flag != "" {
		t.agent = h.Flag
	}
	if h.Plugin != nil {
		t.plugin = h.Plugin
		t.pluginDirs = pluginDirs(t.path, pluginRel(h, t.path))
	}
	if len(f.header) > 0 {
		// A file left with its header alone held nothing but gyrum's
		// hooks: it goes, as a file that holds nothing does.
		t.uninstall = func(path string, data []byte) ([]byte, bool, error) {
			out, changed, err := f.uninstall(path, data)
			if err == nil && changed && f.headerOnly(out) {
				return []byte("{}\n"), true, nil
			}
			return out, changed, err
		}
	}
	if h.Announce {
		// The hook cannot tell this agent from its payload: say it.
		t.install = func(path string, data []byte, command string) ([]byte, bool, error) {
			return f.install(path, data, AnnouncedCommand(command, h.Flag))
		}
	}
	if h.Notes != nil {
		t.notes = func(path string, data []byte, changed bool) []string {
			return h.Notes(agent.NoteInput{Path: path, Data: data, Changed: changed, Project: o.Project, IsHookCommand: IsHookCommand})
		}
	}
	return t
}
