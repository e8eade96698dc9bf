package warpcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/warp"
)

// An operator's changes to a ticket: edit, cancel, reopen (admin).

func (c *CLI) ticketEditCommand() *cobra.Command {
	var o clientOptions
	var title string
	var labels, add, remove []string
	cmd := &cobra.Command{
		Use:   "edit ID",
		Short: "Change a ticket's title and labels",
		Long: `Change a ticket's title and labels, in any state (a claimed ticket keeps its
lease). --label sets every label (repeat or comma-separate; --label "" removes
them all); --add-label and --remove-label change some. Labels drive
'gyrum start-work --next --label L'. The change is recorded as the event
edited; an edit that changes nothing records nothing. Needs an admin token.`,
		Example: `  warp ticket edit T-42 --title "migrate the billing cron to the new queue"
  warp ticket edit T-42 --add-label db --remove-label backend
  warp ticket edit T-42 --label ""`,
		Args: cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if err := apiclient.CheckTicketID(args[0]); err != nil {
				return err
			}
			req, err := editRequest(cmd.Flags(), title, labels, add, remove)
			if err != nil {
				return err
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			t, err := cl.EditTicket(cmd.Context(), args[0], req)
			if err != nil {
				return fail(cl, err)
			}
			if o.json {
				return c.printJSON(t)
			}
			_, err = fmt.Fprintf(c.Stdout, "%s: title %q, labels %s\n", clean(t.ID), clean(t.Title), clean(dash(strings.Join(t.Labels, ", "))))
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&title, "title", "", "the new title")
	f.StringSliceVar(&labels, "label", nil, "set every label (repeat, or comma-separate; \"\" removes them all)")
	f.StringSliceVar(&add, "add-label", nil, "add a label (repeat, or comma-separate)")
	f.StringSliceVar(&remove, "remove-label", nil, "remove a label (repeat, or comma-separate)")
	c.addClientFlags(cmd, &o)
	for _, name := range []string{"label", "add-label", "remove-label"} {
		_ = cmd.RegisterFlagCompletionFunc(name, c.completeLabels(&o))
	}
	cmd.ValidArgsFunction = c.completeTicketArg(&o, "")
	return cmd
}

// editRequest is the edit ticket edit's flags ask for (f says which
// were given), or a usage error: nothing to change, --label with
// --add-label or --remove-label, a bad label.
func editRequest(f *pflag.FlagSet, title string, labels, add, remove []string) (client.EditTicketRequest, error) {
	var req client.EditTicketRequest
	if f.Changed("title") {
		req.Title = &title
	}
	if f.Changed("label") {
		if f.Changed("add-label") || f.Changed("remove-label") {
			return req, clikit.Usagef("--label sets every label: give it alone, or --add-label and --remove-label")
		}
		req.Labels = &labels
	}
	req.AddLabels, req.RemoveLabels = add, remove
	if req.Title == nil && req.Labels == nil && len(add) == 0 && len(remove) == 0 {
		return req, clikit.Usagef("nothing to change: give --title, --label, --add-label or --remove-label")
	}
	for _, l := range append(append(append([]string(nil), labels...), add...), remove...) {
		if l = strings.TrimSpace(l); l != "" && !warp.ValidTicketID(l) {
			return req, clikit.Usagef("label %q is invalid: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", l)
		}
	}
	return req, nil
}

func (c *CLI) ticketCancelCommand() *cobra.Command {
	var o clientOptions
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a ticket: no agent claims it until it is reopened",
		Long: `Cancel an open, blocked or claimed ticket. A claimed ticket's lease is released first
(end reason "cancelled", or "cancelled: REASON"), so its heartbeat loop stops
and tells its agent. A cancelled ticket is never claimed (claim answers 409,
claim-next passes it by) until 'warp ticket reopen' opens it again. A
completed or cancelled ticket cannot be cancelled (409). Needs an admin token.`,
		Example: `  warp ticket cancel T-42 --reason "duplicate of T-40"
  warp ticket cancel T-42 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			return c.changeTicket(cmd, &o, args[0], reason, (*client.Client).CancelTicket, func(t client.Ticket) string {
				msg := "cancelled " + t.ID
				if l := t.Lease; l != nil && (l.EndReason == warp.CancelReason("") || strings.HasPrefix(l.EndReason, warp.CancelReason("")+": ")) {
					msg += fmt.Sprintf("; lease %d of agent %s on host %s released", l.Epoch, clean(dash(l.Agent)), clean(dash(l.Host)))
				}
				return msg
			})
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ticket's history (and the released lease's end reason)")
	c.addClientFlags(cmd, &o)
	cmd.ValidArgsFunction = c.completeTicketArg(&o, "")
	return cmd
}

func (c *CLI) ticketReopenCommand() *cobra.Command {
	var o clientOptions
	var reason string
	cmd := &cobra.Command{
		Use:   "reopen ID",
		Short: "Reopen a completed, cancelled or blocked ticket",
		Long: `Reopen a completed, cancelled or blocked ticket: it is open again, and the next
claim gets the next epoch (its ended leases stay as they ended); a blocked
ticket (warp serve --max-attempts) gets that many attempts again. An open ticket, or
a claimed one, cannot be reopened (409): to take a ticket from its holder,
release it ('warp release ID'). Needs an admin token.`,
		Example: `  warp ticket reopen T-42 --reason "the fix regressed"`,
		Args:    cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			return c.changeTicket(cmd, &o, args[0], reason, (*client.Client).ReopenTicket, func(t client.Ticket) string {
				return fmt.Sprintf("reopened %s: it is %s; the next claim gets epoch %d", t.ID, t.State, t.Epoch+1)
			})
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ticket's history")
	c.addClientFlags(cmd, &o)
	cmd.ValidArgsFunction = c.completeTicketArg(&o, "")
	return cmd
}

// changeTicket runs a cancel or a reopen of id and prints its answer.
func (c *CLI) changeTicket(cmd *cobra.Command, o *clientOptions, id, reason string,
	change func(*client.Client, context.Context, string, client.TicketChangeRequest) (client.Ticket, error), say func(client.Ticket) string) error {
	if err := apiclient.CheckTicketID(id); err != nil {
		return err
	}
	if len(reason) > warp.MaxIdentLen {
		return clikit.Usagef("--reason is %d bytes, at most %d", len(reason), warp.MaxIdentLen)
	}
	cl, err := c.client(cmd, o)
	if err != nil {
		return err
	}
	t, err := change(cl, cmd.Context(), id, client.TicketChangeRequest{Reason: reason})
	if err != nil {
		return fail(cl, err)
	}
	if o.json {
		return c.printJSON(t)
	}
	_, err = fmt.Fprintln(c.Stdout, clean(say(t)))
	return err
}
