package setup_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/warp"
)

// agentFile is where each agent's project-scope file lives.
var agentFile = map[string]string{
	"codex":  filepath.Join(".codex", "hooks.json"),
	"gemini": filepath.Join(".gemini", "settings.json"),
	"cursor": filepath.Join(".cursor", "hooks.json"),
}

func TestAgentsGolden(t *testing.T) {
	cases := []struct {
		agent string
		input string // testdata/agents/INPUT.json; "" → no file
		name  string // golden base name
	}{
		{"codex", "", "codex-missing"},
		{"codex", "codex-other", "codex-other"},
		{"codex", "codex-old-path", "codex-old-path"},
		{"gemini", "", "gemini-missing"},
		{"gemini", "gemini-other", "gemini-other"},
		{"cursor", "", "cursor-missing"},
		{"cursor", "cursor-other", "cursor-other"},
		{"cursor", "cursor-old-path", "cursor-old-path"},
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
			if _, err := setup.Run(ctx, o); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
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
			rep, err := setup.Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Changed {
				t.Errorf("second run changed something")
			}
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, got) {
				t.Errorf("second run rewrote %s", path)
			}

			o.Uninstall = true
			if _, err := setup.Run(ctx, o); err != nil {
				t.Fatal(err)
			}
			removed, _ := os.ReadFile(path)
			wantRemoved := readGolden(t, filepath.Join("testdata", "agents", tc.name+".uninstalled.golden"), removed)
			if !bytes.Equal(removed, wantRemoved) {
				t.Errorf("after uninstall differs from %s.uninstalled.golden:\ngot:\n%s", tc.name, removed)
			}
			if tc.input != "" && !strings.Contains(tc.input, "old-path") && !bytes.Equal(removed, input) {
				t.Errorf("install + uninstall did not restore the original:\ngot:\n%s\nwant:\n%s", removed, input)
			}
			if strings.Contains(string(removed), "touch-activity") {
				t.Errorf("uninstall left our hook:\n%s", removed)
			}
		})
	}
}

func TestAgentsUserScopePaths(t *testing.T) {
	home := t.TempDir()
	o := setup.Options{Binary: testBinary, Home: home, Watchdog: setup.WatchdogNone, Agents: setup.Agents(), CodexHome: filepath.Join(home, "codex-home")}
	if _, err := setup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(home, ".claude", "settings.json"),
		filepath.Join(home, "codex-home", "hooks.json"),
		filepath.Join(home, ".gemini", "settings.json"),
		filepath.Join(home, ".cursor", "hooks.json"),
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
	if !errors.Is(err, warp.ErrInvalid) || !strings.Contains(err.Error(), `unknown agent "aider"`) {
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
