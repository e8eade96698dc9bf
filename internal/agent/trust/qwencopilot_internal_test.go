package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestQwenTrust(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	project := filepath.Join(root, "project")
	settings := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/opt/gyrum/bin/gyrum-hook","timeout":5}]}]}}`
	writeFile(t, filepath.Join(project, ".qwen", "settings.json"), settings)
	on := `{"security":{"folderTrust":{"enabled":true}}}`
	for _, c := range []struct {
		name, folders, user string
		ok                  bool
	}{
		{"folder trust off by default", "", "", true},
		{"folder trust off", "", `{"security":{"folderTrust":{"enabled":false}}}`, true},
		{"on, no trust file", "", on, false},
		{"on, folder trusted", `{"` + project + `":"TRUST_FOLDER"}`, on, true},
		{"on, an ancestor trusted", `{"` + root + `":"TRUST_FOLDER"}`, on, true},
		{"on, a sibling trusted", `{"` + project + `-2":"TRUST_FOLDER"}`, on, false},
		{"on, distrusted", `{"` + project + `":"DO_NOT_TRUST"}`, on, false},
		{"on, a trust file that does not parse", `{"` + project, on, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for name, body := range map[string]string{"trustedFolders.json": c.folders, "settings.json": c.user} {
				p := filepath.Join(home, ".qwen", name)
				_ = os.Remove(p)
				if body != "" {
					writeFile(t, p, body)
				}
			}
			checks := Check(input(home, t.TempDir(), project))
			if len(checks) != 1 || checks[0].Name != "qwen-trust (project)" {
				t.Fatalf("checks %+v, want one qwen-trust", checks)
			}
			if got := checks[0].OK; got != c.ok {
				t.Errorf("check %+v, want ok %v", checks[0], c.ok)
			}
			if !c.ok && checks[0].Fix == "" {
				t.Errorf("check %+v says nothing to do", checks[0])
			}
		})
	}
	// QWEN_HOME moves the user's files.
	qh := t.TempDir()
	writeFile(t, filepath.Join(qh, "settings.json"), on)
	in := input(home, t.TempDir(), project)
	in.Getenv = func(k string) string {
		if k == "QWEN_HOME" {
			return qh
		}
		return ""
	}
	if checks := Check(in); len(checks) != 1 || checks[0].OK || !strings.Contains(checks[0].Detail, qh) {
		t.Errorf("with QWEN_HOME: %+v, want the untrusted folder named in %s", checks, qh)
	}
	// No gyrum hook in the project's settings: nothing to check.
	writeFile(t, filepath.Join(project, ".qwen", "settings.json"), `{"hooks":{"PreToolUse":[{"hooks":[{"command":"./mine.sh"}]}]}}`)
	if checks := Check(input(home, t.TempDir(), project)); len(checks) != 0 {
		t.Errorf("checks %+v for a project without gyrum's hook", checks)
	}
}

func TestCopilotTrust(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	project := filepath.Join(root, "project")
	writeFile(t, filepath.Join(project, ".github", "hooks", "gyrum.json"),
		`{"version":1,"hooks":{"PreToolUse":[{"type":"command","command":"/opt/gyrum/bin/gyrum-hook --agent copilot","timeout":5}]}}`)
	for _, c := range []struct {
		name, config string
		ok           bool
	}{
		{"no config", "", false},
		{"none trusted", `{"trustedFolders":[]}`, false},
		{"folder trusted", `{"trustedFolders":["` + project + `"]}`, true},
		{"parent trusted", `{"trustedFolders":["` + root + `"]}`, true},
		{"a sibling with the prefix trusted", `{"trustedFolders":["` + project + `-other"]}`, false},
		{"a config that does not parse", `{"trustedFolders":`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(home, ".copilot", "config.json")
			_ = os.Remove(p)
			if c.config != "" {
				writeFile(t, p, c.config)
			}
			checks := Check(input(home, t.TempDir(), project))
			if len(checks) != 1 || checks[0].Name != "copilot-trust (project)" {
				t.Fatalf("checks %+v, want one copilot-trust", checks)
			}
			if got := checks[0].OK; got != c.ok {
				t.Errorf("check %+v, want ok %v", checks[0], c.ok)
			}
			if !c.ok && !strings.Contains(strings.ToLower(checks[0].Fix), "copilot") {
				t.Errorf("fix %q does not say what to run", checks[0].Fix)
			}
		})
	}
	// The user's hooks need no trust: no check without a project file.
	if checks := Check(input(home, t.TempDir(), root)); len(checks) != 0 {
		t.Errorf("checks %+v in a folder without the repository's hooks", checks)
	}
}

func TestHasOurCommand(t *testing.T) {
	ours := func(s string) bool { return strings.HasPrefix(s, "/g/gyrum-hook") }
	for data, want := range map[string]bool{
		`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"command":"/g/gyrum-hook"}]}]}}`: true,
		`{"hooks":{"PreToolUse":[{"command":"/g/gyrum-hook --agent copilot"}]}}`:           true,
		`{"hooks":{"preToolUse":[{"bash":"/g/gyrum-hook"}]}}`:                              true,
		`{"hooks":{"PreToolUse":[{"command":"./mine.sh"}]}}`:                               false,
		`{"hooks":{"PreToolUse":{"command":"/g/gyrum-hook"}}}`:                             false,
		`{"hooks":[]}`: false,
		`not json`:     false,
		``:             false,
	} {
		if got := hasOurCommand([]byte(data), ours); got != want {
			t.Errorf("hasOurCommand(%s) = %v, want %v", data, got, want)
		}
	}
	if hasOurCommand([]byte(`{"hooks":{"PreToolUse":[{"command":"/g/gyrum-hook"}]}}`), nil) {
		t.Error("hasOurCommand with no recogniser")
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
