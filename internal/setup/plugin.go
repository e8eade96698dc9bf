package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gyrum-labs/warp/internal/agent"
)

// Plugin files. An agent whose hooks are code (agent.Plugin: opencode, Kilo
// CLI, pi) gets a file of gyrum's own in its plugin directory instead of
// entries merged into a settings file. The file is gyrum's whole: install
// writes it (the hook command substituted), rewrites one that differs
// (edited, or from another gyrum) after a backup, and refuses a file of
// that name that is not gyrum's; uninstall removes gyrum's file (an edited
// one after a backup), then the directories that removal left empty, and
// leaves a file that is not gyrum's where it is.

// planPlugin plans the install (or removal) of t's plugin file. notes are
// for Report.Warnings.
func planPlugin(o Options, t hookTarget, command string) (steps []step, notes []string, err error) {
	p := t.plugin
	old, existed, err := readFile(t.path)
	if errors.Is(err, syscall.ENOTDIR) {
		// A file where a directory of the path should be: no plugin there
		// (writableDir says what stands in the way of one).
		old, existed, err = nil, false, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", t.path, err)
	}
	ours := existed && p.Ours(old)
	now := o.Now()
	if o.Uninstall {
		return planPluginRemoval(t, old, existed, ours, now)
	}
	if existed && !ours {
		return nil, nil, fmt.Errorf("%s exists and is not gyrum's %s plugin (its first line has no %q): gyrum setup leaves it; move it away and run gyrum setup again",
			t.path, t.title, agent.PluginMarker)
	}
	want := p.Render(command)
	if existed && bytes.Equal(old, want) {
		return nil, nil, nil
	}
	if err := writableDir(filepath.Dir(t.path)); err != nil {
		return nil, nil, fmt.Errorf("cannot write gyrum's %s plugin %s: %w", t.title, t.path, err)
	}
	verb, what := "create", "gyrum's "+t.title+" plugin, which runs the gyrum touch-activity hook"
	backup := false
	if existed {
		verb = "update"
		if _, current, _ := p.Command(old); !current {
			// Edited, or another gyrum's: what it holds may be wanted.
			// One that only named another gyrum binary is not.
			what += " (the file there differs from what gyrum setup writes: a backup keeps it)"
			backup = true
		}
	}
	edit := fileEdit{Path: t.path, Old: old, New: want, Existed: existed, Perm: 0o644, Backup: backup}
	steps = append(steps, step{
		describe: fmt.Sprintf("%s %s: %s", verb, t.path, what),
		diff:     unifiedDiff(t.path, old, want, existed),
		apply: func(context.Context) (string, error) {
			b, err := edit.apply(now)
			if b != "" {
				return "backup " + b, err
			}
			return "", err
		},
	})
	return steps, nil, nil
}

// planPluginRemoval plans the removal of t's plugin file (old, as read):
// gyrum's only, a backup first when it was edited, then the directories
// it alone filled.
func planPluginRemoval(t hookTarget, old []byte, existed, ours bool, now time.Time) ([]step, []string, error) {
	if !existed {
		return nil, nil, nil
	}
	if !ours {
		return nil, []string{fmt.Sprintf("%s is not gyrum's plugin (its first line has no %q): left as it is", t.path, agent.PluginMarker)}, nil
	}
	_, current, _ := t.plugin.Command(old)
	what := "remove " + t.path + ": gyrum's " + t.title + " plugin"
	if !current {
		what += " (it differs from what gyrum setup writes: a backup keeps it)"
	}
	dirs := t.pluginDirs
	return []step{{
		describe: what,
		diff:     unifiedDiff(t.path, old, nil, true),
		apply: func(context.Context) (string, error) {
			backup := ""
			if !current {
				b, err := writeBackup(t.path, old, now)
				if err != nil {
					return "", err
				}
				backup = "backup " + b
			}
			if err := removePluginFile(t.path, old); err != nil {
				return backup, err
			}
			for _, d := range dirs { // innermost first; a directory not empty stays
				if os.Remove(d) != nil {
					break
				}
			}
			return backup, nil
		},
	}}, nil, nil
}

// removePluginFile removes path, unless it changed since it was read as
// old (the agent's user saved it meanwhile).
func removePluginFile(path string, old []byte) error {
	cur, existed, err := readFile(path)
	if err != nil {
		return fmt.Errorf("read %s again: %w", path, err)
	}
	if !existed {
		return nil
	}
	if !bytes.Equal(cur, old) {
		return fmt.Errorf("%s changed while gyrum setup ran (another program saved it): it was left as it is; run gyrum setup again", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writableDir checks that dir can be made (when missing) and written: its
// nearest existing ancestor is a directory this user may write. The check
// comes before any step runs, so that a plugin directory setup cannot
// write leaves every other file as it was.
func writableDir(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		switch {
		case err == nil && !st.IsDir():
			return fmt.Errorf("%s is not a directory", d)
		case err == nil:
			if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("directory %s is not writable: %w", d, err)
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		}
		if filepath.Dir(d) == d {
			return fmt.Errorf("no directory of %s exists", dir)
		}
	}
}

// pluginDirs returns the directories of a plugin file at path that its
// removal may leave empty, innermost first: those the agent's plugin
// directory (rel, relative to its root) adds, "opencode/plugins" giving
// <root>/opencode/plugins and <root>/opencode; never a home's .config.
func pluginDirs(path, rel string) []string {
	var out []string
	d := filepath.Dir(path)
	for rel = filepath.Clean(rel); rel != "." && rel != "/" && rel != "" && rel != ".config"; rel = filepath.Dir(rel) {
		out = append(out, d)
		d = filepath.Dir(d)
	}
	return out
}

// pluginRel returns the directory, relative to its root, that holds the
// plugin file of h at path: ProjectDir, ConfigHomeDir or UserDir (or the
// directory $HomeEnv names), whichever path ends in, with the directory of
// File in it (pi's "extensions/gyrum.ts").
func pluginRel(h *agent.Hooks, path string) string {
	dir := filepath.ToSlash(filepath.Dir(path))
	sub := filepath.Dir(h.File)
	for i, root := range []string{h.ProjectDir, h.ConfigHomeDir, h.UserDir, ""} {
		if root == "" && i < 3 {
			continue // not this agent's; "" last: $HomeEnv itself
		}
		rel := filepath.Clean(filepath.Join(root, sub))
		if rel != "." && strings.HasSuffix(dir, "/"+filepath.ToSlash(rel)) {
			return rel
		}
	}
	return ""
}
