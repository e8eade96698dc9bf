package gyrumcli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/setup"
)

// On a host with neither a systemd user manager nor cron (the real gyrum
// binary, run with a PATH that has no systemctl and no crontab), setup
// installs the hook, warns that the watchdog is not scheduled and says how
// to run it, and exits 0; --dry-run shows the hook's diff; a scheduler
// asked for by name fails and changes nothing.
func TestSetupWithoutScheduler(t *testing.T) {
	e := newEnv(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "claude-config")
	e.vars["HOME"] = home
	e.vars["CLAUDE_CONFIG_DIR"] = cfg
	e.vars["XDG_CONFIG_HOME"] = filepath.Join(home, "xdg")
	e.vars["PATH"] = t.TempDir() // no systemctl, no crontab
	settings := filepath.Join(cfg, "settings.json")
	hookCommand := `"command": "` + setup.HookCommand(gyrumBin) + `"`

	r := e.gyrum(home, "", "setup", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"would create " + settings, "+++ " + settings, hookCommand} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run does not show %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "gyrum: warning: the watchdog is not scheduled") {
		t.Errorf("dry run: no warning on stderr:\n%s", r.stderr)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Fatalf("dry run wrote the settings")
	}

	r = e.gyrum(home, "", "setup")
	if r.code != 0 {
		t.Fatalf("setup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatalf("the hook was not installed: %v", err)
	}
	if n := strings.Count(string(data), hookCommand); n != 3 {
		t.Errorf("settings run this gyrum %d times, want 3:\n%s", n, data)
	}
	for _, want := range []string{
		"gyrum: warning: the watchdog is not scheduled",
		"GYRUM_HOME=" + e.home + " " + gyrumBin + " watchdog sweep",
		"gyrum setup --watchdog cron",
		"gyrum setup --watchdog systemd",
		"# gyrum-watchdog",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("warning lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "xdg", "systemd")); !os.IsNotExist(err) {
		t.Errorf("systemd units written without a systemd user manager")
	}

	// The watchdog line the warning gives works by hand.
	if r := e.gyrum(home, "", "watchdog", "sweep"); r.code != 0 {
		t.Errorf("gyrum watchdog sweep: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Asking for a missing scheduler by name fails, before any change, and
	// a dry run of it still shows the hook diff.
	os.Remove(settings)
	for _, watchdog := range []string{"cron", "systemd"} {
		r = e.gyrum(home, "", "setup", "--watchdog", watchdog)
		if r.code != 1 || !strings.Contains(r.stderr, "--watchdog "+watchdog+":") {
			t.Errorf("--watchdog %s: exit %d, stderr %q", watchdog, r.code, r.stderr)
		}
		if _, err := os.Stat(settings); !os.IsNotExist(err) {
			t.Errorf("--watchdog %s: settings written although setup failed", watchdog)
		}
		r = e.gyrum(home, "", "setup", "--watchdog", watchdog, "--dry-run")
		if r.code != 1 || !strings.Contains(r.stdout, hookCommand) {
			t.Errorf("--watchdog %s --dry-run: exit %d, no hook diff:\n%s%s", watchdog, r.code, r.stdout, r.stderr)
		}
	}
}

// setup --json prints what it did as one JSON object, and no change lines.
func TestSetupJSON(t *testing.T) {
	e := newEnv(t)
	home := t.TempDir()
	e.vars["HOME"] = home
	e.vars["CLAUDE_CONFIG_DIR"] = filepath.Join(home, "claude-config")
	e.vars["XDG_CONFIG_HOME"] = filepath.Join(home, "xdg")
	e.vars["PATH"] = t.TempDir() // no scheduler: a warning in the report
	r := e.gyrum(home, "", "setup", "--json")
	var rep setup.Report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || !rep.Changed || rep.Schedule != "" ||
		len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "watchdog is not scheduled") || rep.Backups == nil {
		t.Fatalf("setup --json: %+v (%+v)", r, rep)
	}
	r = e.gyrum(home, "", "setup", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil || rep.Changed {
		t.Fatalf("second setup --json: %+v (%+v)", r, rep)
	}
}
