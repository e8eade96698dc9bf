package setup_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/setup"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ (review them before committing)")

// testBinary is the gyrum path the golden files are written with.
const testBinary = "/opt/gyrum/bin/gyrum"

var fixedNow = time.Date(2026, 5, 6, 12, 30, 0, 0, time.UTC)

// hookOptions returns Options that touch only the Claude settings of a
// project under dir: no schedule.
func hookOptions(dir string) setup.Options {
	return setup.Options{
		Binary:   testBinary,
		Home:     filepath.Join(dir, "home"),
		Project:  dir,
		Watchdog: setup.WatchdogNone,
		Now:      func() time.Time { return fixedNow },
	}
}

// writeSettings puts data at dir/.claude/settings.json (nil: no file).
func writeSettings(t *testing.T, dir string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, ".claude", "settings.json")
	if data == nil {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func readGolden(t *testing.T, path string, got []byte) []byte {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it, then review it)", err)
	}
	return want
}

func TestClaudeSettingsGolden(t *testing.T) {
	cases := []struct {
		name    string // testdata/claude/NAME.json; "missing" has no input file
		changes bool   // install changes the file
	}{
		{"missing", true},
		{"empty", true},
		{"blank", true},
		{"permissions-env", true},
		{"other-hooks", true},
		{"already-present", false},
		{"old-path", true},
		{"duplicates", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			var input []byte
			if tc.name != "missing" {
				var err error
				if input, err = os.ReadFile(filepath.Join("testdata", "claude", tc.name+".json")); err != nil {
					t.Fatal(err)
				}
			}
			path := writeSettings(t, dir, input)
			o := hookOptions(dir)

			rep, err := setup.Run(ctx, o)
			if err != nil {
				t.Fatalf("install: %v", err)
			}
			if rep.Changed != tc.changes {
				t.Errorf("install changed = %v, want %v", rep.Changed, tc.changes)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := readGolden(t, filepath.Join("testdata", "claude", tc.name+".golden"), got)
			if !bytes.Equal(got, want) {
				t.Errorf("installed file differs from %s.golden:\ngot:\n%s\nwant:\n%s", tc.name, got, want)
			}
			if !tc.changes && !bytes.Equal(got, input) {
				t.Errorf("nothing to change, but the file was rewritten")
			}

			// A backup of the old content exists exactly when a non-empty
			// file was changed.
			var backups []string
			for _, n := range dirEntries(t, filepath.Dir(path)) {
				if strings.HasPrefix(n, "settings.json.bak-") {
					backups = append(backups, n)
				} else if n != "settings.json" {
					t.Errorf("stray file %s left next to the settings", n)
				}
			}
			wantBackup := tc.changes && len(input) > 0
			if wantBackup {
				if len(backups) != 1 || backups[0] != "settings.json.bak-20260506T123000Z" {
					t.Fatalf("backups = %v, want [settings.json.bak-20260506T123000Z]", backups)
				}
				b, _ := os.ReadFile(filepath.Join(filepath.Dir(path), backups[0]))
				if !bytes.Equal(b, input) {
					t.Errorf("backup content differs from the original")
				}
			} else if len(backups) != 0 {
				t.Errorf("backups = %v, want none", backups)
			}
			if fi, err := os.Stat(path); err != nil {
				t.Fatal(err)
			} else if input != nil && fi.Mode().Perm() != 0o640 {
				t.Errorf("mode = %v, want the original 0640", fi.Mode().Perm())
			}

			// Idempotent: a second run changes nothing, byte for byte, and
			// makes no new backup.
			o.Now = func() time.Time { return fixedNow.Add(time.Hour) }
			rep, err = setup.Run(ctx, o)
			if err != nil {
				t.Fatalf("second install: %v", err)
			}
			if rep.Changed {
				t.Errorf("second install reports a change")
			}
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, got) {
				t.Errorf("second install rewrote the file:\n%s", again)
			}
			if n := len(dirEntries(t, filepath.Dir(path))); n != 1+len(backups) {
				t.Errorf("second install left %d files, want %d", n, 1+len(backups))
			}

			// Uninstall removes our entries and nothing else.
			o.Uninstall = true
			if _, err := setup.Run(ctx, o); err != nil {
				t.Fatalf("uninstall: %v", err)
			}
			removed, rerr := os.ReadFile(path)
			wantRemoved := readGolden(t, filepath.Join("testdata", "claude", tc.name+".uninstalled.golden"), removed)
			if len(wantRemoved) == 0 && !errors.Is(rerr, fs.ErrNotExist) {
				// Empty golden: nothing but the hook was in it, so the file goes.
				t.Errorf("uninstall left %s (%v), want it removed: it held nothing but gyrum's hook", path, rerr)
			}
			if !bytes.Equal(removed, wantRemoved) {
				t.Errorf("uninstalled file differs from %s.uninstalled.golden:\ngot:\n%s\nwant:\n%s", tc.name, removed, wantRemoved)
			}
			if strings.Contains(string(removed), "touch-activity") && !strings.Contains(string(removed), "mygyrum") {
				t.Errorf("uninstall left a touch-activity hook:\n%s", removed)
			}
		})
	}
}

// Files written the way Claude Code writes them come back from
// install + uninstall exactly as they were.
func TestClaudeUninstallRestoresOriginal(t *testing.T) {
	for _, name := range []string{"permissions-env", "other-hooks"} {
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(filepath.Join("testdata", "claude", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := writeSettings(t, dir, input)
			o := hookOptions(dir)
			if _, err := setup.Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			o.Uninstall = true
			if _, err := setup.Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, input) {
				t.Errorf("install + uninstall changed the file:\ngot:\n%s\nwant:\n%s", got, input)
			}
		})
	}
}

func TestClaudeSettingsRefused(t *testing.T) {
	cases := []struct {
		name string
		pos  string // the line:column the error must name
		says string // and what it says
	}{
		{"comments", ":2:3:", "comments are not allowed"},
		{"trailing-comma", ":5:5:", "trailing comma"},
		{"truncated", ":4:27:", "unexpected end of file"},
		{"hooks-not-object", ":3:12:", `"hooks" is an array, want an object`},
		{"event-not-array", ":3:20:", `"PostToolUse" in "hooks" is an object, want an array`},
		{"top-level-array", ":1:1:", "is an array, want an object"},
	}
	for _, tc := range cases {
		for _, uninstall := range []bool{false, true} {
			name := tc.name
			if uninstall {
				name += "/uninstall"
			}
			t.Run(name, func(t *testing.T) {
				input, err := os.ReadFile(filepath.Join("testdata", "claude", tc.name+".json"))
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				path := writeSettings(t, dir, input)
				before, _ := os.Stat(path)
				o := hookOptions(dir)
				o.Uninstall = uninstall
				var out bytes.Buffer
				o.Out = &out
				_, err = setup.Run(context.Background(), o)
				if tc.name == "hooks-not-object" && uninstall || tc.name == "event-not-array" && uninstall {
					// Nothing of ours can be in a "hooks" of the wrong
					// shape: uninstall has nothing to remove and leaves it.
					if err != nil {
						t.Fatalf("uninstall: %v", err)
					}
				} else {
					var pe *setup.ParseError
					if !errors.As(err, &pe) {
						t.Fatalf("err = %v, want a *setup.ParseError", err)
					}
					if ue := (*clikit.UsageError)(nil); errors.As(err, &ue) {
						t.Errorf("err is a usage error; a broken file is not a mistake in the command line")
					}
					if !strings.Contains(err.Error(), path+tc.pos) {
						t.Errorf("err = %q, want it to name %s%s", err, path, tc.pos)
					}
					if !strings.Contains(err.Error(), tc.says) {
						t.Errorf("err = %q, want it to say %q", err, tc.says)
					}
				}
				after, _ := os.ReadFile(path)
				if !bytes.Equal(after, input) {
					t.Errorf("refused file was modified:\n%s", after)
				}
				st, _ := os.Stat(path)
				if !st.ModTime().Equal(before.ModTime()) {
					t.Errorf("refused file was rewritten (mtime changed)")
				}
				if ents := dirEntries(t, filepath.Dir(path)); len(ents) != 1 {
					t.Errorf("files next to the refused settings: %v, want only settings.json", ents)
				}
			})
		}
	}
}

// A refused settings file stops the whole run before anything is changed:
// the schedule is not installed either.
func TestRefusalChangesNothingElse(t *testing.T) {
	dir := t.TempDir()
	input := []byte("{\"a\": 1,}\n")
	path := writeSettings(t, dir, input)
	o := hookOptions(dir)
	o.Watchdog = setup.WatchdogSystemd
	o.Systemd.UnitDir = filepath.Join(dir, "units")
	_, err := setup.Run(context.Background(), o)
	var pe *setup.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *setup.ParseError", err)
	}
	if pe.Line != 1 || pe.Column != 9 {
		t.Errorf("position = %d:%d, want 1:9", pe.Line, pe.Column)
	}
	if _, err := os.Stat(o.Systemd.UnitDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit directory was created despite the refusal")
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, input) {
		t.Errorf("file changed")
	}
}

func TestUserScopeSettingsPath(t *testing.T) {
	home := t.TempDir()
	o := setup.Options{Home: home}
	if got, want := o.SettingsPath(), filepath.Join(home, ".claude", "settings.json"); got != want {
		t.Errorf("default path = %s, want %s", got, want)
	}
	cc := filepath.Join(home, "cc")
	o.Getenv = func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return cc
		}
		return ""
	}
	if got, want := o.SettingsPath(), filepath.Join(home, "cc", "settings.json"); got != want {
		t.Errorf("CLAUDE_CONFIG_DIR path = %s, want %s", got, want)
	}
	o.Project = "/srv/proj"
	if got, want := o.SettingsPath(), "/srv/proj/.claude/settings.json"; got != want {
		t.Errorf("project path = %s, want %s", got, want)
	}

	// A user-scope install creates the file under CLAUDE_CONFIG_DIR.
	o = setup.Options{Binary: testBinary, Home: home, Getenv: o.Getenv, Watchdog: setup.WatchdogNone}
	if _, err := setup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(home, "cc", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"command": "/opt/gyrum/bin/gyrum touch-activity"`) {
		t.Errorf("settings lack the hook:\n%s", data)
	}
}

// A settings file that is a symlink (dotfiles managers) stays a link: the
// target is updated.
func TestSymlinkedSettingsStayALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "claude.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	os.WriteFile(target, []byte("{\n  \"model\": \"opus\"\n}\n"), 0o600)
	link := filepath.Join(dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Run(context.Background(), hookOptions(dir)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("settings.json is no longer a symlink")
	}
	data, _ := os.ReadFile(target)
	if !strings.Contains(string(data), "touch-activity") || !strings.Contains(string(data), `"model": "opus"`) {
		t.Errorf("link target not merged:\n%s", data)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	dir := t.TempDir()
	input := []byte("{\n  \"model\": \"opus\"\n}\n")
	path := writeSettings(t, dir, input)
	o := hookOptions(dir)
	o.DryRun = true
	var out bytes.Buffer
	o.Out = &out
	rep, err := setup.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Changed {
		t.Errorf("dry run reports no change to make")
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, input) {
		t.Errorf("dry run modified the file")
	}
	if ents := dirEntries(t, filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("dry run left files: %v", ents)
	}
	s := out.String()
	for _, want := range []string{"would update " + path, "--- " + path, "+    \"PostToolUseFailure\": [", `+            "command": "/opt/gyrum/bin/gyrum touch-activity",`, "-  \"model\": \"opus\"\n", "+  \"model\": \"opus\",\n", "dry run: nothing was changed"} {
		if !strings.Contains(s, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, s)
		}
	}
}

func TestHookCommandRecognition(t *testing.T) {
	cases := []struct {
		cmd  string
		ours bool
		bin  string
	}{
		{"/opt/gyrum/bin/gyrum touch-activity", true, "/opt/gyrum/bin/gyrum"},
		{"gyrum touch-activity", true, "gyrum"},
		{"  /x/gyrum   touch-activity  ", true, "/x/gyrum"},
		{"'/Users/Dev Name/bin/gyrum' touch-activity", true, "/Users/Dev Name/bin/gyrum"},
		{"/usr/bin/mygyrum touch-activity", false, ""},
		{"/x/gyrum touch-activity --dir /w", false, ""},
		{"/x/gyrumtouch-activity", false, ""},
		{"touch-activity", false, ""},
		{"/x/gyrum status", false, ""},
		{"/opt/gyrum/bin/gyrum-hook", true, "/opt/gyrum/bin/gyrum-hook"},
		{"'/Users/Dev Name/bin/gyrum-hook'", true, "/Users/Dev Name/bin/gyrum-hook"},
		{"gyrum-hook", true, "gyrum-hook"},
		{"/x/gyrum-hooks", false, ""},
		{"/x/gyrum-hook touch-activity", false, ""},
		{`'/a/it'\''s/gyrum' touch-activity`, true, "/a/it's/gyrum"},
		{`"/opt/my gyrum/gyrum" touch-activity`, true, "/opt/my gyrum/gyrum"},
		// A user's own command that ends in the hook is theirs.
		{"cd /w && /x/gyrum touch-activity", false, ""},
		{"cd /w; gyrum-hook", false, ""},
		{"cd /w && /x/gyrum-hook", false, ""},
		{"'cd /w' && '/x/gyrum' touch-activity", false, ""},
		{"'x' '/x/gyrum-hook'", false, ""},
		{"$HOME/bin/gyrum touch-activity", false, ""},
		{`"$HOME/bin/gyrum" touch-activity`, false, ""},
		{"env A=1 /x/gyrum touch-activity", false, ""},
		{"/x/gyrum-hook 2>/dev/null", false, ""},
		// --agent NAME, as setup writes it for an agent it announces
		// (GitHub Copilot CLI), is gyrum's too; anything else after it is not.
		{"/opt/gyrum/bin/gyrum-hook --agent copilot", true, "/opt/gyrum/bin/gyrum-hook"},
		{"'/a b/gyrum-hook'  --agent   copilot ", true, "/a b/gyrum-hook"},
		{"/x/gyrum touch-activity --agent copilot", true, "/x/gyrum"},
		{"/x/gyrum-hook --agent", false, ""},
		{"/x/gyrum-hook --agent copilot x", false, ""},
		{"/x/gyrum-hook --agent $X", false, ""},
		{"/x/gyrum-hook --agent --dir", false, ""},
		{"/x/gyrum-hook --agent=copilot", false, ""},
		{"/x/gyrum-hook--agent copilot", false, ""},
		{"/x/gyrum-hook --agent copilot --agent copilot", false, ""},
		{"--agent copilot", false, ""},
		{"cd /w && /x/gyrum-hook --agent copilot", false, ""},
	}
	for _, tc := range cases {
		if got := setup.IsHookCommand(tc.cmd); got != tc.ours {
			t.Errorf("IsHookCommand(%q) = %v, want %v", tc.cmd, got, tc.ours)
		}
		bin, ok := setup.HookBinary(tc.cmd)
		if ok != tc.ours || bin != tc.bin {
			t.Errorf("HookBinary(%q) = %q, %v, want %q, %v", tc.cmd, bin, ok, tc.bin, tc.ours)
		}
	}
	if got := setup.HookCommand("/Users/Dev Name/gyrum"); got != `'/Users/Dev Name/gyrum' touch-activity` {
		t.Errorf("HookCommand with a space = %s", got)
	}
	if bin, ok := setup.HookBinary(setup.AnnouncedCommand(setup.HookCommand("/it's/gyrum"), "copilot")); !ok || bin != "/it's/gyrum" {
		t.Errorf("announced quote round trip = %q, %v", bin, ok)
	}
	if bin, ok := setup.HookBinary(setup.HookCommand("/it's/gyrum")); !ok || bin != "/it's/gyrum" {
		t.Errorf("quote round trip = %q, %v", bin, ok)
	}
}

// TestHookCommandPrefersGyrumHook: with the small gyrum-hook binary beside
// gyrum (as a release ships them), setup installs it; a gyrum-hook that is
// not an executable file is passed over for gyrum touch-activity.
func TestHookCommandPrefersGyrumHook(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gyrum")
	if got, want := setup.HookCommand(bin), "'"+bin+"' touch-activity"; got != want {
		t.Errorf("without gyrum-hook: %s, want %s", got, want)
	}
	small := filepath.Join(dir, "gyrum-hook")
	if err := os.WriteFile(small, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := setup.HookCommand(bin); !strings.HasSuffix(got, "touch-activity") {
		t.Errorf("gyrum-hook not executable: %s, want gyrum touch-activity", got)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	got := setup.HookCommand(bin)
	if got != "'"+small+"'" {
		t.Errorf("with gyrum-hook: %s, want '%s'", got, small)
	}
	if b, ok := setup.HookBinary(got); !ok || b != small || !setup.IsHookCommand(got) {
		t.Errorf("the installed gyrum-hook command is not recognised: %q %v", b, ok)
	}
}
