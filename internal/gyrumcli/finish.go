package gyrumcli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
)

func (a *App) completePRCommand() *cobra.Command {
	var dir, pr string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "complete-pr [--dir D] [--pr URL]",
		Short: "Stop the loop and complete the ticket with its lease's epoch",
		Example: `  gyrum complete-pr --pr https://github.com/acme/app/pull/12
  gyrum complete-pr --dir ../wt-T-42 --json`,
		Long: `complete-pr stops the worktree's loop (identity checked, SIGTERM, SIGKILL after
5 s), completes the ticket on warp with the epoch and lease secret of
.gyrum/lease.json and clears .gyrum/ (lease, pid files, in-flight markers,
wait declaration, state, last-activity, hook counters, a pending lease-ended
notice; the log stays) and forgets the worktree in $GYRUM_HOME. When warp
answers that the lease already ended (410), belongs to someone else (409,
including not_holder) or the ticket is unknown (404), that is reported (exit
1) and the local state is cleaned anyway; when warp cannot be reached,
lease.json is kept so the command can be run again.`,
		Args: clikit.NoArgs("it completes the lease of this worktree (name another with --dir D); warp ticket complete ID is the operator's command for any ticket"),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			return a.finish(cmd.Context(), dir, true, pr, asJSON)
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().StringVar(&pr, "pr", "", "URL of the pull request that completes the ticket")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *App) releaseCommand() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "release [--dir D]",
		Short: "Stop the loop and hand the ticket back (it becomes open again)",
		Example: `  gyrum release
  gyrum release --dir ../wt-T-42 --json`,
		Long: `release stops the worktree's loop like complete-pr, releases the lease on warp
with its epoch and lease secret and cleans .gyrum/. A lease that already
ended (410), was taken over (409) or whose ticket is unknown (404) counts as
released: the local state is cleaned and the answer reported. When warp cannot be reached, lease.json is kept so the
command can be run again.`,
		Args: clikit.NoArgs("it releases the lease of this worktree (name another with --dir D); warp release ID is the operator's command for any ticket"),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			return a.finish(cmd.Context(), dir, false, "", asJSON)
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// FinishResult is what complete-pr and release print with --json.
type FinishResult struct {
	Ticket string  `json:"ticket"`
	Epoch  int64   `json:"epoch"`
	Action string  `json:"action"` // completed, "not completed" (refused by warp), released
	Server string  `json:"server"` // "ok" or the error warp answered
	Loop   stopped `json:"loop"`
	// Snapshot is the worktree's state saved for the next claimant;
	// absent outside a git work tree.
	Snapshot *client.Snapshot `json:"snapshot,omitempty"`
}

// sendNote sends the agent's note (gyrum note) that the stopped loop has
// not sent, with a v2 heartbeat, before the lease ends: a note left just
// before release is what the next claimant most needs. A refused or failed
// heartbeat is only a lost note.
func (a *App) sendNote(ctx context.Context, api *client.Client, d gyrumdir.Dir, lease gyrumdir.Lease) {
	var sent time.Time
	if st, err := d.ReadState(); err == nil {
		sent = st.NoteSentAt
	}
	note, at := heartbeat.PendingNote(d, sent)
	if note == nil {
		return
	}
	age := time.Duration(0)
	if last, err := d.LastActivity(); err == nil {
		age = max(a.now().Sub(last), 0)
	}
	body := client.NewHeartbeat(lease.Ticket, lease.Epoch, age)
	body.Host, body.Agent, body.Note, body.NoteAt = lease.Host, lease.Agent, note, at
	if _, err := api.Heartbeat(ctx, body); err != nil && !endedAlready(err) {
		fmt.Fprintf(a.Stderr, "gyrum: the note was not sent: %s\n", apiclient.Message(err))
	}
}

func (a *App) finish(ctx context.Context, dirFlag string, complete bool, prURL string, asJSON bool) error {
	d, err := a.findDir(dirFlag)
	if err != nil {
		return err
	}
	lease, err := d.ReadLease()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			st, serr := a.stopLoop(ctx, d)
			if serr != nil {
				return serr
			}
			return fmt.Errorf("%s holds no lease (%s): nothing to end", d.Worktree, st)
		}
		return fmt.Errorf("%w: nothing was changed; fix or remove the file", err)
	}
	st, err := a.stopLoop(ctx, d)
	if err != nil {
		return err
	}
	api := a.client(lease.WarpURL).WithLeaseSecret(lease.LeaseSecret)
	res := FinishResult{Ticket: lease.Ticket, Epoch: lease.Epoch, Action: "released", Server: "ok", Loop: st}
	a.sendNote(ctx, api, d, lease)
	if complete {
		res.Action = "completed"
		_, err = api.Complete(ctx, lease.Ticket, client.CompleteRequest{Epoch: lease.Epoch, PRURL: prURL})
	} else {
		_, err = api.Release(ctx, lease.Ticket, client.ReleaseRequest{Epoch: lease.Epoch, Reason: "released by agent"})
	}
	var refused error
	if err != nil {
		if !endedAlready(err) {
			return fmt.Errorf("%s %s: %w (lease.json kept: run the command again)", verb(complete), lease.Ticket, err)
		}
		res.Server = apiclient.Message(err)
		if complete {
			res.Action = "not completed"
			refused = fmt.Errorf("warp refused to complete %s: %s (local state cleaned)", lease.Ticket, res.Server)
		}
	}
	// The lease has ended (or had): the worktree's state is the attempt's
	// snapshot, for whoever claims the ticket next.
	if snap, err := heartbeat.SaveSnapshot(ctx, api, d.Worktree, lease, lease.SnapshotPush, nil); err == nil {
		res.Snapshot = &snap
	}
	if err := d.Clear(); err != nil {
		return fmt.Errorf("clean %s: %w", d.Path, err)
	}
	a.forgetWorktree(d)
	if err := a.printFinish(res, st, asJSON); err != nil {
		return err
	}
	return refused
}

// printFinish prints what release or complete-pr did (st: what became
// of the loop), as JSON or a line.
func (a *App) printFinish(res FinishResult, st stopped, asJSON bool) error {
	if asJSON {
		return clikit.PrintJSON(a.Stdout, res)
	}
	note := ""
	if res.Server != "ok" {
		note = "; warp answered: " + res.Server
	}
	_, err := fmt.Fprintf(a.Stdout, "%s %s (epoch %d); %s%s\n", res.Action, res.Ticket, res.Epoch, st, note)
	return err
}

func verb(complete bool) string {
	if complete {
		return "complete"
	}
	return "release"
}
