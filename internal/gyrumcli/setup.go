package gyrumcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/setup"
)

// homeDir returns $HOME, else the user's home directory.
func (a *App) homeDir() (string, error) {
	if h := a.getenv("HOME"); h != "" {
		return h, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", clikit.Usagef("HOME is unset: %v", err)
	}
	return h, nil
}

// setupExample lists, with the usual runs, the instructions file of every
// agent package agent knows.
func setupExample() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  gyrum setup --agents %s\n  gyrum setup --project . --dry-run\n", strings.Join(setup.Agents(), ","))
	files, readers := agent.InstructionFiles()
	for _, f := range files {
		fmt.Fprintf(&b, "  %-42s # %s\n", "gyrum setup --instructions="+f, strings.Join(readers[f], ", "))
	}
	fmt.Fprintf(&b, "  %-42s # print the snippet", "gyrum setup --instructions")
	return b.String()
}

func (a *App) setupCommand() *cobra.Command {
	var fl setupFlags
	cmd := &cobra.Command{
		Use:     "setup [--project DIR] [--watchdog auto|systemd|cron|none] [--uninstall] [--dry-run] [--agents " + strings.Join(setup.Agents(), ",") + "] [--instructions[=FILE]]",
		Short:   "Wire the touch-activity hook into the agents, schedule the watchdog, write agent instructions",
		Long:    setupLong,
		Example: setupExample(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if cmd.Flags().Changed("instructions") {
				return clikit.Usagef("--instructions takes its file with '=': gyrum setup --instructions=%s", args[0])
			}
			return clikit.Usagef("setup takes no arguments, got %q", args)
		},
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("instructions") {
				return a.setupInstructions(cmd, fl.instructions, fl.uninstall, fl.dryRun)
			}
			if cmd.Flags().Changed("snapshot-push") {
				return a.setupSnapshotPush(cmd, fl.snapshotPush && !fl.uninstall, fl.dryRun)
			}
			o, err := a.setupOptions(fl)
			if err != nil {
				return err
			}
			return a.runSetup(cmd.Context(), o, fl.json)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&fl.project, "project", "", "wire DIR/.claude/settings.json instead of the user's settings (the watchdog is still the user's: add --watchdog none to leave it alone)")
	f.StringVar(&fl.watchdog, "watchdog", setup.WatchdogAuto, "watchdog schedule: auto, systemd, cron or none")
	f.BoolVar(&fl.uninstall, "uninstall", false, "remove what setup added")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print every change, make none")
	f.StringSliceVar(&fl.agents, "agents", nil, fmt.Sprintf("other agents to wire too: %s", strings.Join(setup.Agents(), ", ")))
	files, _ := agent.InstructionFiles()
	f.StringVar(&fl.instructions, "instructions", "", "print the agent instructions snippet, or with =FILE put it into FILE ("+strings.Join(files, ", ")+") once")
	f.Lookup("instructions").NoOptDefVal = instructionsStdout
	f.BoolVar(&fl.json, "json", false, "print {changed, schedule, backups, warnings} instead of one line per change")
	f.BoolVar(&fl.snapshotPush, "snapshot-push", false, "alone: push every worktree snapshot (refs/gyrum/<ticket>/<attempt>) to the worktree's remote from now on, on this host (=false or --uninstall: stop)")
	return cmd
}

// setupFlags are the flags of gyrum setup.
type setupFlags struct {
	project, watchdog, instructions string
	uninstall, dryRun, json         bool
	agents                          []string
	snapshotPush                    bool
}

// setupOptions turns the flags and the environment into what setup.Run
// takes: the home directory and the agents' config locations, the agents
// (comma-separated or repeated), the project directory (which must exist),
// this binary's absolute path for the hooks, and GYRUM_HOME for the
// scheduled sweep.
func (a *App) setupOptions(fl setupFlags) (setup.Options, error) {
	home, err := a.homeDir()
	if err != nil {
		return setup.Options{}, err
	}
	o := setup.Options{
		Home:          home,
		Getenv:        a.getenv,
		XDGConfigHome: a.getenv("XDG_CONFIG_HOME"),
		Watchdog:      fl.watchdog,
		Uninstall:     fl.uninstall,
		DryRun:        fl.dryRun,
		Now:           a.now,
		Out:           a.Stdout,
	}
	for _, ag := range fl.agents {
		for _, s := range strings.Split(ag, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Agents = append(o.Agents, s)
			}
		}
	}
	if fl.project != "" {
		if o.Project, err = filepath.Abs(fl.project); err != nil {
			return o, clikit.Usagef("--project %s: %v", fl.project, err)
		}
		if st, err := os.Stat(o.Project); err != nil || !st.IsDir() {
			return o, clikit.Usagef("--project %s: not a directory", fl.project)
		}
	}
	exe, err := a.executable()
	if err != nil {
		return o, err
	}
	if o.Binary, err = filepath.Abs(exe); err != nil {
		return o, err
	}
	// The scheduled sweep must read the same registry as the loops.
	if gh := a.getenv("GYRUM_HOME"); gh != "" {
		abs, err := filepath.Abs(gh)
		if err != nil {
			return o, clikit.Usagef("GYRUM_HOME %s: %v", gh, err)
		}
		o.ScheduleEnv = map[string]string{"GYRUM_HOME": abs}
	}
	return o, nil
}

// runSetup runs setup.Run, prints its warnings and sorts its error: a
// file it cannot parse is a failure (exit 1); a bad option is already a
// usage error (clikit.Usagef).
func (a *App) runSetup(ctx context.Context, o setup.Options, asJSON bool) error {
	if asJSON {
		o.Out = io.Discard
	}
	rep, err := setup.Run(ctx, o)
	for _, w := range rep.Warnings {
		fmt.Fprintf(a.Stderr, "gyrum: warning: %s\n", strings.ReplaceAll(w, "\n", "\n  "))
	}
	var pe *setup.ParseError
	switch {
	case err == nil:
		if asJSON {
			if rep.Backups == nil {
				rep.Backups = []string{}
			}
			if rep.Warnings == nil {
				rep.Warnings = []string{}
			}
			return clikit.PrintJSON(a.Stdout, rep)
		}
		return nil
	case errors.As(err, &pe):
		return clikit.Fail(err)
	}
	return err
}

// setupLong is the help of gyrum setup.
const setupLong = `setup adds 'gyrum touch-activity' (this binary's absolute path, timeout 5 s) for
PreToolUse, PostToolUse and PostToolUseFailure (matcher "*") to the Claude Code
settings: $CLAUDE_CONFIG_DIR/settings.json (default ~/.claude/settings.json), or
DIR/.claude/settings.json with --project. It merges into what is there and keeps
every other key, hook and matcher group; an entry of an older gyrum path is
replaced, not duplicated. It backs the file up (settings.json.bak-<time>) and
writes it atomically with the same permissions; a file it cannot parse is
refused with its line:column and left untouched. Running it twice changes
nothing.

It also schedules 'gyrum watchdog sweep' every 5 minutes: with --watchdog auto
(default) a systemd user timer (gyrum-watchdog.timer + .service in
$XDG_CONFIG_HOME/systemd/user) where 'systemctl --user' works, else a crontab
line ending in '# gyrum-watchdog'; systemd, cron and none force a choice. Where
auto finds neither (a container, a host without cron), setup installs the hook
alone, warns that the watchdog is not scheduled, says how to run it by hand or
schedule it later ('gyrum setup --watchdog cron|systemd'), and exits 0; a
scheduler named with --watchdog that is not there is an error (exit 1) and
changes nothing.

--agents also wires, in each tool's documented hook format, Codex
(PreToolUse and PostToolUse in $CODEX_HOME/hooks.json, default
~/.codex/hooks.json; Codex runs a new hook only once you trust it in /hooks,
and setup says so), Gemini CLI (BeforeTool and AfterTool in
~/.gemini/settings.json) and Cursor (preToolUse, postToolUse and
postToolUseFailure in ~/.cursor/hooks.json); with --project, the same files
under DIR. For an agent whose hooks are code it writes a plugin file of
gyrum's that runs the hook at every tool call's start and end: opencode
(~/.config/opencode/plugins/gyrum.js, or DIR/.opencode/plugins/ with
--project), Kilo CLI (~/.config/kilo/plugins/gyrum.js, DIR/.kilo/plugins/)
and pi (~/.pi/agent/extensions/gyrum.ts, DIR/.pi/extensions/); it rewrites one of gyrum's that differs (an edited one backed up
first) and refuses a file of that name that is not gyrum's. --dry-run prints every change (diffs, commands) and makes none; it
shows the hook's diff even when the schedule cannot be made. --uninstall
removes exactly what setup added: its hook entries, the groups and lists only
they filled, its plugin files, the units or the crontab line.

--instructions prints a short snippet for the agent's instructions: claim
with 'gyrum start-work', finish with 'gyrum complete-pr' or 'gyrum release',
declare long waits with 'gyrum wait', and what to do when told a lease ended.
--instructions=FILE puts it into the agent's instructions file (Claude Code:
CLAUDE.md; Codex, Cursor, opencode, Kilo CLI and pi: AGENTS.md; Gemini CLI: GEMINI.md; created when
missing) once, between '<!-- gyrum:begin -->' and '<!-- gyrum:end -->'
markers: appended after a blank line, updated in place by a later gyrum, and
left alone when it is current; the rest of FILE is kept byte for byte. With
--uninstall it removes the block again, with --dry-run it shows the diff.
--instructions touches nothing else: run 'gyrum setup' for the hooks.`

// instructionsStdout is the value of a bare --instructions: print.
const instructionsStdout = "-"

// setupInstructions is setup --instructions[=FILE]: print the snippet, or
// put it into (with --uninstall: remove it from) FILE.
// SnapshotPushFile in $GYRUM_HOME says that start-work on this host
// pushes worktree snapshots to the remote (gyrum setup --snapshot-push);
// GYRUM_SNAPSHOT_PUSH, when set, wins over it.
const SnapshotPushFile = "snapshot-push"

// setupSnapshotPush writes (on) or removes the host's snapshot-push
// setting, alone: it touches neither hooks nor the watchdog.
func (a *App) setupSnapshotPush(cmd *cobra.Command, on, dryRun bool) error {
	for _, name := range []string{"project", "watchdog", "agents", "instructions"} {
		if cmd.Flags().Changed(name) {
			return clikit.Usagef("--snapshot-push works alone: run 'gyrum setup --%s ...' separately", name)
		}
	}
	home, err := gyrumdir.Home(a.getenv)
	if err != nil {
		return clikit.Usagef("%v", err)
	}
	path := filepath.Join(home, SnapshotPushFile)
	_, statErr := os.Stat(path)
	exists := statErr == nil
	verb := map[bool]string{true: "would ", false: ""}[dryRun]
	switch {
	case on && exists, !on && !exists:
		_, err = fmt.Fprintf(a.Stdout, "%s: unchanged (snapshots are %spushed)\n", path, map[bool]string{true: "", false: "not "}[on])
		return err
	case dryRun:
	case on:
		if err := os.MkdirAll(home, gyrumdir.DirPerm); err != nil {
			return err
		}
		if err := gyrumdir.WriteFileAtomic(path, []byte("start-work pushes worktree snapshots to the remote (gyrum setup --snapshot-push)\n")); err != nil {
			return err
		}
	default:
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	what := map[bool]string{true: "wrote", false: "removed"}[on]
	if dryRun {
		what = map[bool]string{true: "write", false: "remove"}[on]
	}
	_, err = fmt.Fprintf(a.Stdout, "%s%s %s: start-work's leases %s snapshots to the worktree's remote\n", verb, what, path,
		map[bool]string{true: "push", false: "no longer push"}[on])
	return err
}

// snapshotPushOn says whether start-work pushes snapshots: GYRUM_SNAPSHOT_PUSH
// when not empty (1, true, yes: on; anything else: off), else the host's
// setting (gyrum setup --snapshot-push).
func (a *App) snapshotPushOn() bool {
	if v := a.getenv("GYRUM_SNAPSHOT_PUSH"); v != "" {
		return snapshotPush(v)
	}
	home, err := gyrumdir.Home(a.getenv)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(home, SnapshotPushFile))
	return err == nil
}

func (a *App) setupInstructions(cmd *cobra.Command, file string, uninstall, dryRun bool) error {
	for _, name := range []string{"project", "watchdog", "agents"} {
		if cmd.Flags().Changed(name) {
			return clikit.Usagef("--instructions works alone: it does not touch the hooks or the watchdog; run 'gyrum setup --%s ...' separately", name)
		}
	}
	if file == "" {
		return clikit.Usagef("--instructions=FILE: the file name is empty")
	}
	if file == instructionsStdout {
		if uninstall || dryRun {
			return clikit.Usagef("--uninstall and --dry-run need a file: gyrum setup --instructions=CLAUDE.md (a bare --instructions only prints the snippet)")
		}
		_, err := fmt.Fprint(a.Stdout, setup.Instructions())
		return err
	}
	path := file
	if !filepath.IsAbs(path) {
		wd, err := a.getwd()
		if err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
		path = filepath.Join(wd, path)
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return clikit.Usagef("--instructions=%s: not a regular file", file)
	}
	// A *setup.MarkerError (markers it cannot pair) is a failure, exit 1.
	_, err := setup.RunInstructions(cmd.Context(), setup.InstructionsOptions{Path: path, Uninstall: uninstall, DryRun: dryRun, Out: a.Stdout})
	return err
}
