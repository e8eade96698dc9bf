package warpcli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/warp"
)

func (c *CLI) releaseCommand() *cobra.Command {
	var o clientOptions
	var reason string
	var epoch int64
	cmd := &cobra.Command{
		Use:   "release ID",
		Short: "Release a ticket's lease and reopen the ticket",
		Long: `Release the current lease of a ticket (an operator action: needs an admin
token) and reopen the ticket for the next claim. With --epoch the release only
happens if that lease is still the current one (409 otherwise), so a ticket
another agent re-claimed meanwhile is left alone.`,
		Example: `  warp release T-42 --reason "agent wedged on a prompt"
  warp release T-42 --epoch 3`,
		Args: cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			return c.endLease(cmd, &o, args[0], epoch, func(cl *client.Client) (client.Ticket, error) {
				return cl.Release(cmd.Context(), args[0], client.ReleaseRequest{Epoch: epoch, Reason: reason})
			}, func(t client.Ticket) string {
				msg := "released " + t.ID
				if l := t.Lease; l != nil {
					msg += fmt.Sprintf(" (epoch %d, agent %s on host %s); it is %s again", l.Epoch, clean(dash(l.Agent)), clean(dash(l.Host)), t.State)
				}
				return msg
			})
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "operator", "why, recorded in the ticket's history")
	clikit.Int64Var(cmd.Flags(), &epoch, "epoch", 0, "release only this lease (0: the current one)")
	c.addClientFlags(cmd, &o)
	cmd.ValidArgsFunction = c.completeTicketArg(&o, string(warp.TicketClaimed))
	return cmd
}

func (c *CLI) ticketCompleteCommand() *cobra.Command {
	var o clientOptions
	var pr string
	var epoch int64
	cmd := &cobra.Command{
		Use:   "complete ID",
		Short: "Complete a ticket's lease, and the ticket with it",
		Long: `Complete the current lease of a ticket (an operator action: needs an admin
token), for an agent that finished the work but could not say so itself. The
ticket and its lease become completed, which is final; --pr records the pull
request with them. With --epoch the ticket is only completed if that lease is
still the current one (409 otherwise), so a ticket another agent re-claimed
meanwhile is left alone. A lease that already ended answers 410.`,
		Example: `  warp ticket complete T-42 --pr https://github.com/acme/billing/pull/7
  warp ticket complete T-42 --epoch 3
  warp ticket complete T-42 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			return c.endLease(cmd, &o, args[0], epoch, func(cl *client.Client) (client.Ticket, error) {
				return cl.Complete(cmd.Context(), args[0], client.CompleteRequest{Epoch: epoch, PRURL: pr})
			}, func(t client.Ticket) string {
				msg := "completed " + t.ID
				if l := t.Lease; l != nil {
					msg += fmt.Sprintf(" (epoch %d, agent %s on host %s)", l.Epoch, clean(dash(l.Agent)), clean(dash(l.Host)))
					if l.PRURL != "" {
						msg += "; PR " + clean(l.PRURL)
					}
				}
				return msg
			})
		}),
	}
	cmd.Flags().StringVar(&pr, "pr", "", "URL of the pull request, recorded with the lease")
	clikit.Int64Var(cmd.Flags(), &epoch, "epoch", 0, "complete only this lease (0: the current one)")
	c.addClientFlags(cmd, &o)
	cmd.ValidArgsFunction = c.completeTicketArg(&o, string(warp.TicketClaimed))
	return cmd
}

// StaleClaim is one line of `warp stale-unlock --json`.
type StaleClaim struct {
	Ticket string `json:"ticket"`
	Epoch  int64  `json:"epoch"`
	Agent  string `json:"agent"`
	Host   string `json:"host"`
	// EffectiveAt is the time expiry counts from under the server's mode;
	// Basis says which column it came from.
	EffectiveAt time.Time `json:"effective_at"`
	Basis       string    `json:"basis"`
	IdleS       float64   `json:"idle_s"`
	// Action is "released", "would-release" (dry run), "skipped" (the lease
	// moved on) or "failed" (the release failed otherwise: the last entry).
	Action string `json:"action"`
	Error  string `json:"error,omitempty"`
}

// StaleUnlockReport is what `warp stale-unlock --json` prints.
type StaleUnlockReport struct {
	Mode      string       `json:"mode"`
	OlderThan string       `json:"older_than"`
	DryRun    bool         `json:"dry_run"`
	Claimed   int          `json:"claimed"`
	Stale     []StaleClaim `json:"stale"`
}

func (c *CLI) staleUnlockCommand() *cobra.Command {
	var o clientOptions
	var olderThan time.Duration
	var dry bool
	cmd := &cobra.Command{
		Use:   "stale-unlock",
		Short: "Release claims whose agents stopped making progress",
		Long: `The stale-claim sweeper: list the claimed tickets, compute each lease's
effective activity with the server's own rule under the server's current mode
(transition: last_activity_at for v2 leases, the later of activity and
heartbeat for v1 leases; activity: last_activity_at; legacy: last heartbeat,
for a v2 lease the last one that was not a stale report)
and release those idle for longer than --older-than, printing each one.

Each release carries the epoch that was inspected, so a ticket re-claimed in
the meantime is skipped rather than released. Needs an admin token.`,
		Example: `  warp stale-unlock --dry-run
  warp stale-unlock --older-than 45m
  warp stale-unlock --json | jq '.stale[].ticket'`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if olderThan <= 0 {
				return clikit.Usagef("--older-than must be positive, got %s", olderThan)
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			rep, failed, err := c.staleUnlock(cmd.Context(), cl, olderThan, dry)
			if err != nil {
				return err
			}
			if o.json {
				err = c.printJSON(rep)
			} else {
				err = c.printStale(rep, olderThan)
			}
			if failed != nil {
				return fail(cl, failed)
			}
			return err
		}),
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 30*time.Minute, "release claims idle for longer than this")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print what would be released, release nothing")
	c.addClientFlags(cmd, &o)
	return cmd
}

// staleUnlock judges every claimed ticket by the server's current mode
// and, unless dry, releases the stale ones at the epoch it inspected. A
// release that fails for another reason than the lease having moved on
// (the server or its database) stops the walk: the report still holds
// what was done before it, and failed is that release's error.
func (c *CLI) staleUnlock(ctx context.Context, cl *client.Client, olderThan time.Duration, dry bool) (rep StaleUnlockReport, failed, err error) {
	ms, err := cl.ModeStatus(ctx)
	if err != nil {
		return rep, nil, fail(cl, err)
	}
	modeName := ms.Mode
	mode, err := warp.ParseMode(modeName)
	if err != nil {
		return rep, nil, fmt.Errorf("server answered mode %q: %w", modeName, err)
	}
	tickets, err := cl.AllTickets(ctx, client.ListOptions{State: string(warp.TicketClaimed)})
	if err != nil {
		return rep, nil, fail(cl, err)
	}
	// Idleness is judged by the server's clock, read with the mode (a
	// server too old to say leaves this host's); the release itself is
	// judged again by the server when it happens.
	now := c.now()
	if ms.Now != nil {
		now = *ms.Now
	}
	rep = StaleUnlockReport{Mode: modeName, OlderThan: olderThan.String(), DryRun: dry, Claimed: len(tickets), Stale: []StaleClaim{}}
	for _, t := range tickets {
		sc, idle, ok := staleClaim(mode, t, now, olderThan)
		if !ok {
			continue
		}
		if !dry {
			failed = releaseStale(ctx, cl, &sc, idle, olderThan)
		}
		rep.Stale = append(rep.Stale, sc)
		if failed != nil {
			break
		}
	}
	return rep, failed, nil
}

// staleClaim judges t's lease at now under mode: ok when it is held and
// idle (by its effective time) for longer than olderThan; the claim says
// from which timestamp, and would be released.
func staleClaim(mode warp.Mode, t client.Ticket, now time.Time, olderThan time.Duration) (sc StaleClaim, idle time.Duration, ok bool) {
	if t.Lease == nil || t.Lease.State != string(warp.LeaseHeld) {
		return sc, 0, false
	}
	l := httpapi.ToLease(t.ID, *t.Lease)
	at, fromHeartbeat := warp.Effective(mode, l)
	idle = now.Sub(at)
	if idle <= olderThan {
		return sc, idle, false
	}
	sc = StaleClaim{Ticket: t.ID, Epoch: l.Epoch, Agent: l.Agent, Host: l.Host, EffectiveAt: at,
		Basis: "last_activity_at", IdleS: idle.Seconds(), Action: "would-release"}
	switch {
	case fromHeartbeat && mode == warp.ModeLegacy && l.SchemaVersion == 2 && !l.RefreshedAt.IsZero():
		sc.Basis = "refreshed_at" // the last v2 heartbeat that was not a stale report
	case fromHeartbeat:
		sc.Basis = "last_heartbeat_at"
	}
	return sc, idle, true
}

// releaseStale releases sc's lease at its epoch if still idle for longer
// than olderThan, and records the outcome in sc: released, skipped (the
// lease moved on or showed progress between the listing and the release)
// or failed, whose error it returns.
func releaseStale(ctx context.Context, cl *client.Client, sc *StaleClaim, idle, olderThan time.Duration) error {
	// Conditional: the server releases only if, by its clock and in the
	// transaction that releases, the lease is still idle for longer than
	// olderThan.
	_, err := cl.Release(ctx, sc.Ticket, client.ReleaseRequest{Epoch: sc.Epoch,
		Reason: "stale-unlock: no progress for " + Age(idle), IdleForS: olderThan.Seconds()})
	switch {
	case err == nil:
		sc.Action = "released"
	case errors.Is(err, client.ErrStaleEpoch) || errors.Is(err, client.ErrLeaseEnded) || errors.Is(err, client.ErrNotFound) ||
		errors.Is(err, client.ErrConflict):
		// The lease moved on, or showed progress, between the listing and
		// the release.
		sc.Action, sc.Error = "skipped", apiclient.Message(err)
	default:
		sc.Action, sc.Error = "failed", apiclient.Message(err)
		return err
	}
	return nil
}

func (c *CLI) printStale(rep StaleUnlockReport, olderThan time.Duration) error {
	released := 0
	for _, s := range rep.Stale {
		idle := Age(time.Duration(s.IdleS * float64(time.Second)))
		switch s.Action {
		case "released":
			released++
			fmt.Fprintf(c.Stdout, "released %s epoch %d (agent %s on host %s): idle %s by %s\n", s.Ticket, s.Epoch, clean(dash(s.Agent)), clean(dash(s.Host)), idle, s.Basis)
		case "would-release":
			fmt.Fprintf(c.Stdout, "would release %s epoch %d (agent %s on host %s): idle %s by %s\n", s.Ticket, s.Epoch, clean(dash(s.Agent)), clean(dash(s.Host)), idle, s.Basis)
		case "failed":
			fmt.Fprintf(c.Stdout, "failed to release %s epoch %d: %s (stopped here)\n", s.Ticket, s.Epoch, clean(s.Error))
		default:
			fmt.Fprintf(c.Stdout, "skipped %s epoch %d: %s\n", s.Ticket, s.Epoch, clean(s.Error))
		}
	}
	summary := fmt.Sprintf("%d of %d claimed ticket(s) idle for longer than %s (mode %s)", len(rep.Stale), rep.Claimed, Age(olderThan), rep.Mode)
	if rep.DryRun {
		summary += "; dry run, nothing released"
	} else {
		summary += fmt.Sprintf("; released %d", released)
	}
	fmt.Fprintln(c.Stdout, summary)
	return nil
}

// endLease is an operator's end of a lease (release, complete): the checks
// of the ticket id and --epoch, the call end makes, and the answer as JSON
// or summary's one line.
func (c *CLI) endLease(cmd *cobra.Command, o *clientOptions, id string, epoch int64,
	end func(*client.Client) (client.Ticket, error), summary func(client.Ticket) string) error {
	if !warp.ValidTicketID(id) {
		return clikit.Usagef("ticket id %q is invalid", id)
	}
	if epoch < 0 {
		return clikit.Usagef("--epoch must not be negative")
	}
	cl, err := c.client(cmd, o)
	if err != nil {
		return err
	}
	t, err := end(cl)
	if err != nil {
		return fail(cl, err)
	}
	if o.json {
		return c.printJSON(t)
	}
	_, err = fmt.Fprintln(c.Stdout, summary(t))
	return err
}
