package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// checkAgentHooks checks, for every other agent `gyrum setup --agents`
// wires through a settings file (Codex, Gemini CLI, Cursor, Qwen Code,
// GitHub Copilot CLI), the user's file and the project's: one that holds
// a gyrum hook must hold it for every event setup wires, or the agent's
// calls are credited by halves (a start without its end leaves a marker
// until the in-flight limit; an end without its start holds nothing
// through a quiet step). A file without a hook of gyrum's was not set up
// and gets no check. It returns the hooks found, for the self-test, under
// Claude Code's event names.
func checkAgentHooks(o Options) ([]Check, []hookSettings) {
	var checks []Check
	var found []hookSettings
	for _, a := range agent.Wired() {
		h := a.Hooks
		if len(h.Events) == 0 {
			continue // a plugin of gyrum's own (plugin.go), not settings
		}
		paths := []string{h.Path("", o.Home, o.Getenv)}
		if o.Cwd != "" {
			paths = append(paths, h.Path(o.Cwd, o.Home, o.Getenv))
		}
		for i, path := range paths {
			c, hs, ok := checkAgentHookFile(o, a, path, i > 0)
			if !ok {
				continue
			}
			checks = append(checks, c)
			if hs != nil {
				found = append(found, *hs)
			}
		}
	}
	return checks, found
}

// checkAgentHookFile checks agent a's settings file at path (project:
// the project's, not the user's): ok false when it does not exist or
// holds none of gyrum's hooks; the hooks found, by canonical event, when
// it could read them.
func checkAgentHookFile(o Options, a agent.Agent, path string, project bool) (Check, *hookSettings, bool) {
	h := a.Hooks
	name := h.Flag + "-hook"
	fix := "gyrum setup --agents " + h.Flag
	if project {
		name += " (project)"
		fix += " --project " + shellquote.Quote(o.Cwd)
	}
	data, err := setup.ReadConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Check{}, nil, false
	}
	if err != nil {
		return Check{Name: name, Status: StatusFail, Detail: fmt.Sprintf("cannot read %s: %v", path, err), Fix: "make the file readable by this user"}, nil, true
	}
	byEvent, err := setup.AgentHookEntries(a, path, data)
	if err != nil {
		return Check{Name: name, Status: StatusFail, Detail: err.Error(),
			Fix: fmt.Sprintf("fix the file (%s cannot read it either), then run %s", a.Title, fix), Command: fix}, nil, true
	}
	if len(byEvent) == 0 {
		return Check{}, nil, false
	}
	canonical := map[string][]setup.HookEntry{}
	for ev, es := range byEvent {
		canonical[agent.Canonical(ev)] = append(canonical[agent.Canonical(ev)], es...)
	}
	hs := &hookSettings{byEvent: canonical, project: project}
	var missing []string
	for _, ev := range h.Events {
		if len(byEvent[ev]) == 0 {
			missing = append(missing, ev)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return Check{Name: name, Status: StatusFail,
			Detail: fmt.Sprintf("%s runs gyrum's hook for some events but not %s (in %s): its calls are credited by halves", a.Title, strings.Join(missing, ", "), path),
			Fix:    "run " + fix, Command: fix}, hs, true
	}
	return Check{Name: name, Status: StatusOK,
		Detail: fmt.Sprintf("gyrum's hook wired for %s's %s in %s", a.Title, strings.Join(h.Events, ", "), path)}, hs, true
}
