package gyrumcli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// Every doctor fix that names a command is tested here the way a user
// meets it: the failure is set up for real, doctor --json (the real
// binary) names the check and its command, the command runs through
// /bin/sh with the user's environment, and doctor then passes that check.

// fixEnv is a user's world for the fix tests: an isolated HOME, Claude
// Code's config dir in it, and a PATH that holds only gyrum and nohup (no
// crontab, no systemctl: setup must not touch this machine's schedule).
func fixEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	home := t.TempDir()
	e.vars["HOME"] = home
	e.vars["CLAUDE_CONFIG_DIR"] = filepath.Join(home, ".claude")
	bin := t.TempDir()
	for name, target := range map[string]string{"gyrum": gyrumBin, "nohup": "/usr/bin/nohup"} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	e.vars["PATH"] = bin
	return e, home
}

// doctorReport runs the real doctor --json in dir.
func doctorReport(t *testing.T, e *env, dir string) doctor.Report {
	t.Helper()
	r := e.gyrum(dir, "", "doctor", "--json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json (exit %d) printed %q: %v\nstderr: %s", r.code, r.stdout, err, r.stderr)
	}
	return rep
}

// failing returns doctor's check named name, which must be failing (or
// warning, when warn) with a command to run.
func failing(t *testing.T, rep doctor.Report, name string, warn bool) doctor.Check {
	t.Helper()
	want := doctor.StatusFail
	if warn {
		want = doctor.StatusWarn
	}
	for _, c := range rep.Checks {
		if c.Name == name && c.Status == want {
			if c.Command == "" || !strings.Contains(c.Fix, c.Command) {
				t.Fatalf("check %s: fix %q has no command of its own (command %q)", name, c.Fix, c.Command)
			}
			return c
		}
	}
	t.Fatalf("no %s check %q in %+v", want, name, rep.Checks)
	return doctor.Check{}
}

// runFix runs a fix's command as the user would paste it.
func runFix(t *testing.T, e *env, dir string, c doctor.Check) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Command)
	cmd.Dir = dir
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the fix of %s (%s): %v\n%s", c.Name, c.Command, err, out)
	}
}

// passes waits until doctor no longer fails or warns about name (a check
// that is gone, such as a dropped registry entry, passes too).
func passes(t *testing.T, e *env, dir, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var bad []doctor.Check
		for _, c := range doctorReport(t, e, dir).Checks {
			if c.Name == name && c.Status != doctor.StatusOK {
				bad = append(bad, c)
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("doctor's %s check still does not pass after its fix: %+v", name, bad)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fixAndCheck is the whole round: the failing check, its command, the pass.
func fixAndCheck(t *testing.T, e *env, dir, name string) doctor.Check {
	t.Helper()
	c := failing(t, doctorReport(t, e, dir), name, false)
	runFix(t, e, dir, c)
	passes(t, e, dir, name)
	return c
}

// startLoop claims ticket in a fresh worktree with a live stand-in agent.
func startLoop(t *testing.T, e *env, ticket string) (wt string, loop proc.Identity) {
	t.Helper()
	e.ws.Create(ticket)
	_, watched := agent(t, "sleep", "1000")
	wt = mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", ticket, "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	loop, err := proc.Lookup(sr.LoopPID)
	if err != nil {
		t.Fatal(err)
	}
	return wt, loop
}

func TestDoctorFixHookMissing(t *testing.T) {
	e, home := fixEnv(t)
	c := fixAndCheck(t, e, home, "hook")
	if c.Command != "gyrum setup" {
		t.Errorf("command %q", c.Command)
	}
	passes(t, e, home, "hook-run")
}

// A hook whose program is gone (gyrum moved or uninstalled): setup with
// the gyrum of today rewrites it.
func TestDoctorFixHookBinaryGone(t *testing.T) {
	e, home := fixEnv(t)
	writeHook(t, home, filepath.Join(t.TempDir(), "gone", "gyrum")+" touch-activity")
	fixAndCheck(t, e, home, "hook-binary")
	passes(t, e, home, "hook-run")
}

// A hook named like gyrum's that exits 0 without recording activity.
func TestDoctorFixHookThatDoesNothing(t *testing.T) {
	e, home := fixEnv(t)
	fake := filepath.Join(t.TempDir(), "gyrum")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeHook(t, home, fake+" touch-activity")
	fixAndCheck(t, e, home, "hook-run")
}

// writeHook wires command for every Claude Code event doctor checks.
func writeHook(t *testing.T, home, command string) {
	t.Helper()
	var evs []string
	for _, ev := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"} {
		evs = append(evs, `"`+ev+`":[{"matcher":"*","hooks":[{"type":"command","command":"`+command+`","timeout":5}]}]`)
	}
	dir := filepath.Join(home, ".claude")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"hooks":{`+strings.Join(evs, ",")+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The watchdog warning's command, with the real crontab program. As root
// the test's crontab is the user nobody's (a crontab wrapper adds -u
// nobody), so the machine's own schedule is left alone.
func TestDoctorFixWatchdogNotScheduled(t *testing.T) {
	crontab, err := exec.LookPath("crontab")
	if err != nil {
		t.Skip("skipping: no crontab program (CI installs Debian's cron)")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: writing another user's crontab (so this user's stays untouched) needs root")
	}
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skipf("skipping: no user nobody: %v", err)
	}
	e, home := fixEnv(t)
	wrapper := filepath.Join(e.vars["PATH"], "crontab")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+crontab+" -u nobody \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = exec.Command(crontab, "-u", "nobody", "-r").Run()
	t.Cleanup(func() { _ = exec.Command(crontab, "-u", "nobody", "-r").Run() })

	c := failing(t, doctorReport(t, e, home), "watchdog", true)
	runFix(t, e, home, c)
	passes(t, e, home, "watchdog")
	out, err := exec.Command(crontab, "-u", "nobody", "-l").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "watchdog sweep") {
		t.Errorf("nobody's crontab after the fix: %v\n%s", err, out)
	}
}

// A loop killed with SIGKILL leaves its registry entry: the command drops
// it and starts the loop again, which registers and heartbeats.
func TestDoctorFixDeadLoop(t *testing.T) {
	e, home := fixEnv(t)
	wt, loop := startLoop(t, e, "T-F1")
	syscall.Kill(loop.PID, syscall.SIGKILL)
	waitFor(t, "the loop to die", func() bool { return !loop.Alive() })
	fixAndCheck(t, e, home, "loop T-F1")
	waitFor(t, "the restarted loop to register", func() bool {
		live := e.loopsRunning()
		return len(live) == 1 && gyrumdir.SamePath(live[0].Dir, wt)
	})
	ok := false
	for _, c := range doctorReport(t, e, home).Checks {
		ok = ok || (c.Name == "loop T-F1" && c.Status == doctor.StatusOK)
	}
	if !ok {
		t.Errorf("doctor does not find the restarted loop of T-F1 healthy")
	}
}

// An orphan: the loop runs on after its lease.json went.
func TestDoctorFixOrphanLoop(t *testing.T) {
	e, home := fixEnv(t)
	// A loop finds its lease.json gone at its next tick and exits on its
	// own: with the scaled 0.2 s tick it raced doctor (failed 1 run in 4).
	// The orphan doctor must stop is one whose tick has not come yet.
	e.vars["HEARTBEAT_INTERVAL_SECS"] = "600"
	wt, loop := startLoop(t, e, "T-F2")
	if err := os.Remove(filepath.Join(wt, gyrumdir.DirName, gyrumdir.LeaseFile)); err != nil {
		t.Fatal(err)
	}
	fixAndCheck(t, e, home, "loop T-F2")
	waitFor(t, "the orphan to stop", func() bool { return !loop.Alive() })
}

// heartbeat.pid gone under a running loop.
func TestDoctorFixMissingPidFile(t *testing.T) {
	e, home := fixEnv(t)
	wt, loop := startLoop(t, e, "T-F3")
	if err := os.Remove(filepath.Join(wt, gyrumdir.DirName, gyrumdir.LoopPIDFile)); err != nil {
		t.Fatal(err)
	}
	fixAndCheck(t, e, home, "loop T-F3")
	waitFor(t, "the old loop to stop", func() bool { return !loop.Alive() })
}

// A registry file that cannot be read.
func TestDoctorFixCorruptRegistryEntry(t *testing.T) {
	e, home := fixEnv(t)
	run := gyrumdir.NewRegistry(e.home).Dir()
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "4242.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	fixAndCheck(t, e, home, "loop")
}

// $GYRUM_HOME deleted under a worktree whose loop is gone too: status and
// doctor say so, doctor's command restarts the loop, which restores what
// the hook needs, and the hook credits the worktree again.
func TestDoctorFixLostHome(t *testing.T) {
	e, _ := fixEnv(t)
	wt, loop := startLoop(t, e, "T-F4")
	syscall.Kill(loop.PID, syscall.SIGKILL)
	waitFor(t, "the loop to die", func() bool { return !loop.Alive() })
	if err := os.RemoveAll(e.home); err != nil {
		t.Fatal(err)
	}

	r := e.gyrum(wt, "", "status", "--json")
	var hs struct {
		Loops    []map[string]any `json:"loops"`
		Problems []struct{ Dir, Problem, Fix string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &hs); err != nil {
		t.Fatalf("status --json: %q: %v", r.stdout, err)
	}
	if len(hs.Loops) != 1 || len(hs.Problems) != 1 || !strings.Contains(hs.Problems[0].Problem, "has no record of it") ||
		!strings.Contains(hs.Problems[0].Fix, "gyrum heartbeat run --dir") {
		t.Errorf("status in the worktree after the home went: %s", r.stdout)
	}
	if r := e.gyrum(wt, "", "status"); !strings.Contains(r.stderr, "has no record of it") || !strings.Contains(r.stdout, "T-F4") {
		t.Errorf("status (text) after the home went:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}

	c := failing(t, doctorReport(t, e, wt), "loop (this worktree)", false)
	if !strings.Contains(c.Detail, "has no record of this worktree") {
		t.Errorf("doctor's detail does not say the home lost the worktree: %s", c.Detail)
	}
	runFix(t, e, wt, c)
	passes(t, e, wt, "loop (this worktree)")
	waitFor(t, "the restarted loop to restore the prepared worktree", func() bool {
		return gyrumdir.NewPrepared(e.home).Has(wt)
	})
	if r := e.gyrum(wt, "", "status", "--json"); strings.Contains(r.stdout, "problems") {
		t.Errorf("status still reports a problem after the fix: %s", r.stdout)
	}

	// The hook credits the worktree again.
	act := filepath.Join(wt, gyrumdir.DirName, gyrumdir.ActivityFile)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(act, old, old); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	r = e.gyrum(wt, `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"t1","cwd":"`+wt+`"}`, "touch-activity")
	if r.code != 0 {
		t.Fatalf("touch-activity: exit %d: %s", r.code, r.stderr)
	}
	fi, err := os.Stat(act)
	if err != nil || time.Since(fi.ModTime()) > time.Minute {
		t.Errorf("the hook did not credit the worktree after the fix: %v %v", fi, err)
	}
}
