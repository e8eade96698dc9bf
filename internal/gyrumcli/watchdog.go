package gyrumcli

import (
	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/watchdog"
)

func (a *App) watchdogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watchdog",
		Short: "Reap orphan heartbeat loops (run every 5 minutes by 'gyrum setup')",
		Example: `  gyrum watchdog sweep --dry-run
  gyrum watchdog sweep`,
		Args: cobra.NoArgs,
	}
	var dryRun, asJSON bool
	var within string
	sweep := &cobra.Command{
		Use:   "sweep [--dry-run] [--json]",
		Short: "Stop loops whose worktree or lease.json is gone; drop stale registry entries",
		Example: `  gyrum watchdog sweep              # what the systemd timer or the crontab line runs
  gyrum watchdog sweep --dry-run --json`,
		Long: `sweep reads the registry of running loops ($GYRUM_HOME/run) and, on Linux, scans
/proc for 'gyrum heartbeat run' processes of this user that never registered.
A loop whose worktree or .gyrum/lease.json is gone gets SIGTERM, then SIGKILL
after 5 s. A registry entry whose pid is dead, or now belongs to another
process (start time or command line differ), is removed, and that process is
never signalled. It prints one line per loop and a summary; --dry-run signals
and removes nothing. Exit 1 when an action failed.`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			reg, err := a.registry()
			if err != nil {
				return err
			}
			home, err := gyrumdir.Home(a.getenv)
			if err != nil {
				return clikit.Usagef("%v", err)
			}
			rep, err := watchdog.Sweep(cmd.Context(), watchdog.Options{Registry: reg, Agents: gyrumdir.NewAgentIndex(home),
				Prepared: gyrumdir.NewPrepared(home), Grace: a.StopGrace, DryRun: dryRun, Within: within})
			if err != nil {
				return err
			}
			if asJSON {
				err = watchdog.WriteJSON(a.Stdout, rep)
			} else {
				err = watchdog.WriteText(a.Stdout, rep)
			}
			if err != nil {
				return err
			}
			if rep.Summary.Failed > 0 {
				return clikit.Exit(ExitError)
			}
			return nil
		}),
	}
	sweep.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be done, signal and remove nothing")
	sweep.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	// --within limits the /proc scan to worktrees under DIR: tests use it so
	// a sweep never reaches the loops of other programs on a shared host.
	sweep.Flags().StringVar(&within, "within", "", "only scan for unregistered loops whose worktree is under DIR")
	_ = sweep.Flags().MarkHidden("within")
	cmd.AddCommand(sweep)
	return cmd
}
