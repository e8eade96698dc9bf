package setup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A settings file saved by another program between setup's plan and its
// write (the agent saving a /model change while setup asks systemctl or
// crontab) is left as that program wrote it: setup stops with an error
// that says to run it again, and writes no backup of the stale content.
func TestSettingsChangedWhileSetupRunsAreKept(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial string // "" for no file
	}{
		{"an existing file", `{"model": "opus"}` + "\n"},
		{"a file created meanwhile", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			path := filepath.Join(home, ".claude", "settings.json")
			if tc.initial != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.initial), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			saved := `{"model": "sonnet", "permissions": {"allow": ["Bash(go test:*)"]}}` + "\n"
			beforeApply = func() {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Error(err)
				}
				if err := os.WriteFile(path, []byte(saved), 0o644); err != nil {
					t.Error(err)
				}
			}
			defer func() { beforeApply = func() {} }()
			_, err := Run(context.Background(), Options{Binary: "/usr/local/bin/gyrum", Home: home, Watchdog: WatchdogNone,
				Now: func() time.Time { return time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC) }})
			if err == nil || !strings.Contains(err.Error(), "changed while gyrum setup ran") {
				t.Fatalf("setup over a file saved meanwhile: %v, want an error saying it changed", err)
			}
			if b, _ := os.ReadFile(path); string(b) != saved {
				t.Errorf("settings.json holds %q, want what the other program saved", b)
			}
			if m, _ := filepath.Glob(path + ".bak-*"); len(m) != 0 {
				t.Errorf("backups %v of content that is no longer the file's", m)
			}
		})
	}
}
