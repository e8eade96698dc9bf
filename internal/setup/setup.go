// Package setup installs what the agent side needs on a developer host: the
// touch-activity hook in the agent's settings (Claude Code, optionally
// Codex, Gemini CLI and Cursor) and the watchdog schedule (a systemd user
// timer, or a crontab line where there is no systemd user manager). It
// merges into what is there, is idempotent, backs files up and writes them
// atomically, refuses files it cannot parse without touching them, and
// uninstalls exactly what it added. RunInstructions puts the agent
// instructions snippet into an instructions file (CLAUDE.md, AGENTS.md).
package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// Watchdog schedule choices of Options.Watchdog.
const (
	WatchdogAuto    = "auto"    // systemd when systemctl --user works, else cron, else none with a warning
	WatchdogSystemd = "systemd" // a systemd user timer, or fail
	WatchdogCron    = "cron"    // a crontab line, or fail
	WatchdogNone    = "none"    // no schedule
)

// Options configures Run. Binary and Home are required; every other field
// has a default.
type Options struct {
	// Binary is the absolute path of the gyrum binary that the hook and the
	// schedule run (normally os.Executable()).
	Binary string
	// Home is the user's home directory, for the default locations.
	Home string
	// Project, when set, selects each agent's project settings
	// (DIR/.claude/settings.json, ...) instead of the user's.
	Project string
	// Agents lists the agents to wire besides the default one
	// (agent.Default, always wired), by their names in Agents(): each in
	// its settings file under Home (or a directory its variable names, as
	// $CODEX_HOME or $CLAUDE_CONFIG_DIR), or under Project (package agent
	// says where).
	Agents []string
	// Getenv reads the variables that move an agent's settings
	// ($CLAUDE_CONFIG_DIR, $CODEX_HOME); nil reads none.
	Getenv func(string) string
	// Watchdog is auto (default), systemd, cron or none.
	Watchdog string
	// Uninstall removes what setup adds instead of adding it.
	Uninstall bool
	// DryRun prints every change and makes none.
	DryRun bool
	// Systemd and Cron are the schedulers; Systemd.UnitDir "" →
	// $XDG_CONFIG_HOME/systemd/user (XDGConfigHome "" → Home/.config).
	Systemd       Systemd
	Cron          Cron
	XDGConfigHome string
	// ScheduleEnv is set for the scheduled sweep (GYRUM_HOME when the
	// registry is not in its default place).
	ScheduleEnv map[string]string
	// Now stamps backups; nil → time.Now.
	Now func() time.Time
	// Out receives one line per change (with DryRun: the diffs and
	// commands); nil → io.Discard.
	Out io.Writer
}

// SettingsPath returns the settings file of the default agent
// (agent.Default) that o selects.
func (o Options) SettingsPath() string {
	return agent.Default().Hooks.Path(o.Project, o.Home, o.Getenv)
}

// UnitDir returns the directory of the systemd user units.
func (o Options) UnitDir() string {
	if o.Systemd.UnitDir != "" {
		return o.Systemd.UnitDir
	}
	cfg := o.XDGConfigHome
	if cfg == "" {
		cfg = filepath.Join(o.Home, ".config")
	}
	return filepath.Join(cfg, "systemd", "user")
}

// Report says what Run did (or, with DryRun, would do).
type Report struct {
	Changed  bool     `json:"changed"`  // something was (or would be) changed
	Schedule string   `json:"schedule"` // the scheduler used: systemd, cron or "" (none)
	Backups  []string `json:"backups"`  // backup files written
	// Warnings are things the user should act on although Run succeeded
	// (a watchdog left unscheduled because the host has no scheduler; a
	// Codex hook to trust; Gemini CLI hooks turned off).
	// Run does not print them: the caller shows them (gyrum on stderr).
	// The first line of each is the summary; more lines say what to do.
	Warnings []string `json:"warnings"`
}

// step is one planned change.
type step struct {
	describe string                                    // what it does, for the log and the dry run
	diff     string                                    // for a file: the unified diff
	apply    func(ctx context.Context) (string, error) // does it; returns extra detail
}

// Run installs (or with Uninstall removes) the hook and the watchdog
// schedule. Every file and table is read and checked before anything is
// changed: a settings file that does not parse stops Run with a
// *ParseError and nothing is modified.
//
// With Watchdog auto on a host with neither a systemd user manager nor a
// crontab program, Run installs the hook alone and returns a warning in
// Report.Warnings saying how to run or schedule the watchdog. A scheduler
// asked for by name (systemd, cron) that is not there is an error, and
// nothing is changed; with DryRun the hook changes are still printed
// before the error is returned.
func Run(ctx context.Context, o Options) (Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Report{}, err
	}
	var rep Report
	var steps []step
	hookSteps, notes, err := planHooks(o)
	if err != nil {
		return Report{}, err
	}
	steps = append(steps, hookSteps...)
	schedSteps, sched, warning, err := planSchedule(ctx, o)
	if err != nil {
		if o.DryRun {
			// Show what the hook would become all the same; the error then
			// says why the run as asked cannot go ahead.
			printPlan(o.Out, hookSteps)
			if len(hookSteps) == 0 {
				fmt.Fprintln(o.Out, "the hook settings need no change")
			}
			fmt.Fprintln(o.Out, "dry run: nothing was changed")
		}
		return Report{}, err
	}
	rep.Schedule = sched
	rep.Warnings = append(rep.Warnings, notes...)
	if warning != "" {
		rep.Warnings = append(rep.Warnings, warning)
	}
	steps = append(steps, schedSteps...)
	rep.Changed = len(steps) > 0

	if o.DryRun {
		printPlan(o.Out, steps)
		if len(steps) == 0 {
			fmt.Fprintln(o.Out, "nothing to change")
		} else {
			fmt.Fprintln(o.Out, "dry run: nothing was changed")
		}
		return rep, nil
	}
	beforeApply()
	err = applySteps(ctx, o.Out, steps, &rep)
	return rep, err
}

// withDefaults fills o's optional fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Watchdog == "" {
		o.Watchdog = WatchdogAuto
	}
	switch o.Watchdog {
	case WatchdogAuto, WatchdogSystemd, WatchdogCron, WatchdogNone:
	default:
		return o, clikit.Usagef("--watchdog %q: want auto, systemd, cron or none", o.Watchdog)
	}
	if !o.Uninstall && !filepath.IsAbs(o.Binary) {
		return o, clikit.Usagef("gyrum binary path %q is not absolute", o.Binary)
	}
	return o, nil
}

// applySteps applies steps in order, saying what each did on out and
// recording its backups in rep; it stops at the first that fails.
func applySteps(ctx context.Context, out io.Writer, steps []step, rep *Report) error {
	for _, s := range steps {
		detail, err := s.apply(ctx)
		if err != nil {
			return err
		}
		if strings.HasPrefix(detail, "backup ") {
			rep.Backups = append(rep.Backups, strings.TrimPrefix(detail, "backup "))
		}
		if detail != "" {
			fmt.Fprintf(out, "%s (%s)\n", pastTense(s.describe), detail)
		} else {
			fmt.Fprintln(out, pastTense(s.describe))
		}
	}
	if len(steps) == 0 {
		fmt.Fprintln(out, "nothing to change: already set up")
	}
	return nil
}

// beforeApply runs between the plan and its first step; tests change a
// file there.
var beforeApply = func() {}

// printPlan prints the dry run of steps: what each would do, and its diff.
func printPlan(out io.Writer, steps []step) {
	for _, s := range steps {
		fmt.Fprintf(out, "would %s\n", s.describe)
		if s.diff != "" {
			fmt.Fprint(out, indentText(s.diff, "    "))
		}
	}
}

// pastTense turns "write X" into "wrote X" for the log of what was done.
func pastTense(s string) string {
	for _, p := range [][2]string{{"write ", "wrote "}, {"update ", "updated "}, {"create ", "created "}, {"remove ", "removed "}, {"run ", "ran "}} {
		if strings.HasPrefix(s, p[0]) {
			return p[1] + strings.TrimPrefix(s, p[0])
		}
	}
	return s
}

func indentText(s, prefix string) string {
	var b strings.Builder
	for _, l := range splitLines(s) {
		b.WriteString(prefix + l)
	}
	return b.String()
}

// hookTarget is one agent settings file and how to merge our hook into it.
type hookTarget struct {
	agent string
	title string // the agent's name in prose
	path  string
	// plugin, when set, makes path a plugin file of gyrum's own (see
	// planPlugin), not settings to merge into; pluginDirs are the
	// directories its removal may leave empty, innermost first.
	plugin     *agent.Plugin
	pluginDirs []string
	install    func(path string, data []byte, command string) ([]byte, bool, error)
	uninstall  func(path string, data []byte) ([]byte, bool, error)
	// notes, when set, returns what the user must still do for the hook to
	// run after an install (data: the file as it will be; changed: whether
	// setup changes it). They become Report.Warnings.
	notes func(path string, data []byte, changed bool) []string
}

func hookTargets(o Options) ([]hookTarget, error) {
	agents := []agent.Agent{agent.Default()}
	for _, flag := range o.Agents {
		a, ok := agent.ByFlag(flag)
		if !ok {
			return nil, clikit.Usagef("--agents: unknown agent %q (want %s)", flag, strings.Join(Agents(), ", "))
		}
		agents = append(agents, a)
	}
	var targets []hookTarget
	for _, a := range agents {
		t := agentTarget(o, a)
		if !filepath.IsAbs(t.path) {
			return nil, clikit.Usagef("no home directory to find the settings of %s in (set HOME, or give --project)", a.Title)
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// planHooks reads every settings file and plans its edit. notes are what
// the user must still do for a hook to run (trust it, turn hooks on).
func planHooks(o Options) (steps []step, notes []string, err error) {
	targets, err := hookTargets(o)
	if err != nil {
		return nil, nil, err
	}
	command := HookCommand(o.Binary)
	for _, t := range targets {
		plan := planHookFile
		if t.plugin != nil {
			plan = planPlugin
		}
		s, n, err := plan(o, t, command)
		if err != nil {
			return nil, nil, err
		}
		steps, notes = append(steps, s...), append(notes, n...)
	}
	return steps, notes, nil
}

// planHookFile plans the edit of t's settings file: gyrum's hook added
// (or removed, with the file and its backups when nothing else was in
// them). notes are for Report.Warnings.
func planHookFile(o Options, t hookTarget, command string) (steps []step, notes []string, err error) {
	old, existed, err := readFile(t.path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", t.path, err)
	}
	var data []byte
	var changed bool
	if o.Uninstall {
		if !existed {
			return nil, nil, nil
		}
		data, changed, err = t.uninstall(t.path, old)
	} else {
		data, changed, err = t.install(t.path, old, command)
	}
	if err != nil {
		return nil, nil, err
	}
	if !o.Uninstall && t.notes != nil {
		notes = t.notes(t.path, data, changed)
	}
	if !changed {
		return nil, notes, nil
	}
	edit := fileEdit{Path: t.path, Old: old, New: data, Existed: existed, Perm: 0o644, Backup: true}
	verb := "update"
	if !existed {
		verb = "create"
	}
	what := "add the gyrum touch-activity hook"
	if o.Uninstall {
		what = "remove the gyrum touch-activity hook"
		if emptyJSON(data) {
			// Nothing but gyrum's hook was in it (setup created it, or
			// it held nothing else): the file goes, with no backup of
			// what was only setup's own, and so do the backups that
			// held nothing else either.
			edit = fileEdit{Path: t.path, Old: old, Existed: true, Remove: true}
			verb, what = "remove", "it held nothing but the gyrum touch-activity hook"
			if extra := onlyOurBackups(t); len(extra) > 0 {
				what += ", with its backups " + strings.Join(extra, ", ")
				steps = append(steps, removeFiles(extra))
			}
		}
	}
	now := o.Now()
	steps = append(steps, step{
		describe: fmt.Sprintf("%s %s: %s", verb, t.path, what),
		diff:     unifiedDiff(t.path, old, data, existed),
		apply: func(context.Context) (string, error) {
			b, err := edit.apply(now)
			if b != "" {
				return "backup " + b, err
			}
			return "", err
		},
	})
	return steps, notes, nil
}

// onlyOurBackups lists t's backups (PATH.bak-*) that hold nothing but
// gyrum's hooks: once the file goes, nobody needs them.
func onlyOurBackups(t hookTarget) []string {
	names, _ := filepath.Glob(t.path + ".bak-*")
	var out []string
	for _, n := range names {
		data, err := ReadConfig(n)
		if err != nil {
			continue
		}
		if cleaned, _, err := t.uninstall(n, data); err == nil && emptyJSON(cleaned) {
			out = append(out, n)
		}
	}
	return out
}

// removeFiles is a step that removes paths.
func removeFiles(paths []string) step {
	return step{
		describe: "remove " + strings.Join(paths, ", ") + ": backups of a file that held nothing but gyrum's hooks",
		apply: func(context.Context) (string, error) {
			var errs []error
			for _, p := range paths {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
			}
			return "", errors.Join(errs...)
		},
	}
}

// emptyJSON reports whether data is JSON holding nothing: an empty object
// or array, or an object whose values all hold nothing ({"hooks": {}}).
func emptyJSON(data []byte) bool {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	var empty func(v any) bool
	empty = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				if !empty(e) {
					return false
				}
			}
			return true
		case []any:
			return len(x) == 0
		}
		return false
	}
	return empty(v)
}

// planSchedule decides the scheduler and plans its changes. warning is
// set when auto found no scheduler: the schedule is then left out, and the
// hook is installed all the same.
func planSchedule(ctx context.Context, o Options) (steps []step, sched, warning string, err error) {
	steps, sched, err = planScheduleSteps(ctx, o)
	if errors.Is(err, errNoScheduler) {
		return nil, "", noSchedulerWarning(o), nil
	}
	return steps, sched, "", err
}

// errNoScheduler: auto found neither systemctl --user nor crontab.
var errNoScheduler = errors.New("no watchdog scheduler")

// noSchedulerWarning says that the watchdog is not scheduled and how to
// run it by hand or schedule it later.
func noSchedulerWarning(o Options) string {
	var words []string
	for _, kv := range envAssignments(o.ScheduleEnv) {
		name, val, _ := strings.Cut(kv, "=")
		words = append(words, name+"="+shellquote.Quote(val))
	}
	words = append(words, shellquote.Quote(o.Binary), "watchdog", "sweep")
	return "the watchdog is not scheduled: systemctl --user does not work here and there is no crontab program.\n" +
		"Without it, the heartbeat loops of agents that died are never stopped. Run it by hand (every few minutes):\n" +
		"  " + strings.Join(words, " ") + "\n" +
		"or schedule it later: install cron (Debian: apt-get install cron) and run 'gyrum setup --watchdog cron',\n" +
		"which adds this crontab line:\n" +
		"  " + CronLine(o.Binary, o.ScheduleEnv) + "\n" +
		"or, where a systemd user manager runs ('systemctl --user' works), 'gyrum setup --watchdog systemd'."
}

// planScheduleSteps is planSchedule; errNoScheduler when auto finds no
// scheduler.
func planScheduleSteps(ctx context.Context, o Options) ([]step, string, error) {
	if o.Watchdog == WatchdogNone {
		return nil, "", nil
	}
	sd := o.Systemd
	sd.UnitDir = o.UnitDir()
	if o.Uninstall {
		return planScheduleRemoval(ctx, o, sd)
	}
	use, err := chooseScheduler(ctx, o, sd)
	if err != nil {
		return nil, "", err
	}
	// The chosen schedule, and the other one removed: moving between
	// them leaves no double schedule.
	var install, remove func() ([]step, error)
	switch use {
	case WatchdogSystemd:
		install = func() ([]step, error) { return planSystemdInstall(ctx, sd, o.Binary, o.ScheduleEnv) }
		remove = func() ([]step, error) {
			if !o.Cron.Available() {
				return nil, nil
			}
			return planCronRemove(ctx, o.Cron)
		}
	default:
		install = func() ([]step, error) { return planCronInstall(ctx, o.Cron, o.Binary, o.ScheduleEnv) }
		remove = func() ([]step, error) { return planSystemdRemove(ctx, sd) }
	}
	steps, err := install()
	if err != nil {
		return nil, "", err
	}
	more, err := remove()
	if err != nil {
		return nil, "", err
	}
	return append(steps, more...), use, nil
}

// planScheduleRemoval plans the removal of the watchdog's schedule: the
// systemd units unless --watchdog cron, the crontab line unless --watchdog
// systemd (and there is a crontab).
func planScheduleRemoval(ctx context.Context, o Options, sd Systemd) ([]step, string, error) {
	var steps []step
	if o.Watchdog != WatchdogCron {
		s, err := planSystemdRemove(ctx, sd)
		if err != nil {
			return nil, "", err
		}
		steps = append(steps, s...)
	}
	if o.Watchdog != WatchdogSystemd && o.Cron.Available() {
		s, err := planCronRemove(ctx, o.Cron)
		if err != nil {
			return nil, "", err
		}
		steps = append(steps, s...)
	}
	return steps, "", nil
}

// chooseScheduler resolves --watchdog to systemd or cron: auto takes
// systemd --user where it works, else cron; an explicit choice that
// cannot work here is an error that says what to do.
func chooseScheduler(ctx context.Context, o Options, sd Systemd) (string, error) {
	use := o.Watchdog
	if use == WatchdogAuto || use == WatchdogSystemd {
		if sd.Available(ctx) {
			use = WatchdogSystemd
		} else if use == WatchdogSystemd {
			return "", fmt.Errorf("--watchdog systemd: systemctl --user does not work here (no user manager or bus); use --watchdog cron")
		} else {
			use = WatchdogCron
		}
	}
	if use == WatchdogCron && !o.Cron.Available() {
		if o.Watchdog == WatchdogAuto {
			return "", errNoScheduler
		}
		return "", fmt.Errorf("--watchdog cron: no crontab program; install cron (Debian: apt-get install cron), " +
			"or run setup with --watchdog auto to install the hook alone and be told how to run the watchdog by hand")
	}
	return use, nil
}

func planSystemdInstall(ctx context.Context, sd Systemd, bin string, env map[string]string) ([]step, error) {
	units := []struct{ name, content string }{
		{ServiceName, ServiceUnit(bin, env)},
		{TimerName, TimerUnit()},
	}
	var steps []step
	var created []string
	filesChanged := false
	for _, u := range units {
		path := filepath.Join(sd.UnitDir, u.name)
		old, existed, err := readFile(path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if existed && string(old) == u.content {
			continue
		}
		filesChanged = true
		if !existed {
			created = append(created, path)
		}
		edit := fileEdit{Path: path, Old: old, New: []byte(u.content), Existed: existed, Perm: 0o644}
		verb := "update"
		if !existed {
			verb = "write"
		}
		steps = append(steps, step{
			describe: fmt.Sprintf("%s %s", verb, path),
			diff:     unifiedDiff(path, old, []byte(u.content), existed),
			apply: func(context.Context) (string, error) {
				_, err := edit.apply(time.Time{})
				return "", err
			},
		})
	}
	if !filesChanged {
		if on, err := sd.TimerEnabled(ctx); err == nil && on {
			return nil, nil
		}
	}
	return append(steps, systemctlSteps(sd, created)...), nil
}

// systemctlSteps reload systemd --user and enable the timer; a failing
// systemctl leaves no half-installed timer behind: the unit files this
// run created are removed again.
func systemctlSteps(sd Systemd, created []string) []step {
	rollback := func(err error) error {
		for _, p := range created {
			os.Remove(p)
		}
		return err
	}
	var steps []step
	for _, args := range [][]string{{"daemon-reload"}, {"enable", "--now", TimerName}} {
		steps = append(steps, step{
			describe: "run " + strings.Join(sd.argv(args...), " "),
			apply: func(ctx context.Context) (string, error) {
				if err := sd.run(ctx, args...); err != nil {
					return "", rollback(err)
				}
				return "", nil
			},
		})
	}
	return steps
}

// planSystemdRemove removes our unit files, when there are any: disable
// the timer (when systemctl --user works), delete the files and the
// timers.target.wants link, reload.
func planSystemdRemove(ctx context.Context, sd Systemd) ([]step, error) {
	var paths []string
	for _, name := range []string{TimerName, ServiceName} {
		p := filepath.Join(sd.UnitDir, name)
		if _, err := os.Lstat(p); err == nil {
			paths = append(paths, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	wants := filepath.Join(sd.UnitDir, "timers.target.wants", TimerName)
	_, werr := os.Lstat(wants)
	if len(paths) == 0 && werr != nil {
		return nil, nil
	}
	var steps []step
	live := sd.Available(ctx)
	if live {
		steps = append(steps, step{
			describe: "run " + strings.Join(sd.argv("disable", "--now", TimerName), " "),
			apply: func(ctx context.Context) (string, error) {
				return "", sd.run(ctx, "disable", "--now", TimerName)
			},
		})
	}
	if werr == nil {
		steps = append(steps, step{
			describe: "remove " + wants,
			apply: func(context.Context) (string, error) {
				if err := os.Remove(wants); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return "", err
				}
				return "", nil
			},
		})
	}
	for _, p := range paths {
		steps = append(steps, step{
			describe: "remove " + p,
			apply: func(context.Context) (string, error) {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return "", err
				}
				return "", nil
			},
		})
	}
	if live {
		steps = append(steps, step{
			describe: "run " + strings.Join(sd.argv("daemon-reload"), " "),
			apply: func(ctx context.Context) (string, error) {
				return "", sd.run(ctx, "daemon-reload")
			},
		})
	}
	return steps, nil
}

func planCronInstall(ctx context.Context, c Cron, bin string, env map[string]string) ([]step, error) {
	table, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	next, changed := mergeCrontab(table, CronLine(bin, env))
	if !changed {
		return nil, nil
	}
	return []step{cronStep(c, table, next, "add the watchdog line")}, nil
}

func planCronRemove(ctx context.Context, c Cron) ([]step, error) {
	table, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	next, changed := removeCronLines(table)
	if !changed {
		return nil, nil
	}
	return []step{cronStep(c, table, next, "remove the watchdog line")}, nil
}

func cronStep(c Cron, old, next, what string) step {
	name := "crontab"
	if c.User != "" {
		name = "crontab of " + c.User
	}
	return step{
		describe: fmt.Sprintf("update the %s: %s (run %s)", name, what, strings.Join(c.argv("-"), " ")),
		diff:     unifiedDiff(name, []byte(old), []byte(next), true),
		apply: func(ctx context.Context) (string, error) {
			// Re-read: the table must not have changed since it was planned,
			// or a line added meanwhile would be lost.
			now, err := c.Read(ctx)
			if err != nil {
				return "", err
			}
			if now != old {
				return "", fmt.Errorf("the %s changed while setup ran; run setup again", name)
			}
			return "", c.Write(ctx, next)
		},
	}
}
