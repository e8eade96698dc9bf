package doctor

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// pluginFile is gyrum's plugin file of an agent whose hooks are code
// (agent.Plugin), as doctor found it.
type pluginFile struct {
	a       agent.Agent
	path    string
	project string // the project's directory, "" for the user's plugin
	// command is the hook command it runs ("" when none can be read);
	// current, whether it is exactly what setup writes for that command.
	command string
	current bool
}

// pluginFiles returns gyrum's plugin files of every agent whose hooks are
// code, in the user's plugin directory and, with o.Cwd, the project's. A
// missing file, or one that is not gyrum's, is not set up and gets
// nothing; an unreadable one is reported as problem.
func pluginFiles(o Options) (files []pluginFile, problems []Check) {
	for _, a := range agent.Wired() {
		h := a.Hooks
		if h.Plugin == nil {
			continue
		}
		paths := []string{h.Path("", o.Home, o.Getenv)}
		if o.Cwd != "" {
			paths = append(paths, h.Path(o.Cwd, o.Home, o.Getenv))
		}
		for i, path := range paths {
			data, err := setup.ReadConfig(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				problems = append(problems, Check{Name: pluginCheckName(a, i > 0), Status: StatusFail,
					Detail: fmt.Sprintf("cannot read %s: %v", path, err), Fix: "make the file readable by this user"})
				continue
			}
			if !h.Plugin.Ours(data) {
				continue
			}
			f := pluginFile{a: a, path: path}
			if i > 0 {
				f.project = o.Cwd
			}
			f.command, f.current, _ = h.Plugin.Command(data)
			files = append(files, f)
		}
	}
	return files, problems
}

func pluginCheckName(a agent.Agent, project bool) string {
	name := a.Hooks.Flag + "-plugin"
	if project {
		name += " (project)"
	}
	return name
}

// checkPlugins checks each of gyrum's plugin files: it names a hook
// command whose program exists, and it is what this gyrum's setup writes
// (an edited file, or one of another gyrum, may not feed the hook as
// this gyrum's does).
func checkPlugins(files []pluginFile, problems []Check) []Check {
	out := problems
	for _, f := range files {
		c := Check{Name: pluginCheckName(f.a, f.project != "")}
		fix := "gyrum setup --agents " + f.a.Hooks.Flag
		if f.project != "" {
			fix += " --project " + shellquote.Quote(f.project)
		}
		switch {
		case f.command == "":
			c.Status, c.Detail = StatusFail, fmt.Sprintf("gyrum's %s plugin %s names no hook command: %s loads it, and it records nothing", f.a.Title, f.path, f.a.Title)
			c.Fix, c.Command = "run "+fix+" (it rewrites the file)", fix
		default:
			bin, _ := setup.HookBinary(f.command)
			if _, err := resolveProgram(bin); err != nil {
				c.Status, c.Detail = StatusFail, fmt.Sprintf("gyrum's %s plugin %s runs %q, which cannot run: %v", f.a.Title, f.path, f.command, err)
				c.Fix, c.Command = "run "+fix+" with the gyrum you use now: it rewrites the plugin with that binary's path", fix
				break
			}
			if !f.current {
				c.Status, c.Detail = StatusFail, fmt.Sprintf("gyrum's %s plugin %s differs from what this gyrum's setup writes (edited, or written by another gyrum)", f.a.Title, f.path)
				c.Fix, c.Command = "run "+fix+" (it rewrites the file, keeping a backup of this one)", fix
				break
			}
			c.Status, c.Detail = StatusOK, fmt.Sprintf("gyrum's %s plugin %s is current and runs %s at every tool call's start and end", f.a.Title, f.path, f.command)
		}
		out = append(out, c)
	}
	return out
}

// pluginHooks returns the hook commands of the plugin files, for the
// self-test (hook-run): each as a PostToolUse entry with the timeout the
// plugin gives it.
func pluginHooks(files []pluginFile) []hookSettings {
	var out []hookSettings
	for _, f := range files {
		if f.command == "" {
			continue
		}
		e := setup.HookEntry{Command: f.command, Timeout: setup.HookTimeoutSecs}
		out = append(out, hookSettings{byEvent: map[string][]setup.HookEntry{"PostToolUse": {e}}, project: f.project != ""})
	}
	return out
}
