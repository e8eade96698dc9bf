package gyrumcli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// doctorHelp is doctor's --help: its checks, one a line.
const doctorHelp = `doctor checks, each with a one-line fix:
  hook         gyrum touch-activity is in the effective Claude Code settings
               (user, and ./.claude/settings.json and settings.local.json)
  hook-binary  the gyrum the hook runs exists and is executable
  codex-trust  Codex trusts the hooks setup wrote into $CODEX_HOME/hooks.json
               (or ./.codex/hooks.json): it skips an untrusted or changed one
               without a word (checked only where setup installed them)
  gemini-trust Gemini CLI trusts the folder of ./.gemini/settings.json's hooks
               (~/.gemini/trustedFolders.json)
  opencode-plugin, kilo-plugin, pi-plugin
               gyrum's plugin for opencode, Kilo CLI or pi (setup --agents
               opencode,kilo,pi) is what this gyrum's setup writes, and the
               gyrum it runs exists
  hook-run     each hook command line, run through sh -c as Claude Code does
               with a sample PostToolUse payload in a scratch .gyrum/, exits 0
               within its timeout and moves last-activity (a hung hook's
               process group is killed at the timeout)
  watchdog     the systemd timer is enabled, or the crontab line is there
               (a warning, not a failure, when neither: the sweep can run by hand)
  warp         WARP_URL answers and accepts schema_version 2 heartbeats
               (probed with a heartbeat for the ticket gyrum-doctor-probe)
  loop ...     the loop of each local lease is alive and matches heartbeat.pid
Exit 1 when something is wrong; warnings alone exit 0.`

func (a *App) doctorCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check that this host is wired for warp, and say how to fix what is not",
		Example: `  gyrum doctor
  gyrum doctor --json | jq '.checks[] | select(.status != "ok")'`,
		Long: doctorHelp,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			home, err := a.homeDir()
			if err != nil {
				return err
			}
			reg, err := a.registry()
			if err != nil {
				return err
			}
			cwd, _ := a.getwd()
			rep := doctor.Run(cmd.Context(), doctor.Options{
				Home:      home,
				Getenv:    a.getenv,
				Cwd:       cwd,
				WarpURL:   a.getenv("WARP_URL"),
				WarpToken: a.getenv("WARP_TOKEN"),
				Registry:  reg,
				Prepared:  gyrumdir.NewPrepared(filepath.Dir(reg.Dir())),
			})
			if asJSON {
				err = doctor.WriteJSON(a.Stdout, rep)
			} else {
				err = doctor.WriteText(a.Stdout, rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return clikit.Exit(ExitError)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
