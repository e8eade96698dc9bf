package trust

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/setup"
)

// The keys and hashes doctor computes are the ones the real Codex 0.169.0
// listed for the same hooks.json (testdata/codex-0.169.0/hashes: varied
// matchers, timeouts, async, statusMessage, quotes, a tab, non-ASCII).
func TestCodexHookHashMatchesCodex(t *testing.T) {
	dir := filepath.Join("testdata", "codex-0.169.0", "hashes")
	data, err := os.ReadFile(filepath.Join(dir, "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := codexHooks(data)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Data []struct {
			Hooks []struct {
				Key         string `json:"key"`
				CurrentHash string `json:"currentHash"`
			} `json:"hooks"`
		} `json:"data"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "hooks-list.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &listed); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, h := range listed.Data[0].Hooks {
		want[h.Key] = h.CurrentHash
	}
	if len(hooks) != len(want) || len(want) != 5 {
		t.Fatalf("read %d hooks, codex listed %d (want 5)", len(hooks), len(want))
	}
	for _, h := range hooks {
		key := codexHookKey("/tmp/h7/ch4/hooks.json", h)
		w, ok := want[key]
		if !ok {
			t.Errorf("key %s: codex listed no such hook (its keys: %v)", key, want)
			continue
		}
		if got := codexHookHash(h); got != w {
			t.Errorf("hash of %s = %s, codex computed %s", key, got, w)
		}
	}
}

// trustedHome copies the recorded files of testdata/codex-0.169.0/trusted
// into a fresh CODEX_HOME, with the recorded directory replaced by it.
func trustedHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, name := range []string{"hooks.json", "config.toml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "codex-0.169.0", "trusted", name))
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.ReplaceAll(string(data), "/tmp/h7/ch2", home))
		if err := os.WriteFile(filepath.Join(home, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func codexCheck(t *testing.T, codexHome string) Result {
	t.Helper()
	checks := Check(input(t.TempDir(), codexHome, t.TempDir()))
	if len(checks) != 1 || checks[0].Name != "codex-trust" {
		t.Fatalf("checks %+v, want one codex-trust", checks)
	}
	return checks[0]
}

func TestCodexTrust(t *testing.T) {
	t.Run("trusted as codex recorded it", func(t *testing.T) {
		if c := codexCheck(t, trustedHome(t)); !c.OK {
			t.Errorf("check %+v, want ok", c)
		}
	})
	t.Run("never trusted", func(t *testing.T) {
		home := trustedHome(t)
		if err := os.Remove(filepath.Join(home, "config.toml")); err != nil {
			t.Fatal(err)
		}
		c := codexCheck(t, home)
		if c.OK || !strings.Contains(c.Detail, "PostToolUse, PreToolUse not trusted") ||
			!strings.Contains(c.Fix, "Trust all and continue") {
			t.Errorf("check %+v, want a fail naming both hooks and how to trust them", c)
		}
	})
	t.Run("changed since trusted", func(t *testing.T) {
		home := trustedHome(t)
		p := filepath.Join(home, "hooks.json")
		data, _ := os.ReadFile(p)
		// A newer gyrum elsewhere: setup rewrote the command.
		data = []byte(strings.ReplaceAll(string(data), "/tmp/h7/gyrum touch-activity", "/usr/local/bin/gyrum-hook"))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c := codexCheck(t, home)
		if c.OK || !strings.Contains(c.Detail, "changed since trusted") {
			t.Errorf("check %+v, want a fail saying the hooks changed", c)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		home := trustedHome(t)
		p := filepath.Join(home, "config.toml")
		data, _ := os.ReadFile(p)
		data = []byte(strings.Replace(string(data), "pre_tool_use:0:0\"]\n", "pre_tool_use:0:0\"]\nenabled = false\n", 1))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if c := codexCheck(t, home); c.OK || !strings.Contains(c.Detail, "PreToolUse disabled") {
			t.Errorf("check %+v, want a fail saying PreToolUse is disabled", c)
		}
	})
	t.Run("no gyrum hooks: no check", func(t *testing.T) {
		if checks := Check(input(t.TempDir(), t.TempDir(), t.TempDir())); len(checks) != 0 {
			t.Errorf("checks %+v with nothing installed, want none", checks)
		}
	})
}

// Gemini CLI's trustedFolders.json, in the shape its docs give (a path →
// TRUST_FOLDER, TRUST_PARENT or DO_NOT_TRUST).
func TestGeminiTrust(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	project := filepath.Join(root, "project")
	settings := `{"hooks":{"BeforeTool":[{"matcher":".*","hooks":[{"name":"gyrum-touch-activity","type":"command","command":"/opt/gyrum/bin/gyrum-hook","timeout":5000}]}]}}`
	if err := os.MkdirAll(filepath.Join(project, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, folders, user string
		ok                  bool
	}{
		{"no trust file", "", "", false},
		{"folder trusted", `{"` + project + `":"TRUST_FOLDER"}`, "", true},
		{"parent trusted", `{"` + filepath.Join(root, "other") + `":"TRUST_PARENT"}`, "", true},
		{"an ancestor trusted", `{"` + root + `":"TRUST_FOLDER"}`, "", true},
		{"a sibling trusted", `{"` + project + `-2":"TRUST_FOLDER"}`, "", false},
		{"distrusted", `{"` + project + `":"DO_NOT_TRUST","` + root + `":"TRUST_FOLDER"}`, "", false},
		{"folder trust off", "", `{"security":{"folderTrust":{"enabled":false}}}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for name, body := range map[string]string{"trustedFolders.json": c.folders, "settings.json": c.user} {
				p := filepath.Join(home, ".gemini", name)
				_ = os.Remove(p)
				if body != "" {
					if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			checks := Check(input(home, t.TempDir(), project))
			if len(checks) != 1 || checks[0].Name != "gemini-trust (project)" {
				t.Fatalf("checks %+v, want one gemini-trust", checks)
			}
			if got := checks[0].OK; got != c.ok {
				t.Errorf("check %+v, want ok %v", checks[0], c.ok)
			}
			if !c.ok && !strings.Contains(checks[0].Fix, "gemini") {
				t.Errorf("fix %q does not say what to run", checks[0].Fix)
			}
		})
	}
}

// input is an Input of home, a CODEX_HOME and cwd, that knows gyrum's hook
// commands as setup writes them.
func input(home, codexHome, cwd string) Input {
	return Input{Home: home, Cwd: cwd, IsHookCommand: setup.IsHookCommand, Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return codexHome
		}
		return ""
	}}
}
