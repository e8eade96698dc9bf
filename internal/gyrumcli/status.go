package gyrumcli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// HostStatus is what status prints with --json.
type HostStatus struct {
	Registry string       `json:"registry"`
	Loops    []LoopStatus `json:"loops"`
	// Corrupt lists registry files that could not be read.
	Corrupt []string `json:"corrupt,omitempty"`
}

func (a *App) statusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Every lease and loop on this host (from $GYRUM_HOME)",
		Example: `  gyrum status
  gyrum status --json | jq '.loops[] | {ticket, loop_alive}'`,
		Long: `status lists every loop in the registry ($GYRUM_HOME/run) with its lease, whether
the loop and the watched process are alive, the activity age and the loop's
last POST and its outcome (.gyrum/heartbeat.state). It also lists every
worktree a start-work on this host prepared ($GYRUM_HOME/worktrees) that
still holds a lease.json but whose loop is gone: the loop exited (its last
outcome says why, e.g. the lease ended or the agent exited) and the lease may
still be held on warp; release it with gyrum release --dir D.`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			reg, err := a.registry()
			if err != nil {
				return err
			}
			entries, bad, err := reg.List()
			if err != nil {
				return err
			}
			hs := HostStatus{Registry: reg.Dir(), Loops: []LoopStatus{}}
			for _, b := range bad {
				hs.Corrupt = append(hs.Corrupt, b.Err.Error())
			}
			for _, e := range entries {
				d, err := gyrumdir.At(e.Dir)
				if err != nil {
					continue
				}
				s := a.inspect(d, e.PID)
				// The registry is the authority on which loop this is.
				s.LoopPID, s.LoopAlive, s.Registered = e.PID, e.Identity().Alive(), true
				if s.Ticket == "" {
					s.Ticket = e.Ticket
				}
				hs.Loops = append(hs.Loops, s)
			}
			// Leases whose loop is gone: no registry entry, lease.json kept.
			if home, err := gyrumdir.Home(a.getenv); err == nil {
				wts, _ := gyrumdir.NewPrepared(home).List()
				for _, wt := range wts {
					covered := false
					for _, e := range entries {
						covered = covered || gyrumdir.SamePath(e.Dir, wt)
					}
					if d, err := gyrumdir.At(wt); err == nil && !covered && d.HasLease() {
						hs.Loops = append(hs.Loops, a.inspect(d, 0))
					}
				}
			}
			if asJSON {
				return clikit.PrintJSON(a.Stdout, hs)
			}
			return a.printHostStatus(hs)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *App) printHostStatus(hs HostStatus) error {
	for _, c := range hs.Corrupt {
		fmt.Fprintf(a.Stderr, "gyrum: corrupt registry entry: %s\n", c)
	}
	if len(hs.Loops) == 0 {
		_, err := fmt.Fprintf(a.Stdout, "no leases and no loops on this host (registry %s)\n", hs.Registry)
		return err
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TICKET\tEPOCH\tLOOP\tWATCHED\tACTIVITY\tLAST POST\tDIR")
	for _, s := range hs.Loops {
		// One line a loop, whatever the files and the server said (a wait's
		// reason, an error): no line feeds or escapes.
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", clikit.Clean(s.Ticket), s.Epoch, pidState(s.LoopPID, s.LoopAlive),
			pidState(s.ParentPID, s.ParentOK), clikit.Clean(activityText(s)), clikit.Clean(a.postText(s)), clikit.Clean(s.Dir))
	}
	return tw.Flush()
}
