package setup

import (
	"path/filepath"
	"strings"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/clikit"
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

// claudeFormat is Claude Code's settings.json hooks.
func claudeFormat() hookFormat {
	a, _ := agent.ByName("claude")
	return formatOf(a.Hooks)
}

// agentTarget returns the settings file and format of one of the other
// agents of Options.Agents.
func agentTarget(o Options, flag string) (hookTarget, error) {
	a, ok := agent.ByFlag(flag)
	if !ok {
		return hookTarget{}, clikit.Usagef("--agents: unknown agent %q (want %s)", flag, strings.Join(Agents(), ", "))
	}
	h := a.Hooks
	path := filepath.Join(o.Home, h.UserDir, h.File)
	switch {
	case o.Project != "":
		path = filepath.Join(o.Project, h.ProjectDir, h.File)
	case h.HomeEnv != "" && o.Getenv != nil && o.Getenv(h.HomeEnv) != "":
		path = filepath.Join(o.Getenv(h.HomeEnv), h.File)
	}
	f := formatOf(h)
	t := hookTarget{agent: flag, path: path, install: f.install, uninstall: f.uninstall}
	if h.Notes != nil {
		t.notes = func(path string, data []byte, changed bool) []string {
			return h.Notes(agent.NoteInput{Path: path, Data: data, Changed: changed, Project: o.Project, IsHookCommand: IsHookCommand})
		}
	}
	return t, nil
}
