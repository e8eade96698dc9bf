package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/shellquote"
)

// Names of the watchdog schedule that setup installs and uninstall removes.
const (
	ServiceName = "gyrum-watchdog.service"
	TimerName   = "gyrum-watchdog.timer"
	// CronTag ends the crontab line setup adds; it is how uninstall finds
	// exactly that line and nothing else.
	CronTag = "# gyrum-watchdog"
	// CronSchedule is the watchdog's cron schedule: every 5 minutes.
	CronSchedule = "*/5 * * * *"
)

// commandTimeout bounds every systemctl and crontab call: a wedged user bus
// must not hang setup.
const commandTimeout = 15 * time.Second

// runCommand runs argv with stdin and returns its stdout; a failure carries
// the command and its stderr.
func runCommand(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg != "" {
			return out.Bytes(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, msg)
		}
		return out.Bytes(), fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return out.Bytes(), nil
}

// envAssignments returns env as sorted NAME=VALUE words.
func envAssignments(env map[string]string) []string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, k := range names {
		out = append(out, k+"="+env[k])
	}
	return out
}

// systemdQuote quotes one word of an ExecStart= line: double quotes when
// it has spaces, quotes or a $, % doubled (systemd expands %-specifiers
// everywhere in a unit) and $ doubled (ExecStart= expands variables).
func systemdQuote(s string) string {
	return quoteUnitWord(s, strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$"))
}

// systemdEnvQuote quotes one VAR=value word of an Environment= line as
// systemdQuote does, but leaves $ alone: systemd expands no variables
// there, so a doubled $ would stay doubled in the value.
func systemdEnvQuote(s string) string {
	return quoteUnitWord(s, strings.NewReplacer(`\`, `\\`, `"`, `\"`))
}

func quoteUnitWord(s string, r *strings.Replacer) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;$") {
		return s
	}
	return `"` + r.Replace(s) + `"`
}

// ServiceUnit returns the content of gyrum-watchdog.service: a oneshot that
// runs bin watchdog sweep once, with env set for it (GYRUM_HOME when the
// registry is not in the default place).
func ServiceUnit(bin string, env map[string]string) string {
	var b strings.Builder
	b.WriteString("# Installed by gyrum setup; gyrum setup --uninstall removes it.\n")
	b.WriteString("[Unit]\nDescription=gyrum watchdog: reap orphan heartbeat loops\n")
	b.WriteString("Documentation=https://github.com/gyrum-labs/warp\n\n")
	b.WriteString("[Service]\nType=oneshot\n")
	for _, kv := range envAssignments(env) {
		b.WriteString("Environment=" + systemdEnvQuote(kv) + "\n")
	}
	b.WriteString("ExecStart=" + systemdQuote(bin) + " watchdog sweep\n")
	return b.String()
}

// TimerUnit returns the content of gyrum-watchdog.timer: every 5 minutes,
// catching up after a suspend or a reboot.
func TimerUnit() string {
	return "# Installed by gyrum setup; gyrum setup --uninstall removes it.\n" +
		"[Unit]\nDescription=gyrum watchdog every 5 minutes\n\n" +
		"[Timer]\nOnCalendar=*:0/5\nPersistent=true\nUnit=" + ServiceName + "\n\n" +
		"[Install]\nWantedBy=timers.target\n"
}

// cronQuote quotes a word for the sh that cron runs the line with, and
// escapes %, which cron turns into a newline.
func cronQuote(s string) string {
	return strings.ReplaceAll(shellquote.Quote(s), "%", `\%`)
}

// CronLine returns the crontab line of the watchdog, ending in CronTag.
func CronLine(bin string, env map[string]string) string {
	var words []string
	for _, kv := range envAssignments(env) {
		name, val, _ := strings.Cut(kv, "=")
		words = append(words, name+"="+cronQuote(val))
	}
	words = append(words, cronQuote(bin), "watchdog", "sweep", ">/dev/null", "2>&1", CronTag)
	return CronSchedule + " " + strings.Join(words, " ")
}

// isCronLine reports whether a crontab line is the one setup adds.
func isCronLine(line string) bool {
	return strings.HasSuffix(strings.TrimRight(line, " \t\r\n"), CronTag)
}

// mergeCrontab returns table with exactly one watchdog line, want: an old
// one (another binary path) is replaced where it stands, duplicates are
// dropped, else want is appended. Every other line is kept as it is.
func mergeCrontab(table, want string) (string, bool) {
	lines := splitLines(table)
	var out []string
	found, changed := false, false
	for _, l := range lines {
		if !isCronLine(l) {
			out = append(out, l)
			continue
		}
		if found {
			changed = true
			continue
		}
		found = true
		if strings.TrimRight(l, "\r\n") != want {
			changed = true
		}
		out = append(out, want+"\n")
	}
	if !found {
		if n := len(out); n > 0 && !strings.HasSuffix(out[n-1], "\n") {
			out[n-1] += "\n"
		}
		out = append(out, want+"\n")
		changed = true
	}
	if !changed {
		return table, false
	}
	return strings.Join(out, ""), true
}

// removeCronLines returns table without the watchdog line(s).
func removeCronLines(table string) (string, bool) {
	var out []string
	changed := false
	for _, l := range splitLines(table) {
		if isCronLine(l) {
			changed = true
			continue
		}
		out = append(out, l)
	}
	if !changed {
		return table, false
	}
	return strings.Join(out, ""), true
}

// Cron reads and writes a user's crontab with the crontab program.
type Cron struct {
	Crontab string // the program; "" → "crontab" on PATH
	User    string // crontab -u USER; "" → the current user
}

func (c Cron) argv(args ...string) []string {
	bin := c.Crontab
	if bin == "" {
		bin = "crontab"
	}
	argv := []string{bin}
	if c.User != "" {
		argv = append(argv, "-u", c.User)
	}
	return append(argv, args...)
}

// Available reports whether the crontab program can be found.
func (c Cron) Available() bool {
	_, err := exec.LookPath(c.argv()[0])
	return err == nil
}

// Read returns the user's crontab; a user without one has an empty table.
// Any other failure is an error, so a table that could not be read is never
// overwritten.
func (c Cron) Read(ctx context.Context) (string, error) {
	out, err := runCommand(ctx, nil, c.argv("-l")...)
	if err != nil {
		var ee *exec.ExitError
		// crontab -l says "no crontab for USER" and exits 1: there is no
		// other way to tell an absent table from a failure.
		if errors.As(err, &ee) && strings.Contains(err.Error(), "no crontab for") {
			return "", nil
		}
		return "", fmt.Errorf("read crontab: %w", err)
	}
	return string(out), nil
}

// Write installs table as the user's crontab.
func (c Cron) Write(ctx context.Context, table string) error {
	if _, err := runCommand(ctx, []byte(table), c.argv("-")...); err != nil {
		return fmt.Errorf("write crontab: %w", err)
	}
	return nil
}

// Installed returns the watchdog line of the user's crontab, ok false when
// there is none.
func (c Cron) Installed(ctx context.Context) (line string, ok bool, err error) {
	table, err := c.Read(ctx)
	if err != nil {
		return "", false, err
	}
	for _, l := range splitLines(table) {
		if isCronLine(l) {
			return strings.TrimRight(l, "\r\n"), true, nil
		}
	}
	return "", false, nil
}

// Systemd talks to the user's systemd instance with systemctl --user.
type Systemd struct {
	UnitDir   string // where user units live: $XDG_CONFIG_HOME/systemd/user
	Systemctl string // the program; "" → "systemctl" on PATH
}

func (s Systemd) argv(args ...string) []string {
	bin := s.Systemctl
	if bin == "" {
		bin = "systemctl"
	}
	return append([]string{bin, "--user"}, args...)
}

// Available reports whether a systemd user manager answers: systemctl
// --user show-environment succeeds within a few seconds.
func (s Systemd) Available(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := runCommand(ctx, nil, s.argv("show-environment")...)
	return err == nil
}

// TimerEnabled reports whether gyrum-watchdog.timer is enabled.
func (s Systemd) TimerEnabled(ctx context.Context) (bool, error) {
	out, err := runCommand(ctx, nil, s.argv("is-enabled", TimerName)...)
	state := strings.TrimSpace(string(out))
	if state == "enabled" || state == "enabled-runtime" {
		return true, nil
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return false, err // systemctl itself could not run
	}
	if err != nil && state == "" {
		return false, err // e.g. no user bus
	}
	return false, nil
}

func (s Systemd) run(ctx context.Context, args ...string) error {
	_, err := runCommand(ctx, nil, s.argv(args...)...)
	return err
}
