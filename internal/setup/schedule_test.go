package setup_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/setup"
)

// executable returns a path to a real executable named gyrum under a
// directory whose name needs quoting, so the units and the crontab line are
// checked with an awkward path that exists.
func executable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "dir with space%")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gyrum")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestUnitFilesPassSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: cannot verify the unit files here")
	}
	for _, bin := range []string{executable(t), "/bin/true"} {
		dir := t.TempDir()
		env := map[string]string{"GYRUM_HOME": "/var/tmp/gyrum home/$HOME 100%"}
		svc := filepath.Join(dir, setup.ServiceName)
		tmr := filepath.Join(dir, setup.TimerName)
		os.WriteFile(svc, []byte(setup.ServiceUnit(bin, env)), 0o644)
		os.WriteFile(tmr, []byte(setup.TimerUnit()), 0o644)
		cmd := exec.Command(analyze, "verify", svc, tmr)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("systemd-analyze verify (%s): %v\n%s\n--- service:\n%s", bin, err, stderr.String(), setup.ServiceUnit(bin, env))
		}
		// verify only warns (exit 0) about unknown keys and bad values:
		// any message is a defect in the units.
		if s := strings.TrimSpace(stderr.String()); s != "" {
			t.Errorf("systemd-analyze verify complained:\n%s", s)
		}
	}

	// The check itself catches a broken unit.
	dir := t.TempDir()
	bad := filepath.Join(dir, "gyrum-watchdog.service")
	os.WriteFile(bad, []byte(setup.ServiceUnit("/nonexistent/gyrum", nil)), 0o644)
	if err := exec.Command(analyze, "verify", bad).Run(); err == nil {
		t.Errorf("systemd-analyze accepted a unit whose binary does not exist: the check proves nothing")
	}
}

func TestUnitContent(t *testing.T) {
	svc := setup.ServiceUnit("/opt/gyrum/bin/gyrum", map[string]string{"GYRUM_HOME": "/srv/g"})
	for _, want := range []string{"Type=oneshot\n", "ExecStart=/opt/gyrum/bin/gyrum watchdog sweep\n", "Environment=GYRUM_HOME=/srv/g\n"} {
		if !strings.Contains(svc, want) {
			t.Errorf("service lacks %q:\n%s", want, svc)
		}
	}
	if got := setup.ServiceUnit("/a b/100%/gyrum", nil); !strings.Contains(got, `ExecStart="/a b/100%%/gyrum" watchdog sweep`) {
		t.Errorf("awkward path not quoted for systemd:\n%s", got)
	}
	// ExecStart= expands $VARS (a literal $ is $$); Environment= expands
	// none, so a $ there is written once (systemd.exec(5)).
	got := setup.ServiceUnit("/opt/$x/gyrum", map[string]string{"GYRUM_HOME": "/h/$x 100%"})
	for _, want := range []string{`ExecStart="/opt/$$x/gyrum" watchdog sweep` + "\n", `Environment="GYRUM_HOME=/h/$x 100%%"` + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("service lacks %q:\n%s", want, got)
		}
	}
	tmr := setup.TimerUnit()
	for _, want := range []string{"OnCalendar=*:0/5\n", "Persistent=true\n", "WantedBy=timers.target\n", "Unit=gyrum-watchdog.service\n"} {
		if !strings.Contains(tmr, want) {
			t.Errorf("timer lacks %q:\n%s", want, tmr)
		}
	}
	if got, want := setup.CronLine("/opt/gyrum/bin/gyrum", nil), "*/5 * * * * /opt/gyrum/bin/gyrum watchdog sweep >/dev/null 2>&1 # gyrum-watchdog"; got != want {
		t.Errorf("cron line = %q, want %q", got, want)
	}
	if got, want := setup.CronLine("/a b/100%/gyrum", map[string]string{"GYRUM_HOME": "/h"}), `*/5 * * * * GYRUM_HOME=/h '/a b/100\%/gyrum' watchdog sweep >/dev/null 2>&1 # gyrum-watchdog`; got != want {
		t.Errorf("cron line = %q, want %q", got, want)
	}
}

// systemdWorks reports whether this host has a working systemd user
// manager; tests that must not touch a developer's real timer skip then.
func systemdWorks() bool {
	return setup.Systemd{}.Available(context.Background())
}

func TestForcedSystemdWithoutUserManagerFails(t *testing.T) {
	if systemdWorks() {
		t.Skip("systemctl --user works on this host: not testing the failure, and not touching the real user manager")
	}
	dir := t.TempDir()
	o := hookOptions(dir)
	o.Watchdog = setup.WatchdogSystemd
	o.Systemd.UnitDir = filepath.Join(dir, "units")
	_, err := setup.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "systemctl --user does not work") {
		t.Fatalf("err = %v, want the systemd refusal", err)
	}
	if _, err := os.Stat(o.Systemd.UnitDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit directory created although systemd is unusable")
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("settings written although the run failed in planning")
	}
}

// Uninstall removes the unit files of an earlier install and their
// timers.target.wants link even where systemctl --user does not work (here
// systemctl is a path that does not exist), and nothing else.
func TestSystemdUninstallRemovesOnlyOurUnits(t *testing.T) {
	dir := t.TempDir()
	units := filepath.Join(dir, "units")
	os.MkdirAll(filepath.Join(units, "timers.target.wants"), 0o755)
	svc := filepath.Join(units, setup.ServiceName)
	tmr := filepath.Join(units, setup.TimerName)
	other := filepath.Join(units, "other.service")
	os.WriteFile(svc, []byte(setup.ServiceUnit("/old/gyrum", nil)), 0o644)
	os.WriteFile(tmr, []byte(setup.TimerUnit()), 0o644)
	os.WriteFile(other, []byte("[Service]\nExecStart=/bin/true\n"), 0o644)
	wants := filepath.Join(units, "timers.target.wants", setup.TimerName)
	os.Symlink(tmr, wants)

	o := hookOptions(dir)
	o.Uninstall = true
	o.Watchdog = setup.WatchdogSystemd
	o.Systemd = setup.Systemd{UnitDir: units, Systemctl: filepath.Join(dir, "no-systemctl")}
	var out bytes.Buffer
	o.Out = &out
	o.DryRun = true
	if _, err := setup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"would remove " + svc, "would remove " + tmr, "would remove " + wants} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	for _, p := range []string{svc, tmr, wants} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("dry run removed %s", p)
		}
	}

	o.DryRun = false
	out.Reset()
	if _, err := setup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{svc, tmr, wants} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("uninstall left %s", p)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("uninstall removed a unit that is not ours: %v", err)
	}
}

// scratchUser creates a throwaway user for crontab -u, removed at cleanup.
func scratchUser(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for useradd and crontab -u: not touching this user's own crontab")
	}
	if _, err := exec.LookPath("crontab"); err != nil {
		t.Skip("crontab not installed (Debian package cron; .ci/run installs it)")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd not installed")
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "gyrumt" + hex.EncodeToString(b)
	// useradd fails while another process holds the lock of /etc/passwd
	// (tests of other packages create users too): retry a little.
	var out []byte
	var err error
	for i := 0; i < 50; i++ {
		if out, err = exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err == nil || !strings.Contains(string(out), "lock") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Skipf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		exec.Command("crontab", "-u", name, "-r").Run()
		var out []byte
		var err error
		for i := 0; i < 50; i++ {
			if out, err = exec.Command("userdel", name).CombinedOutput(); err == nil || !strings.Contains(string(out), "lock") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	return name
}

func crontabL(t *testing.T, user string) string {
	t.Helper()
	out, err := exec.Command("crontab", "-u", user, "-l").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "no crontab for") {
			return ""
		}
		t.Fatalf("crontab -l: %v: %s", err, out)
	}
	return string(out)
}

func crontabSet(t *testing.T, user, table string) {
	t.Helper()
	cmd := exec.Command("crontab", "-u", user, "-")
	cmd.Stdin = strings.NewReader(table)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crontab -: %v: %s", err, out)
	}
}

func TestCrontabInstallUninstallKeepsOtherLines(t *testing.T) {
	user := scratchUser(t)
	ctx := context.Background()
	others := "MAILTO=\"\"\n" +
		"# nightly jobs of this user\n" +
		"0 3 * * * /usr/bin/backup --all # nightly\n" +
		"@reboot echo booted >> /tmp/boot.log\n" +
		"0 0 * * * date +\\%F >> /tmp/dates\n"
	crontabSet(t, user, others)
	if got := crontabL(t, user); got != others {
		t.Fatalf("seeded crontab reads back as %q, want %q", got, others)
	}

	dir := t.TempDir()
	o := hookOptions(dir)
	o.Watchdog = setup.WatchdogCron
	o.Cron = setup.Cron{User: user}
	o.Systemd = setup.Systemd{UnitDir: filepath.Join(dir, "units")}
	o.ScheduleEnv = map[string]string{"GYRUM_HOME": "/var/lib/gyrum"}
	line := setup.CronLine(testBinary, o.ScheduleEnv)

	// Dry run: says what it would do, changes nothing.
	var out bytes.Buffer
	o.Out, o.DryRun = &out, true
	if _, err := setup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := crontabL(t, user); got != others {
		t.Fatalf("dry run changed the crontab:\n%s", got)
	}
	if !strings.Contains(out.String(), "+"+line) || !strings.Contains(out.String(), "crontab -u "+user+" -") {
		t.Errorf("dry run output lacks the line or the command:\n%s", out.String())
	}

	o.DryRun = false
	rep, err := setup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Schedule != setup.WatchdogCron {
		t.Errorf("schedule = %q, want cron", rep.Schedule)
	}
	if got, want := crontabL(t, user), others+line+"\n"; got != want {
		t.Fatalf("after install:\n%s\nwant:\n%s", got, want)
	}
	// Cron reports it for doctor.
	if got, ok, err := o.Cron.Installed(ctx); err != nil || !ok || got != line {
		t.Errorf("Installed = %q, %v, %v; want the line", got, ok, err)
	}

	// Idempotent.
	rep, err = setup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed {
		t.Errorf("second install reports a change")
	}
	if got, want := crontabL(t, user), others+line+"\n"; got != want {
		t.Fatalf("after second install:\n%s", got)
	}

	// An old line (another binary path) in the middle is replaced where it
	// stands, not duplicated.
	oldLine := setup.CronLine("/home/dev/go/bin/gyrum", nil)
	withOld := "MAILTO=\"\"\n" + oldLine + "\n0 3 * * * /usr/bin/backup --all # nightly\n"
	crontabSet(t, user, withOld)
	if _, err := setup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got, want := crontabL(t, user), "MAILTO=\"\"\n"+line+"\n0 3 * * * /usr/bin/backup --all # nightly\n"; got != want {
		t.Fatalf("old line not replaced in place:\n%s\nwant:\n%s", got, want)
	}

	// Uninstall removes exactly our line.
	crontabSet(t, user, others+line+"\n")
	o.Uninstall = true
	if _, err := setup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := crontabL(t, user); got != others {
		t.Fatalf("after uninstall:\n%q\nwant:\n%q", got, others)
	}
	if _, ok, _ := o.Cron.Installed(ctx); ok {
		t.Errorf("Installed still reports the line")
	}
	// Uninstall again: nothing to do.
	rep, err = setup.Run(ctx, o)
	if err != nil || rep.Changed {
		t.Errorf("second uninstall: changed=%v err=%v", rep.Changed, err)
	}
}

func TestCrontabForUserWithoutOne(t *testing.T) {
	user := scratchUser(t)
	ctx := context.Background()
	dir := t.TempDir()
	o := hookOptions(dir)
	// auto with a systemctl that does not exist falls back to cron (and
	// never touches the real user manager of the host running the test).
	o.Watchdog = setup.WatchdogAuto
	o.Systemd = setup.Systemd{UnitDir: filepath.Join(dir, "units"), Systemctl: filepath.Join(dir, "no-systemctl")}
	o.Cron = setup.Cron{User: user}
	rep, err := setup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Schedule != setup.WatchdogCron {
		t.Errorf("auto chose %q, want cron", rep.Schedule)
	}
	if got, want := crontabL(t, user), setup.CronLine(testBinary, nil)+"\n"; got != want {
		t.Errorf("crontab = %q, want %q", got, want)
	}
	o.Uninstall = true
	if _, err := setup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := crontabL(t, user); got != "" {
		t.Errorf("crontab after uninstall = %q, want empty", got)
	}
}

// A crontab that cannot be read is never overwritten: crontab -u of a user
// that does not exist fails, and setup stops.
func TestUnreadableCrontabStopsSetup(t *testing.T) {
	if _, err := exec.LookPath("crontab"); err != nil {
		t.Skip("crontab not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("crontab -u needs root")
	}
	dir := t.TempDir()
	o := hookOptions(dir)
	o.Watchdog = setup.WatchdogCron
	o.Cron = setup.Cron{User: "gyrum-no-such-user"}
	_, err := setup.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "read crontab") {
		t.Fatalf("err = %v, want a read failure", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("settings written although planning failed")
	}
}

// noSchedulers points o at a systemctl and a crontab that do not exist:
// a host with neither a systemd user manager nor cron (a container), and
// the real ones of the host running the test are never touched.
func noSchedulers(o *setup.Options, dir string) {
	o.Systemd = setup.Systemd{UnitDir: filepath.Join(dir, "units"), Systemctl: filepath.Join(dir, "no-systemctl")}
	o.Cron = setup.Cron{Crontab: filepath.Join(dir, "no-crontab")}
}

// Without any scheduler, auto installs the hook all the same, schedules
// nothing, and warns with what to run by hand and how to schedule it later.
func TestNoSchedulerInstallsTheHookAndWarns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := hookOptions(dir)
	o.Watchdog = setup.WatchdogAuto
	o.ScheduleEnv = map[string]string{"GYRUM_HOME": "/srv/gyrum home"}
	noSchedulers(&o, dir)
	var out bytes.Buffer
	o.Out = &out
	rep, err := setup.Run(ctx, o)
	if err != nil {
		t.Fatalf("setup without a scheduler failed: %v", err)
	}
	settings := filepath.Join(dir, ".claude", "settings.json")
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatalf("the hook was not installed: %v", err)
	}
	if n := strings.Count(string(data), testBinary+" touch-activity"); n != 3 {
		t.Errorf("settings run the hook %d times, want 3:\n%s", n, data)
	}
	if !rep.Changed || rep.Schedule != "" {
		t.Errorf("report = %+v, want changed and no schedule", rep)
	}
	if len(rep.Warnings) != 1 {
		t.Fatalf("warnings = %q, want one", rep.Warnings)
	}
	w := rep.Warnings[0]
	for _, want := range []string{
		"the watchdog is not scheduled",
		"GYRUM_HOME='/srv/gyrum home' " + testBinary + " watchdog sweep", // by hand, same registry
		"gyrum setup --watchdog cron",
		"gyrum setup --watchdog systemd",
		setup.CronLine(testBinary, o.ScheduleEnv),
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q:\n%s", want, w)
		}
	}
	if strings.Contains(out.String(), "not scheduled") {
		t.Errorf("Run printed the warning itself (the caller does):\n%s", out.String())
	}
	if _, err := os.Stat(o.Systemd.UnitDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit directory created without a systemd user manager")
	}

	// Again: nothing to change, the same warning.
	rep, err = setup.Run(ctx, o)
	if err != nil || rep.Changed || len(rep.Warnings) != 1 {
		t.Errorf("second run: %+v, %v", rep, err)
	}
	again, _ := os.ReadFile(settings)
	if !bytes.Equal(again, data) {
		t.Errorf("second run changed the settings")
	}

	// Uninstall needs no scheduler either.
	o.Uninstall = true
	if _, err := setup.Run(ctx, o); err != nil {
		t.Fatalf("uninstall without a scheduler: %v", err)
	}
	if b, _ := os.ReadFile(settings); strings.Contains(string(b), "touch-activity") {
		t.Errorf("uninstall left the hook:\n%s", b)
	}
}

// A dry run always shows the hook's diff: without a scheduler (exit 0,
// with the warning), and before the error when the scheduler asked for by
// name is missing.
func TestDryRunShowsTheHookWithoutScheduler(t *testing.T) {
	for _, watchdog := range []string{setup.WatchdogAuto, setup.WatchdogCron, setup.WatchdogSystemd} {
		t.Run(watchdog, func(t *testing.T) {
			dir := t.TempDir()
			o := hookOptions(dir)
			o.Watchdog = watchdog
			o.DryRun = true
			noSchedulers(&o, dir)
			var out bytes.Buffer
			o.Out = &out
			rep, err := setup.Run(context.Background(), o)
			settings := filepath.Join(dir, ".claude", "settings.json")
			switch watchdog {
			case setup.WatchdogAuto:
				if err != nil || len(rep.Warnings) != 1 {
					t.Fatalf("dry run: %+v, %v", rep, err)
				}
			case setup.WatchdogCron:
				if err == nil || !strings.Contains(err.Error(), "no crontab program") || !strings.Contains(err.Error(), "apt-get install cron") {
					t.Fatalf("err = %v, want the missing crontab, with what to do", err)
				}
			case setup.WatchdogSystemd:
				if err == nil || !strings.Contains(err.Error(), "systemctl --user does not work") {
					t.Fatalf("err = %v, want the systemd refusal", err)
				}
			}
			for _, want := range []string{"would create " + settings, "+++ " + settings, "+            \"command\": \"" + testBinary + " touch-activity\"", "dry run: nothing was changed"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("dry run output lacks %q:\n%s", want, out.String())
				}
			}
			if _, err := os.Stat(settings); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dry run wrote the settings")
			}
		})
	}
}

// A scheduler asked for by name that is missing is an error, and nothing
// is changed, not even the hook.
func TestCronMissingProgram(t *testing.T) {
	dir := t.TempDir()
	o := hookOptions(dir)
	o.Watchdog = setup.WatchdogCron
	noSchedulers(&o, dir)
	_, err := setup.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--watchdog cron: no crontab program") {
		t.Fatalf("err = %v, want the missing crontab", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("settings written although the forced schedule failed")
	}
	o.Watchdog = "sometimes"
	if _, err := setup.Run(context.Background(), o); err == nil {
		t.Errorf("unknown --watchdog accepted")
	}
}
