package warpcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli/watch"
)

func (c *CLI) ticketCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ticket",
		Short: "Create, list, show, edit, complete, cancel and reopen tickets",
		Example: `  warp ticket create --title "fix the flaky test" --label backend
  warp ticket list --state claimed --verdict stalled
  warp ticket list --label backend
  warp ticket show T-1
  warp ticket edit T-1 --add-label db
  warp ticket complete T-1 --pr https://github.com/acme/billing/pull/7
  warp ticket cancel T-2 --reason "duplicate of T-1"
  warp ticket reopen T-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(c.ticketCreateCommand(), c.ticketListCommand(), c.ticketShowCommand(), c.ticketEditCommand(),
		c.ticketCompleteCommand(), c.ticketCancelCommand(), c.ticketReopenCommand())
	return cmd
}

func (c *CLI) ticketCreateCommand() *cobra.Command {
	var o clientOptions
	var title string
	var labels []string
	cmd := &cobra.Command{
		Use:   "create [ID]",
		Short: "Create an open ticket",
		Long: `Create an open ticket. Without ID the server generates one. Labels let
'gyrum start-work --next --label L' pick tickets (claim-next takes the oldest
open ticket carrying every requested label).`,
		Example: `  warp ticket create T-42 --title "migrate the billing cron" --label backend --label db
  warp ticket create --title "triage flaky e2e" --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			req := client.CreateTicketRequest{Title: title, Labels: labels}
			if len(args) == 1 {
				if err := apiclient.CheckTicketID(args[0]); err != nil {
					return err
				}
				req.ID = args[0]
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			t, err := cl.CreateTicket(cmd.Context(), req)
			if err != nil {
				return fail(cl, err)
			}
			if o.json {
				return c.printJSON(t)
			}
			msg := "created " + t.ID
			if len(t.Labels) > 0 {
				msg += " (labels " + strings.Join(t.Labels, ", ") + ")"
			}
			fmt.Fprintln(c.Stdout, clean(msg))
			return nil
		}),
	}
	cmd.Flags().StringVar(&title, "title", "", "what the ticket is about")
	cmd.Flags().StringSliceVar(&labels, "label", nil, "label (repeat, or comma-separate)")
	_ = cmd.RegisterFlagCompletionFunc("label", c.completeLabels(&o))
	c.addClientFlags(cmd, &o)
	return cmd
}

// ticketListHelp is ticket list's --help.
const ticketListHelp = `List tickets in creation order with their current lease: agent, host, the
schema of the latest heartbeat, ages of the last activity and heartbeat, and
when the lease expires. One page (--limit, default 100) unless --all.

Verdicts: active (recent activity), stalled (heartbeats arrive, activity is
old), unwired (the loop reports that the agent's activity hook has not fired
since it started, and the claim is older than the stall threshold: run
'gyrum doctor' on that host), silent (no heartbeats), exited (the loop
reported the agent gone), looping (active, but its latest calls repeat with
the same result), spinning (active, but no progress for --spin-after).

--watch follows the list live until Ctrl-C (exit 0): every ticket the
filters select (all pages), then each change the server makes; ACTIVITY is
then the lease's progress, as on the dashboard (for a v1 lease, the later of
activity and heartbeat). On a terminal the table is redrawn in place. Into a
pipe or file it prints the table, then one line per change (heartbeats that
move only times are left out). With -o json it prints one JSON object a line:
{"type":"snapshot","reason":...,"tickets":[...]} first and after every
re-read of the list, then {"type":"update","kind":...,"ticket":{...},
"in_list":true|false,...} per change (docs/DESIGN.md, Operator commands). When
the stream drops, it says so on stderr, reconnects (the server's retry:,
backing off) and reads the list again.`

func (c *CLI) ticketListCommand() *cobra.Command {
	var o clientOptions
	var lo client.ListOptions
	var all, live bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tickets with their leases and verdicts",
		Long:  ticketListHelp,
		Example: `  warp ticket list
  warp ticket list --state claimed --verdict stalled
  warp ticket list --host build-3 --all --json
  warp ticket list --state open --label backend --label db
  warp ticket list --state claimed --watch
  warp ticket list --watch -o json | jq -c 'select(.type == "update" and .to == "stalled")'`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if err := checkListOptions(lo, live, cmd.Flags().Changed("limit") || cmd.Flags().Changed("cursor")); err != nil {
				return err
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			if live {
				term, _ := c.lookupEnv("TERM")
				return watch.Run(cmd.Context(), cl, lo, watch.Options{Stdout: c.Stdout, Stderr: c.Stderr, JSON: o.json, Term: term,
					Now: c.now, Backoff: c.Backoff, Table: rowTable})
			}
			return c.listTickets(cmd.Context(), cl, lo, all, o.json)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&lo.State, "state", "", "only tickets in this state: open, claimed, completed, cancelled, blocked")
	f.StringSliceVar(&lo.Labels, "label", nil, "only tickets carrying this label (repeat, or comma-separate: every one)")
	f.StringVar(&lo.Verdict, "verdict", "", "only claimed tickets with this verdict: active, stalled, looping, spinning, unwired, silent, exited")
	f.StringVar(&lo.Host, "host", "", "only tickets whose lease is on this host")
	clikit.IntVar(f, &lo.Limit, "limit", 0, "tickets per page (server default 100)")
	f.StringVar(&lo.Cursor, "cursor", "", "start after this cursor (printed when more pages exist)")
	f.BoolVar(&all, "all", false, "follow every page")
	f.BoolVar(&live, "watch", false, "follow the list live: redrawn on a terminal, a line per change otherwise, JSON lines with -o json; implies --all")
	c.addClientFlags(cmd, &o)
	_ = cmd.RegisterFlagCompletionFunc("state", fixedCompletion(ticketStates...))
	_ = cmd.RegisterFlagCompletionFunc("verdict", fixedCompletion(verdictNames...))
	_ = cmd.RegisterFlagCompletionFunc("host", c.completeHosts(&o))
	_ = cmd.RegisterFlagCompletionFunc("label", c.completeLabels(&o))
	return cmd
}

// checkListOptions refuses what ticket list cannot ask: an unknown state
// or verdict, a bad label or limit, and with --watch labels and paging
// (paged says --limit or --cursor was given).
func checkListOptions(lo client.ListOptions, watch, paged bool) error {
	if lo.State != "" && !warp.TicketState(lo.State).Valid() {
		return clikit.Usagef("--state %q: want open, claimed, completed, cancelled or blocked", lo.State)
	}
	for _, l := range lo.Labels {
		if !warp.ValidTicketID(l) {
			return clikit.Usagef("--label %q is invalid: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", l)
		}
	}
	if lo.Verdict != "" {
		if _, err := warp.ParseVerdict(lo.Verdict); err != nil {
			return clikit.Usagef("--verdict: %s", warp.ErrorMessage(err))
		}
	}
	if lo.Limit < 0 || lo.Limit > warp.MaxListLimit {
		return clikit.Usagef("--limit %d: want 1 to %d", lo.Limit, warp.MaxListLimit)
	}
	if watch && len(lo.Labels) > 0 {
		return clikit.Usagef("--watch cannot follow --label: the event stream's rows carry no labels (list them with --label, or watch the state, verdict or host)")
	}
	if watch && paged {
		return clikit.Usagef("--watch follows every ticket the filters select: drop --limit and --cursor, which page a one-off list")
	}
	return nil
}

// listTickets prints one page of tickets lo selects (every page with
// all) as a table, or as JSON.
func (c *CLI) listTickets(ctx context.Context, cl *client.Client, lo client.ListOptions, all, asJSON bool) error {
	var list client.TicketList
	var err error
	if all {
		list.Tickets, err = cl.AllTickets(ctx, lo)
	} else {
		list, err = cl.ListTickets(ctx, lo)
	}
	if err != nil {
		return fail(cl, err)
	}
	if list.Tickets == nil {
		list.Tickets = []client.Ticket{}
	}
	if asJSON {
		return c.printJSON(list)
	}
	if err := ticketTable(c.Stdout, c.now(), list.Tickets); err != nil {
		return err
	}
	if list.NextCursor != "" {
		fmt.Fprintf(c.Stderr, "more tickets: pass --all, or --cursor %s for the next page\n", clean(list.NextCursor))
	}
	return nil
}

// TicketDetail is what `warp ticket show --json` prints.
type TicketDetail struct {
	Ticket client.Ticket  `json:"ticket"`
	Events []client.Event `json:"events"`
}

func (c *CLI) ticketShowCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one ticket, its lease and its history",
		Long: `Show one ticket with its latest lease (held or ended: when and why it ended,
whether the v1 fallback had extended it) and every event of its history.
--json prints {"ticket": ..., "events": [...]}.`,
		Example: `  warp ticket show T-42
  warp ticket show T-42 --json | jq '.events[] | select(.kind=="lapsed")'`,
		Args: cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if !warp.ValidTicketID(args[0]) {
				return clikit.Usagef("ticket id %q is invalid", args[0])
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			t, err := cl.Ticket(cmd.Context(), args[0])
			if err != nil {
				return fail(cl, err)
			}
			evs, err := cl.Events(cmd.Context(), args[0])
			if err != nil {
				return fail(cl, err)
			}
			if evs == nil {
				evs = []client.Event{}
			}
			if o.json {
				return c.printJSON(TicketDetail{Ticket: t, Events: evs})
			}
			return ticketDetail(c.Stdout, c.now(), t, evs)
		}),
	}
	c.addClientFlags(cmd, &o)
	cmd.ValidArgsFunction = c.completeTicketArg(&o, "")
	return cmd
}
