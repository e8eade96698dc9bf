package setup_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/setup"
)

// agentFile is where each agent's project-scope file lives.
var agentFile = map[string]string{
	"codex":   filepath.Join(".codex", "hooks.json"),
	"gemini":  filepath.Join(".gemini", "settings.json"),
	"cursor":  filepath.Join(".cursor", "hooks.json"),
	"qwen":    filepath.Join(".qwen", "settings.json"),
	"copilot": filepath.Join(".github", "hooks", "gyrum.json"),
}

// Each agent's file, installed into from nothing, from a file with the
// user's own hooks, from an install of an older gyrum (another path,
// fewer events), re-installed, and uninstalled again, against the golden
// files of testdata/agents. The formats are the documented ones (see
// agents.go for each source).
func TestAgentsGolden(t *testing.T) {
	cases := []struct {
		agent string
		input string // testdata/agents/INPUT.json; "" → no file
		name  string // golden base name
		// restores: install + uninstall gives back the input byte for
		// byte (it holds no gyrum hook of its own).
		restores bool
		changes  bool   // the first install changes the file
		warn     string // a warning the install gives, on every run; "" → none after the first
		warnOnce string // a warning only a run that changes the file gives
	}{
		{agent: "codex", name: "codex-missing", changes: true, warnOnce: "open /hooks"},
		{agent: "codex", input: "codex-other", name: "codex-other", restores: true, changes: true, warnOnce: "open /hooks"},
		{agent: "codex", input: "codex-old-path", name: "codex-old-path", changes: true, warnOnce: "open /hooks"},
		{agent: "codex", input: "codex-previous", name: "codex-previous"},
		{agent: "gemini", name: "gemini-missing", changes: true},
		{agent: "gemini", input: "gemini-other", name: "gemini-other", restores: true, changes: true},
		{agent: "gemini", input: "gemini-previous", name: "gemini-previous", changes: true},
		{agent: "gemini", input: "gemini-disabled", name: "gemini-disabled", restores: true, changes: true,
			warn: `"hooksConfig.enabled" is false`},
		{agent: "cursor", name: "cursor-missing", changes: true},
		{agent: "cursor", input: "cursor-other", name: "cursor-other", restores: true, changes: true},
		{agent: "cursor", input: "cursor-old-path", name: "cursor-old-path", changes: true},
		{agent: "cursor", input: "cursor-previous", name: "cursor-previous", changes: true},
		// Qwen Code: project hooks need the folder's trust when its folder
		// trust is on; every hook is off with "disableAllHooks".
		{agent: "qwen", name: "qwen-missing", changes: true, warnOnce: "folder trust"},
		{agent: "qwen", input: "qwen-other", name: "qwen-other", restores: true, changes: true, warnOnce: "folder trust"},
		{agent: "qwen", input: "qwen-disabled", name: "qwen-disabled", restores: true, changes: true,
			warn: `"disableAllHooks": true`, warnOnce: "folder trust"},
		// GitHub Copilot CLI: gyrum's own file, --agent copilot in each
		// command; a repository's hooks need the folder's trust.
		{agent: "copilot", name: "copilot-missing", changes: true, warnOnce: "trust the folder"},
		{agent: "copilot", input: "copilot-other", name: "copilot-other", restores: true, changes: true, warnOnce: "trust the folder"},
		{agent: "copilot", input: "copilot-previous", name: "copilot-previous", changes: true, warnOnce: "trust the folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, agentFile[tc.agent])
			var input []byte
			if tc.input != "" {
				var err error
				if input, err = os.ReadFile(filepath.Join("testdata", "agents", tc.input+".json")); err != nil {
					t.Fatal(err)
				}
				os.MkdirAll(filepath.Dir(path), 0o755)
				os.WriteFile(path, input, 0o600)
			}
			o := hookOptions(dir)
			o.Agents = []string{tc.agent}
			rep, err := setup.Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			checkWarnings(t, "first install", rep.Warnings, tc.warn, tc.warnOnce)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if changed := !bytes.Equal(got, input); changed != tc.changes {
				t.Errorf("install changed the file: %v, want %v", changed, tc.changes)
			}
			want := readGolden(t, filepath.Join("testdata", "agents", tc.name+".golden"), got)
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s.golden:\ngot:\n%s\nwant:\n%s", path, tc.name, got, want)
			}
			// Claude Code is always wired too.
			if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); err != nil {
				t.Errorf("Claude settings not written: %v", err)
			}

			o.Now = func() time.Time { return fixedNow.Add(time.Minute) }
			rep, err = setup.Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Changed {
				t.Errorf("second run changed something")
			}
			checkWarnings(t, "second install", rep.Warnings, tc.warn, "")
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, got) {
				t.Errorf("second run rewrote %s", path)
			}

			o.Uninstall = true
			rep, err = setup.Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Warnings) != 0 {
				t.Errorf("uninstall warns: %q", rep.Warnings)
			}
			removed, rerr := os.ReadFile(path)
			wantRemoved := readGolden(t, filepath.Join("testdata", "agents", tc.name+".uninstalled.golden"), removed)
			if len(wantRemoved) == 0 && !errors.Is(rerr, fs.ErrNotExist) {
				t.Errorf("uninstall left %s (%v), want it removed: it held nothing but gyrum's hooks", path, rerr)
			}
			if backups, _ := filepath.Glob(path + ".bak-*"); len(wantRemoved) == 0 && len(backups) > 0 {
				t.Errorf("uninstall of a file that held only gyrum's hooks left backups %v", backups)
			}
			if !bytes.Equal(removed, wantRemoved) {
				t.Errorf("after uninstall differs from %s.uninstalled.golden:\ngot:\n%s", tc.name, removed)
			}
			if tc.restores && !bytes.Equal(removed, input) {
				t.Errorf("install + uninstall did not restore the original:\ngot:\n%s\nwant:\n%s", removed, input)
			}
			if strings.Contains(string(removed), "gyrum touch-activity") {
				t.Errorf("uninstall left our hook:\n%s", removed)
			}
		})
	}
}

// checkWarnings checks that warnings hold always (when set) and once (when
// set), and nothing else.
func checkWarnings(t *testing.T, run string, warnings []string, always, once string) {
	t.Helper()
	all := strings.Join(warnings, "\n")
	n := 0
	for _, w := range []string{always, once} {
		if w == "" {
			continue
		}
		n++
		if !strings.Contains(all, w) {
			t.Errorf("%s: warnings lack %q: %q", run, w, warnings)
		}
	}
	if len(warnings) != n {
		t.Errorf("%s: %d warnings, want %d: %q", run, len(warnings), n, warnings)
	}
}

func TestAgentsUserScopePaths(t *testing.T) {
	home := t.TempDir()
	o := setup.Options{Binary: testBinary, Home: home, Watchdog: setup.WatchdogNone, Agents: setup.Agents(), Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return filepath.Join(home, "codex-home")
		}
		return ""
	}}
	if _, err := setup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(home, ".claude", "settings.json"),
		filepath.Join(home, "codex-home", "hooks.json"),
		filepath.Join(home, ".gemini", "settings.json"),
		filepath.Join(home, ".cursor", "hooks.json"),
		filepath.Join(home, ".qwen", "settings.json"),
		filepath.Join(home, ".copilot", "hooks", "gyrum.json"),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !strings.Contains(string(data), testBinary+" touch-activity") {
			t.Errorf("%s lacks the hook:\n%s", p, data)
		}
	}
}

func TestAgentsRefusals(t *testing.T) {
	dir := t.TempDir()
	o := hookOptions(dir)
	o.Agents = []string{"aider"}
	_, err := setup.Run(context.Background(), o)
	var ue *clikit.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `unknown agent "aider"`) {
		t.Errorf("err = %v, want the unknown-agent refusal", err)
	}

	// A malformed file of another agent stops the run before the Claude
	// settings are written.
	p := filepath.Join(dir, ".cursor", "hooks.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	bad := []byte("{\n  \"version\": 1,\n  \"hooks\": {\n    \"postToolUse\": [\n      {\"command\": \"x\"},\n    ]\n  }\n}\n")
	os.WriteFile(p, bad, 0o600)
	o.Agents = []string{"cursor"}
	_, err = setup.Run(context.Background(), o)
	var pe *setup.ParseError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), p+":6:5") {
		t.Fatalf("err = %v, want a ParseError at %s:6:5", err, p)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, bad) {
		t.Errorf("refused file modified")
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Claude settings written despite the refusal")
	}
}

// Gemini CLI settings that keep the hook from running are reported on every
// run (the hook is installed all the same); settings that allow it are not.
func TestGeminiHooksOffWarning(t *testing.T) {
	cases := []struct {
		settings string
		warn     string // "" → no warning
	}{
		{`{"tools": {"enableHooks": false}}`, `"tools.enableHooks" is false`},
		{`{"hooksConfig": {"disabled": ["gyrum-touch-activity"]}}`, `"hooksConfig.disabled" lists "gyrum-touch-activity"`},
		{`{"hooks": {"disabled": ["/old/gyrum touch-activity"]}}`, `"hooks.disabled" lists "/old/gyrum touch-activity"`},
		{`{"tools": {"enableHooks": true}, "hooksConfig": {"enabled": true, "disabled": ["other"]}}`, ""},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		path := filepath.Join(dir, agentFile["gemini"])
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(tc.settings), 0o600)
		o := hookOptions(dir)
		o.Agents = []string{"gemini"}
		for run := 1; run <= 2; run++ {
			rep, err := setup.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			checkWarnings(t, tc.settings, rep.Warnings, tc.warn, "")
			if tc.warn != "" && !strings.Contains(strings.Join(rep.Warnings, "\n"), path) {
				t.Errorf("%s: the warning does not name %s: %q", tc.settings, path, rep.Warnings)
			}
		}
		if data, _ := os.ReadFile(path); strings.Count(string(data), testBinary+" touch-activity") != 2 {
			t.Errorf("%s: hook not installed:\n%s", tc.settings, data)
		}
	}
}
