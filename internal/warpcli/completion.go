package warpcli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// CompletionTimeout bounds the server request behind a dynamic completion:
// a shell waits on it at every TAB.
const CompletionTimeout = time.Second

// completionLimit is how many tickets a completion reads.
const completionLimit = 500

// completeFrom returns a completion that asks the server the command
// talks to (its --url and --token, or WARP_URL and WARP_TOKEN) within
// CompletionTimeout and offers what list returns that starts with the word
// typed. A server that cannot be reached, refuses or is slow offers
// nothing, silently: a completion never prints an error. Never file names.
func (c *CLI) completeFrom(o *clientOptions, list func(ctx context.Context, cl *client.Client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cl, err := c.client(cmd, o)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), CompletionTimeout)
		defer cancel()
		all, err := list(ctx, cl)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range all {
			word, _, _ := strings.Cut(s, "\t")
			if strings.HasPrefix(word, toComplete) {
				out = append(out, s)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTicketArg completes a command's one ticket id argument with the
// tickets in state ("" any), each with its title as the description.
func (c *CLI) completeTicketArg(o *clientOptions, state string) cobra.CompletionFunc {
	tickets := c.completeFrom(o, func(ctx context.Context, cl *client.Client) ([]string, error) {
		l, err := cl.ListTickets(ctx, client.ListOptions{State: state, Limit: completionLimit})
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(l.Tickets))
		for _, t := range l.Tickets {
			if title := strings.Join(strings.Fields(t.Title), " "); title != "" {
				out = append(out, t.ID+"\t"+title)
			} else {
				out = append(out, t.ID)
			}
		}
		return out, nil
	})
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return tickets(cmd, args, toComplete)
	}
}

// completeLabels completes a label with those the server's tickets carry.
func (c *CLI) completeLabels(o *clientOptions) cobra.CompletionFunc {
	return c.completeFrom(o, func(ctx context.Context, cl *client.Client) ([]string, error) {
		l, err := cl.ListTickets(ctx, client.ListOptions{Limit: completionLimit})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, t := range l.Tickets {
			out = append(out, t.Labels...)
		}
		slices.Sort(out)
		return slices.Compact(out), nil
	})
}

// completeHosts completes a host with those seen within the adoption window.
func (c *CLI) completeHosts(o *clientOptions) cobra.CompletionFunc {
	return c.completeFrom(o, func(ctx context.Context, cl *client.Client) ([]string, error) {
		l, err := cl.Hosts(ctx, warp.DefaultAdoptionWindow)
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(l.Hosts))
		for _, h := range l.Hosts {
			out = append(out, h.Host)
		}
		return out, nil
	})
}

// fixedCompletion offers words, never file names.
func fixedCompletion(words ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp)
}

// The values of the flags that take one of a few words.
var (
	ticketStates = []string{string(warp.TicketOpen), string(warp.TicketClaimed), string(warp.TicketCompleted), string(warp.TicketCancelled), string(warp.TicketBlocked)}
	verdictNames = []string{string(warp.VerdictActive), string(warp.VerdictLooping), string(warp.VerdictSpinning),
		string(warp.VerdictStalled), string(warp.VerdictUnwired), string(warp.VerdictSilent), string(warp.VerdictExited)}
	modeNames = []string{string(warp.ModeLegacy), string(warp.ModeTransition), string(warp.ModeActivity)}
)
