package gyrumcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/warp"
)

// homeDir returns $HOME, else the user's home directory.
func (a *App) homeDir() (string, error) {
	if h := a.getenv("HOME"); h != "" {
		return h, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", usageErrorf("HOME is unset: %v", err)
	}
	return h, nil
}

func (a *App) setupCommand() *cobra.Command {
	var (
		project   string
		watchdog  string
		uninstall bool
		dryRun    bool
		agents    []string
	)
	cmd := &cobra.Command{
		Use:   "setup [--project DIR] [--watchdog auto|systemd|cron|none] [--uninstall] [--dry-run] [--agents codex,gemini,cursor]",
		Short: "Wire the touch-activity hook into Claude Code and schedule the watchdog",
		Long: `setup adds 'gyrum touch-activity' (this binary's absolute path, timeout 5 s) for
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
line ending in '# gyrum-watchdog'; systemd, cron and none force a choice.

--agents also wires Codex (~/.codex/hooks.json), Gemini CLI (AfterTool in
~/.gemini/settings.json) and Cursor (postToolUse in ~/.cursor/hooks.json).
--dry-run prints every change (diffs, commands) and makes none. --uninstall
removes exactly what setup added: its hook entries, the groups and lists only
they filled, the units or the crontab line.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			o := setup.Options{
				Home:            home,
				ClaudeConfigDir: a.getenv("CLAUDE_CONFIG_DIR"),
				CodexHome:       a.getenv("CODEX_HOME"),
				XDGConfigHome:   a.getenv("XDG_CONFIG_HOME"),
				Watchdog:        watchdog,
				Uninstall:       uninstall,
				DryRun:          dryRun,
				Now:             a.now,
				Out:             a.Stdout,
			}
			for _, ag := range agents {
				for _, s := range strings.Split(ag, ",") {
					if s = strings.TrimSpace(s); s != "" {
						o.Agents = append(o.Agents, s)
					}
				}
			}
			if project != "" {
				if o.Project, err = filepath.Abs(project); err != nil {
					return usageErrorf("--project %s: %v", project, err)
				}
				if st, err := os.Stat(o.Project); err != nil || !st.IsDir() {
					return usageErrorf("--project %s: not a directory", project)
				}
			}
			exe, err := a.executable()
			if err != nil {
				return err
			}
			if o.Binary, err = filepath.Abs(exe); err != nil {
				return err
			}
			// The scheduled sweep must read the same registry as the loops.
			if gh := a.getenv("GYRUM_HOME"); gh != "" {
				abs, err := filepath.Abs(gh)
				if err != nil {
					return usageErrorf("GYRUM_HOME %s: %v", gh, err)
				}
				o.ScheduleEnv = map[string]string{"GYRUM_HOME": abs}
			}
			_, err = setup.Run(cmd.Context(), o)
			var pe *setup.ParseError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &pe):
				return &failure{err: err}
			case errors.Is(err, warp.ErrInvalid):
				return usageErrorf("%s", warp.ErrorMessage(err))
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", "", "wire DIR/.claude/settings.json instead of the user's settings")
	f.StringVar(&watchdog, "watchdog", setup.WatchdogAuto, "watchdog schedule: auto, systemd, cron or none")
	f.BoolVar(&uninstall, "uninstall", false, "remove what setup added")
	f.BoolVar(&dryRun, "dry-run", false, "print every change, make none")
	f.StringSliceVar(&agents, "agents", nil, fmt.Sprintf("other agents to wire too: %s", strings.Join(setup.Agents(), ", ")))
	return cmd
}
