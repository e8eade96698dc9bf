package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/setup"
)

// pluginAgent is an agent whose hook is a plugin file of gyrum's.
func pluginAgent(t *testing.T) agent.Agent {
	t.Helper()
	for _, a := range agent.Wired() {
		if a.Hooks.Plugin != nil {
			return a
		}
	}
	t.Fatal("no agent has a plugin hook")
	return agent.Agent{}
}

// wirePlugin runs the real setup --agents FLAG for the user's scope (or
// the project's) with gyrum binary bin.
func (h *host) wirePlugin(a agent.Agent, bin string, project bool) string {
	h.t.Helper()
	o := setup.Options{Binary: bin, Home: h.home, Watchdog: setup.WatchdogNone, Agents: []string{a.Hooks.Flag}}
	if project {
		o.Project = h.project
	}
	if _, err := setup.Run(context.Background(), o); err != nil {
		h.t.Fatal(err)
	}
	return a.Hooks.Path(o.Project, h.home, nil)
}

// gyrum's plugin file, as setup writes it, is current, and the hook
// command it names is self-tested (hook-run) even where no settings file
// names it: that is the command the agent runs at every tool call.
func TestPluginCurrentAndRun(t *testing.T) {
	a := pluginAgent(t)
	h := newHost(t, warpServer(t, nil))
	path := h.wirePlugin(a, h.bin, false)
	name := a.Hooks.Flag + "-plugin"
	wantStatus(t, h.run(), name, doctor.StatusOK, path+" is current and runs "+setup.HookCommand(h.bin))

	os.Remove(filepath.Join(h.home, ".claude", "settings.json"))
	rep := h.run()
	wantStatus(t, rep, "hook", doctor.StatusFail, "not wired")
	c := wantStatus(t, rep, "hook-run", doctor.StatusOK, "last-activity moved")
	if !strings.Contains(c.Detail, setup.HookCommand(h.bin)) || !strings.Contains(c.Detail, "timeout 5s") {
		t.Errorf("hook-run %q: want the plugin's command, with its 5 s", c.Detail)
	}
}

// A plugin file the user edited, or an older gyrum wrote, fails with the
// setup command that rewrites it; so does one whose gyrum is gone.
func TestPluginEditedOrStale(t *testing.T) {
	a := pluginAgent(t)
	h := newHost(t, warpServer(t, nil))
	path := h.wirePlugin(a, h.bin, false)
	name := a.Hooks.Flag + "-plugin"
	data, _ := os.ReadFile(path)
	os.WriteFile(path, append(data, "// mine\n"...), 0o644)
	c := wantStatus(t, h.run(), name, doctor.StatusFail, "differs from what this gyrum's setup writes")
	if c.Command != "gyrum setup --agents "+a.Hooks.Flag {
		t.Errorf("command %q", c.Command)
	}

	gone := script(t, "exit 0\n")
	h.wirePlugin(a, gone, false)
	os.Remove(gone)
	rep := h.run()
	c = wantStatus(t, rep, name, doctor.StatusFail, gone+" does not exist")
	if !strings.Contains(c.Fix, "gyrum setup --agents "+a.Hooks.Flag) {
		t.Errorf("fix %q", c.Fix)
	}
	if rep.OK {
		t.Error("a plugin whose gyrum is gone, but OK")
	}
}

// A project's plugin is checked as the project's, and its hook command is
// run only when it is this gyrum's (a repository can commit a file named
// like gyrum's that runs a program of its own).
func TestPluginInProject(t *testing.T) {
	a := pluginAgent(t)
	h := newHost(t, warpServer(t, nil))
	path := h.wirePlugin(a, h.bin, true)
	rep := h.run()
	wantStatus(t, rep, a.Hooks.Flag+"-plugin (project)", doctor.StatusOK, path)

	ran := filepath.Join(t.TempDir(), "ran")
	prog := filepath.Join(t.TempDir(), "gyrum-hook")
	os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755)
	os.Remove(path)
	os.WriteFile(path, a.Hooks.Plugin.Render(prog), 0o644)
	rep = h.run()
	wantStatus(t, rep, a.Hooks.Flag+"-plugin (project)", doctor.StatusOK, prog)
	if _, err := os.Stat(ran); err == nil {
		t.Error("doctor ran the repository's program")
	}
}

// A file there that is not gyrum's is not gyrum's business: no check.
func TestPluginNotOursIsNotChecked(t *testing.T) {
	a := pluginAgent(t)
	h := newHost(t, warpServer(t, nil))
	path := a.Hooks.Path("", h.home, nil)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("export const Mine = async () => ({})\n"), 0o644)
	for _, c := range h.run().Checks {
		if strings.HasPrefix(c.Name, a.Hooks.Flag+"-plugin") {
			t.Errorf("check %+v of a file that is not gyrum's", c)
		}
	}
}
