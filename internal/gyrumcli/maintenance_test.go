package gyrumcli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/watchdog"
)

// The real loop, spawned by the real start-work, whose worktree is deleted,
// is stopped by the real `gyrum watchdog sweep`; --dry-run first leaves it.
func TestWatchdogSweepStopsARealOrphanLoop(t *testing.T) {
	e := newEnv(t)
	// A long interval: the loop must not notice the deletion itself before
	// the sweep does.
	e.vars["HEARTBEAT_INTERVAL_SECS"] = "600"
	e.ws.Create("T-W")
	_, watched := agent(t, "sleep", "1000")
	root := t.TempDir()
	wt := filepath.Join(root, "wt")
	os.Mkdir(wt, 0o755)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-W", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	loop, err := proc.Lookup(sr.LoopPID)
	if err != nil {
		t.Fatal(err)
	}
	healthyWT := filepath.Join(root, "healthy")
	os.Mkdir(healthyWT, 0o755)
	e.ws.Create("T-H")
	sh := e.startResult(e.gyrum(healthyWT, "", "start-work", "T-H", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	healthy, err := proc.Lookup(sh.LoopPID)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	r := e.gyrum(root, "", "watchdog", "sweep", "--dry-run", "--within", root)
	if r.code != 0 || !strings.Contains(r.stdout, "would-stop") || !strings.Contains(r.stdout, "dry run") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !loop.Alive() {
		t.Fatalf("--dry-run stopped the loop")
	}

	r = e.gyrum(root, "", "watchdog", "sweep", "--json", "--within", root)
	if r.code != 0 {
		t.Fatalf("sweep: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep watchdog.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("sweep --json printed %q: %v", r.stdout, err)
	}
	waitFor(t, "the orphan loop to exit", func() bool { return !loop.Alive() })
	var got, kept bool
	for _, l := range rep.Loops {
		if l.PID == loop.PID {
			got = l.Action == watchdog.ActionStopped && l.Reason == "worktree is gone" && l.Ticket == "T-W"
		}
		if l.PID == healthy.PID {
			kept = l.Action == watchdog.ActionKept
		}
	}
	if !got || !kept {
		t.Errorf("report: %+v", rep.Loops)
	}
	if !healthy.Alive() {
		t.Errorf("the healthy loop was stopped")
	}
	if _, err := gyrumdir.NewRegistry(e.home).Read(loop.PID); err == nil {
		t.Errorf("registry entry of the stopped loop left")
	}
}

func TestSetupCommand(t *testing.T) {
	e := newEnv(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "claude-config")
	e.vars["HOME"] = home
	e.vars["CLAUDE_CONFIG_DIR"] = cfg
	settings := filepath.Join(cfg, "settings.json")

	r := e.inproc(home, "setup", "--watchdog", "none", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would create "+settings) {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Fatalf("dry run wrote the settings")
	}

	r = e.inproc(home, "setup", "--watchdog", "none")
	if r.code != 0 {
		t.Fatalf("setup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), `"command": "`+setup.HookCommand(gyrumBin)+`"`) != 3 {
		t.Errorf("settings do not run this gyrum for the three events:\n%s", data)
	}
	r = e.inproc(home, "setup", "--watchdog", "none")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to change") {
		t.Errorf("second setup: exit %d\n%s", r.code, r.stdout)
	}
	again, _ := os.ReadFile(settings)
	if !bytes.Equal(again, data) {
		t.Errorf("second setup changed the file")
	}

	// The hook it wrote really runs: the real binary, a real payload.
	wt := mkdir(t)
	d, _ := gyrumdir.Create(wt)
	os.WriteFile(d.File(gyrumdir.LeaseFile), []byte("{}"), 0o600)
	e.prepared(d)
	if res := e.gyrum(wt, `{"hook_event_name":"PostToolUse","cwd":"`+wt+`","tool_name":"Bash","tool_use_id":"t1"}`, "touch-activity"); res.code != 0 {
		t.Fatalf("touch-activity exit %d", res.code)
	}
	if _, err := os.Stat(d.File(gyrumdir.ActivityFile)); err != nil {
		t.Errorf("the hook did not touch last-activity: %v", err)
	}

	// Project scope and another agent.
	project := t.TempDir()
	r = e.inproc(home, "setup", "--project", project, "--watchdog", "none", "--agents", "cursor")
	if r.code != 0 {
		t.Fatalf("setup --project: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{filepath.Join(project, ".claude", "settings.json"), filepath.Join(project, ".cursor", "hooks.json")} {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), setup.HookCommand(gyrumBin)) {
			t.Errorf("%s: %v\n%s", p, err, b)
		}
	}

	// Uninstall.
	r = e.inproc(home, "setup", "--watchdog", "none", "--uninstall")
	if r.code != 0 {
		t.Fatalf("uninstall: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(settings); strings.Contains(string(b), setup.HookCommand(gyrumBin)) {
		t.Errorf("uninstall left the hook:\n%s", b)
	}

	// Refusals: a malformed file (exit 1, untouched), bad flags (exit 2).
	bad := []byte("{\n  // mine\n}\n")
	os.WriteFile(settings, bad, 0o600)
	r = e.inproc(home, "setup", "--watchdog", "none")
	if r.code != 1 || !strings.Contains(r.stderr, settings+":2:3") {
		t.Errorf("malformed settings: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(settings); !bytes.Equal(b, bad) {
		t.Errorf("malformed settings were modified")
	}
	for _, args := range [][]string{
		{"setup", "--watchdog", "sometimes"},
		{"setup", "--project", filepath.Join(home, "no-such-dir")},
		{"setup", "--agents", "aider", "--watchdog", "none"},
	} {
		if r := e.inproc(home, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

func TestDoctorCommand(t *testing.T) {
	e := newEnv(t)
	home := t.TempDir()
	e.vars["HOME"] = home
	e.vars["CLAUDE_CONFIG_DIR"] = filepath.Join(home, ".claude")

	// Nothing wired: the hook fails, warp (real, on 127.0.0.1:0) is fine.
	r := e.inproc(home, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "fail  hook ") || !strings.Contains(r.stdout, "ok    warp ") || !strings.Contains(r.stdout, "fix: run gyrum setup") {
		t.Errorf("doctor, nothing wired: exit %d\n%s", r.code, r.stdout)
	}

	if r := e.inproc(home, "setup", "--watchdog", "none"); r.code != 0 {
		t.Fatalf("setup: %s", r.stderr)
	}
	e.ws.Create("T-D")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-D", "--watch-pid", strconv.Itoa(watched.PID), "--json"))

	r = e.inproc(wt, "doctor", "--json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json printed %q: %v", r.stdout, err)
	}
	status := map[string]string{}
	for _, c := range rep.Checks {
		status[c.Name] = c.Status
	}
	for name, want := range map[string]string{"hook": "ok", "hook-binary": "ok", "hook-run": "ok", "warp": "ok", "loop T-D": "ok"} {
		if status[name] != want {
			t.Errorf("check %s = %q, want %q (%+v)", name, status[name], want, rep.Checks)
		}
	}
	// The watchdog is not scheduled for this user (the test does not touch
	// the real crontab or user manager) unless it already was: a warning,
	// and every other check passes, so doctor exits 0.
	if status["watchdog"] != "ok" && (status["watchdog"] != "warn" || r.code != 0 || !rep.OK) {
		t.Errorf("watchdog %q: exit %d, ok %v; want a warning and exit 0", status["watchdog"], r.code, rep.OK)
	}

	// The server goes down, the loop dies.
	e.ws.Down()
	loop, _ := proc.Lookup(sr.LoopPID)
	proc.Stop(t.Context(), loop, 0)
	d, _ := gyrumdir.Open(wt)
	// A SIGTERMed loop removes its own entry; put one back as a crash would
	// leave it.
	gyrumdir.NewRegistry(e.home).Add(gyrumdir.Entry{PID: loop.PID, StartTime: loop.StartTime, Dir: wt, Ticket: "T-D"})
	d.WritePID(gyrumdir.LoopPIDFile, loop)
	r = e.inproc(wt, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "fail  warp ") || !strings.Contains(r.stdout, "cannot reach warp") || !strings.Contains(r.stdout, "is not running") {
		t.Errorf("doctor, server down and loop dead: exit %d\n%s", r.code, r.stdout)
	}
}

// TestDoctorBrokenHookExitsNonZero: the real binary, a hook command that
// fails when run (its program exits 1): doctor says so, with the fix, and
// exits 1.
func TestDoctorBrokenHookExitsNonZero(t *testing.T) {
	e := newEnv(t)
	home := t.TempDir()
	e.vars["HOME"] = home
	e.vars["CLAUDE_CONFIG_DIR"] = filepath.Join(home, ".claude")
	bad := filepath.Join(t.TempDir(), "gyrum")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho 'cannot load' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := bad + " touch-activity"
	var evs []string
	for _, ev := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"} {
		evs = append(evs, `"`+ev+`":[{"matcher":"*","hooks":[{"type":"command","command":"`+cmd+`","timeout":5}]}]`)
	}
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"hooks":{`+strings.Join(evs, ",")+`}}`), 0o644)
	r := e.gyrum(home, "", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "fail  hook-run") || !strings.Contains(r.stdout, "exited 1: cannot load") ||
		!strings.Contains(r.stdout, "ok    hook ") {
		t.Errorf("doctor with a failing hook: exit %d\n%s", r.code, r.stdout)
	}
}
