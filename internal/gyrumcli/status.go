package gyrumcli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// HostStatus is what status prints with --json.
type HostStatus struct {
	Registry string       `json:"registry"`
	Loops    []LoopStatus `json:"loops"`
	// Corrupt lists registry files that could not be read.
	Corrupt []string `json:"corrupt,omitempty"`
	// Problems are broken local states, each with the command that
	// repairs it: today a lease in the current worktree that $GYRUM_HOME
	// has no record of (the home was deleted, or this is another one).
	Problems []StatusProblem `json:"problems,omitempty"`
}

// StatusProblem is a broken local state and how to repair it.
type StatusProblem struct {
	Dir     string `json:"dir"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
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
still be held on warp; release it with gyrum release --dir D.

Run in a worktree whose lease $GYRUM_HOME has no record of (the home was
deleted, or start-work used another GYRUM_HOME), it lists that lease too and
says how to repair it (on stderr; "problems" with --json): restart the loop,
which restores the record the hook needs, or release the ticket.`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			hs, err := a.hostStatus()
			if err != nil {
				return err
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

// hostStatus gathers what status shows: every registered loop with its
// lease, the leases without one, and the problems with what to do.
func (a *App) hostStatus() (HostStatus, error) {
	reg, err := a.registry()
	if err != nil {
		return HostStatus{}, err
	}
	entries, bad, err := reg.List()
	if err != nil {
		return HostStatus{}, err
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
	a.addUnregistered(&hs, entries)
	for _, s := range hs.Loops {
		if s.Problem != "" {
			hs.Problems = append(hs.Problems, StatusProblem{Dir: s.Dir, Problem: s.Ticket + ": " + s.Problem,
				Fix: "free space on that file system (df -h " + shellquote.Quote(s.Dir) + "); the loop writes again at its next attempt"})
		}
	}
	// An agent that exited, a loop that is gone: what to do next, unless
	// a problem above already says it for the worktree.
	for i := range hs.Loops {
		s := &hs.Loops[i]
		whatNext(s)
		said := false
		for _, p := range hs.Problems {
			said = said || gyrumdir.SamePath(p.Dir, s.Dir)
		}
		if s.Next != "" && !said {
			hs.Problems = append(hs.Problems, StatusProblem{Dir: s.Dir, Problem: s.Ticket + ": " + s.Gone, Fix: s.Next})
		}
	}
	return hs, nil
}

// addUnregistered adds the leases no running loop has registered: those of
// worktrees start-work prepared on this host (the loop exited, lease.json
// kept), and the current worktree's when $GYRUM_HOME has no record of it
// at all — a broken state, with its repair.
func (a *App) addUnregistered(hs *HostStatus, entries []gyrumdir.Entry) {
	home, err := gyrumdir.Home(a.getenv)
	if err != nil {
		return
	}
	covered := func(wt string) bool {
		for _, e := range entries {
			if gyrumdir.SamePath(e.Dir, wt) {
				return true
			}
		}
		for _, s := range hs.Loops {
			if gyrumdir.SamePath(s.Dir, wt) {
				return true
			}
		}
		return false
	}
	prepared := gyrumdir.NewPrepared(home)
	wts, _ := prepared.List()
	for _, wt := range wts {
		if d, err := gyrumdir.At(wt); err == nil && !covered(wt) && d.HasLease() {
			hs.Loops = append(hs.Loops, a.inspect(d, 0))
		}
	}
	cwd, err := a.getwd()
	if err != nil {
		return
	}
	d, err := gyrumdir.Find(cwd)
	if err != nil || !d.HasLease() || covered(d.Worktree) {
		return
	}
	s := a.inspect(d, 0)
	hs.Loops = append(hs.Loops, s)
	if prepared.Has(d.Worktree) {
		return
	}
	what := fmt.Sprintf("this worktree holds the lease of %s (epoch %d), but %s has no record of it: $GYRUM_HOME was deleted, or start-work used another GYRUM_HOME", s.Ticket, s.Epoch, home)
	if s.LoopAlive {
		what += "; its loop (pid " + fmt.Sprint(s.LoopPID) + ") restores the record at its next tick"
	} else {
		what += "; no loop extends the lease and the agent's hook does not credit this worktree"
	}
	q := shellquote.Quote(d.Worktree)
	hs.Problems = append(hs.Problems, StatusProblem{Dir: d.Worktree, Problem: what,
		Fix: "nohup gyrum heartbeat run --dir " + q + " >/dev/null 2>&1 & (the loop restores the record), or hand the ticket back: gyrum release --dir " + q})
}

func (a *App) printHostStatus(hs HostStatus) error {
	for _, c := range hs.Corrupt {
		fmt.Fprintf(a.Stderr, "gyrum: corrupt registry entry: %s\n", c)
	}
	for _, p := range hs.Problems {
		fmt.Fprintf(a.Stderr, "gyrum: %s\n  fix: %s\n", clikit.Clean(p.Problem), clikit.Clean(p.Fix))
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
			clikit.Clean(watchedText(s)), clikit.Clean(activityText(s)), clikit.Clean(a.postText(s)), clikit.Clean(s.Dir))
	}
	return tw.Flush()
}

// watchedText is the WATCHED column: the process, whether it lives, and
// its name and how start-work chose it when lease.json says.
func watchedText(s LoopStatus) string {
	t := pidState(s.ParentPID, s.ParentOK)
	if s.Watched != "" || s.WatchedHow != "" {
		t += " (" + s.Watched + ", " + s.WatchedHow + ")"
	}
	return t
}
