package setup_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/setup"
)

// pluginAgents are the agents whose hook is a plugin file of gyrum's.
func pluginAgents(t *testing.T) []agent.Agent {
	var out []agent.Agent
	for _, a := range agent.Wired() {
		if a.Hooks.Plugin != nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		t.Fatal("no agent has a plugin hook")
	}
	return out
}

// userOptions are setup's options for the user's scope in home.
func userOptions(home string, getenv func(string) string, agents ...string) setup.Options {
	return setup.Options{Binary: testBinary, Home: home, Getenv: getenv, Watchdog: setup.WatchdogNone, Agents: agents,
		Now: func() time.Time { return fixedNow }}
}

// readOrEmpty returns path's content, nil when it is missing.
func readOrEmpty(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return data
}

// Each plugin agent's file, at user scope: written whole with the hook
// command in it, left alone by a second run, rewritten when gyrum moved,
// and removed by --uninstall with the directories only it filled, never
// the home's .config.
func TestPluginLifecycle(t *testing.T) {
	for _, a := range pluginAgents(t) {
		t.Run(a.Hooks.Flag, func(t *testing.T) {
			ctx := context.Background()
			home := t.TempDir()
			path := a.Hooks.Path("", home, nil)
			o := userOptions(home, nil, a.Hooks.Flag)
			rep, err := setup.Run(ctx, o)
			if err != nil || !rep.Changed {
				t.Fatalf("install: changed %v, err %v", rep.Changed, err)
			}
			got := readOrEmpty(t, path)
			want := a.Hooks.Plugin.Render(setup.HookCommand(testBinary))
			if !bytes.Equal(got, want) {
				t.Fatalf("%s:\n%s\nwant:\n%s", path, got, want)
			}
			if cmd, current, ok := a.Hooks.Plugin.Command(got); !ok || !current || cmd != setup.HookCommand(testBinary) {
				t.Errorf("Command() = %q, %v, %v; want the hook command, current", cmd, current, ok)
			}
			if !strings.Contains(string(got), `"`+testBinary+` touch-activity"`) || strings.Contains(string(got), agent.PluginPlaceholder) {
				t.Errorf("the hook command is not in %s:\n%s", path, got)
			}
			if rep, err := setup.Run(ctx, o); err != nil || rep.Changed {
				t.Errorf("second install: changed %v, err %v", rep.Changed, err)
			}

			// gyrum moved: the file is rewritten with the new path, with
			// no backup (it held only gyrum's own).
			moved := o
			moved.Binary = "/opt/new/gyrum"
			if _, err := setup.Run(ctx, moved); err != nil {
				t.Fatal(err)
			}
			if got := readOrEmpty(t, path); !bytes.Equal(got, a.Hooks.Plugin.Render(setup.HookCommand("/opt/new/gyrum"))) {
				t.Errorf("after the move:\n%s", got)
			}
			if baks, _ := filepath.Glob(path + ".bak-*"); len(baks) != 0 {
				t.Errorf("backups of gyrum's own file: %v", baks)
			}

			un := o
			un.Uninstall = true
			if rep, err := setup.Run(ctx, un); err != nil || !rep.Changed {
				t.Fatalf("uninstall: changed %v, err %v", rep.Changed, err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s left after uninstall (%v)", path, err)
			}
			for d := filepath.Dir(path); d != home; d = filepath.Dir(d) {
				_, err := os.Stat(d)
				if filepath.Base(d) == ".config" {
					if err != nil {
						t.Errorf("%s removed: %v", d, err)
					}
					continue
				}
				if !os.IsNotExist(err) {
					t.Errorf("%s left after uninstall, empty (%v)", d, err)
				}
			}
			if rep, err := setup.Run(ctx, un); err != nil || rep.Changed {
				t.Errorf("second uninstall: changed %v, err %v", rep.Changed, err)
			}
		})
	}
}

// Where the file goes: the directory the agent's own variable names (pi's
// $PI_CODING_AGENT_DIR), else $XDG_CONFIG_HOME when the agent reads its
// user plugins from there, the project's directory with --project.
func TestPluginPaths(t *testing.T) {
	for _, a := range pluginAgents(t) {
		t.Run(a.Hooks.Flag, func(t *testing.T) {
			ctx := context.Background()
			home, xdg, own := t.TempDir(), t.TempDir(), t.TempDir()
			getenv := func(k string) string {
				switch {
				case k == "XDG_CONFIG_HOME":
					return xdg
				case k == a.Hooks.HomeEnv:
					return own
				}
				return ""
			}
			if _, err := setup.Run(ctx, userOptions(home, getenv, a.Hooks.Flag)); err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(home, a.Hooks.UserDir, a.Hooks.File)
			switch {
			case a.Hooks.HomeEnv != "":
				want = filepath.Join(own, a.Hooks.File)
			case a.Hooks.ConfigHomeDir != "":
				want = filepath.Join(xdg, a.Hooks.ConfigHomeDir, a.Hooks.File)
			}
			if !a.Hooks.Plugin.Ours(readOrEmpty(t, want)) {
				t.Errorf("no plugin at %s", want)
			}

			dir := t.TempDir()
			o := hookOptions(dir)
			o.Agents = []string{a.Hooks.Flag}
			if _, err := setup.Run(ctx, o); err != nil {
				t.Fatal(err)
			}
			if p := filepath.Join(dir, a.Hooks.ProjectDir, a.Hooks.File); !a.Hooks.Plugin.Ours(readOrEmpty(t, p)) {
				t.Errorf("no plugin at %s", p)
			}
		})
	}
}

// A plugin file the user edited is gyrum's still (its first line): install
// puts gyrum's back and keeps the edit in a backup, and so does uninstall
// as it removes it.
func TestPluginEdited(t *testing.T) {
	a := pluginAgents(t)[0]
	ctx := context.Background()
	dir := t.TempDir()
	o := hookOptions(dir)
	o.Agents = []string{a.Hooks.Flag}
	if _, err := setup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	path := a.Hooks.Path(dir, "", nil)
	edited := append(readOrEmpty(t, path), "\n// my own line\n"...)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if cmd, current, ok := a.Hooks.Plugin.Command(edited); !ok || current || cmd != setup.HookCommand(testBinary) {
		t.Errorf("Command(edited) = %q, %v, %v; want the command, not current", cmd, current, ok)
	}
	var out bytes.Buffer
	dry := o
	dry.DryRun, dry.Out = true, &out
	if _, err := setup.Run(ctx, dry); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "would update "+path) || !strings.Contains(out.String(), "-// my own line") || !strings.Contains(out.String(), "a backup keeps it") {
		t.Errorf("dry run:\n%s", out.String())
	}
	if got := readOrEmpty(t, path); !bytes.Equal(got, edited) {
		t.Error("the dry run changed the file")
	}
	rep, err := setup.Run(ctx, o)
	if err != nil || len(rep.Backups) != 1 {
		t.Fatalf("install over the edit: backups %v, err %v", rep.Backups, err)
	}
	if got := readOrEmpty(t, rep.Backups[0]); !bytes.Equal(got, edited) {
		t.Errorf("backup %s holds\n%s", rep.Backups[0], got)
	}
	if got := readOrEmpty(t, path); !bytes.Equal(got, a.Hooks.Plugin.Render(setup.HookCommand(testBinary))) {
		t.Errorf("not rewritten:\n%s", got)
	}

	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	un := o
	un.Uninstall = true
	un.Now = func() time.Time { return fixedNow.Add(time.Hour) }
	rep, err = setup.Run(ctx, un)
	if err != nil || len(rep.Backups) != 1 {
		t.Fatalf("uninstall of the edited file: backups %v, err %v", rep.Backups, err)
	}
	if got := readOrEmpty(t, rep.Backups[0]); !bytes.Equal(got, edited) {
		t.Errorf("backup %s holds\n%s", rep.Backups[0], got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s left (%v)", path, err)
	}
}

// A file of that name that is not gyrum's (no marker on its first line):
// install refuses it and changes nothing at all (not even Claude Code's
// settings); uninstall leaves it and says so.
func TestPluginNotOurs(t *testing.T) {
	a := pluginAgents(t)[0]
	ctx := context.Background()
	dir := t.TempDir()
	path := a.Hooks.Path(dir, "", nil)
	theirs := []byte("// a plugin of the user's own, by chance named like gyrum's\nexport const Mine = async () => ({})\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	o := hookOptions(dir)
	o.Agents = []string{a.Hooks.Flag}
	_, err := setup.Run(ctx, o)
	if err == nil || !strings.Contains(err.Error(), path+" exists and is not gyrum's") || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("err = %v, want the refusal naming %s", err, path)
	}
	if got := readOrEmpty(t, path); !bytes.Equal(got, theirs) {
		t.Error("their file was changed")
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("Claude Code's settings written despite the refusal (%v)", err)
	}

	un := o
	un.Uninstall = true
	rep, err := setup.Run(ctx, un)
	if err != nil {
		t.Fatal(err)
	}
	if got := readOrEmpty(t, path); !bytes.Equal(got, theirs) {
		t.Error("uninstall removed or changed their file")
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, path+" is not gyrum's plugin") {
		t.Errorf("warnings %q, want one saying %s was left", rep.Warnings, path)
	}
}

// A plugin directory that cannot be written (here a file stands where a
// directory of its path should be, which stops root too): setup says which
// and why before it changes anything.
func TestPluginDirUnwritable(t *testing.T) {
	a := pluginAgents(t)[0]
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, strings.SplitN(filepath.ToSlash(a.Hooks.ProjectDir), "/", 2)[0])
	if err := os.WriteFile(root, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := hookOptions(dir)
	o.Agents = []string{a.Hooks.Flag}
	_, err := setup.Run(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "cannot write gyrum's "+a.Title+" plugin") || !strings.Contains(err.Error(), root+" is not a directory") {
		t.Errorf("err = %v, want the refusal naming %s", err, root)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("Claude Code's settings written despite the refusal (%v)", err)
	}

	// Without root a directory of mode 0555 is the same refusal.
	if os.Geteuid() == 0 {
		return
	}
	os.Remove(root)
	if err := os.Mkdir(root, 0o555); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Run(ctx, o); err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Errorf("err = %v, want the refusal of %s", err, root)
	}
}

// The dry run shows the file it would write, whole, and writes nothing.
func TestPluginDryRun(t *testing.T) {
	a := pluginAgents(t)[0]
	home := t.TempDir()
	var out bytes.Buffer
	o := userOptions(home, nil, a.Hooks.Flag)
	o.DryRun, o.Out = true, &out
	if _, err := setup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	path := a.Hooks.Path("", home, nil)
	for _, want := range []string{"would create " + path, "+const command = \"" + testBinary + " touch-activity\"", "dry run: nothing was changed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote %s", path)
	}
}
