package warpcli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/warp"
)

func (c *CLI) adoptionCommand() *cobra.Command {
	var o clientOptions
	var window time.Duration
	cmd := &cobra.Command{
		Use:   "adoption",
		Short: "Show which hosts send v2 (activity-gated) heartbeats",
		Long: `Show, per host that heartbeated within the window, the schema of its last
heartbeat, when it was last seen and how many v1 and v2 heartbeats it sent
(counted from the start of the window's first minute: up to 59 s more).
The server refuses 'warp mode set activity' while any host sent v1 within the
default window (24h) unless --force.`,
		Example: `  warp adoption
  warp adoption --window 1h --json`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if window <= 0 {
				return clikit.Usagef("--window must be positive, got %s", window)
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			a, err := cl.Adoption(cmd.Context(), window)
			if err != nil {
				return fail(cl, err)
			}
			if a.Hosts == nil {
				a.Hosts = []client.HostAdoption{}
			}
			if o.json {
				return c.printJSON(a)
			}
			return c.printAdoption(a)
		}),
	}
	cmd.Flags().DurationVar(&window, "window", warp.DefaultAdoptionWindow, "look back this far")
	c.addClientFlags(cmd, &o)
	return cmd
}

func (c *CLI) printAdoption(a client.Adoption) error {
	now := c.now()
	tw := newTable(c.Stdout)
	row(tw, "HOST", "SCHEMA", "LAST SEEN", "V1", "V2")
	var v1 []string
	for _, h := range a.Hosts {
		row(tw, h.Host, schemaName(h.LastSchemaVersion), ago(now, h.LastSeen), fmt.Sprint(h.V1Count), fmt.Sprint(h.V2Count))
		if h.V1Count > 0 {
			v1 = append(v1, h.Host)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ready := "yes"
	if !a.Summary.ReadyForActivityMode {
		ready = "no, v1 from " + clean(strings.Join(v1, ", "))
	}
	fmt.Fprintf(c.Stdout, "window %s: %d host(s), %d on v2 only; ready for activity mode: %s\n", clean(a.Window), a.Summary.Hosts, a.Summary.V2Hosts, ready)
	return nil
}

func (c *CLI) modeCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "mode",
		Short: "Show or set the expiry mode, list its changes",
		Long: `Show the expiry mode, which every replica reads from the database:
  legacy      leases expire on the last heartbeat (pre-ADR-138 behaviour)
  transition  v2 leases expire on activity, v1 leases on the later of activity
              and heartbeat (the default, Phase 1b)
  activity    leases expire on activity only; v1 heartbeats no longer extend
              (Phase 3)`,
		Example: `  warp mode
  warp mode set activity
  warp mode set activity --force
  warp mode history`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			m, err := cl.Mode(cmd.Context())
			if err != nil {
				return fail(cl, err)
			}
			if o.json {
				return c.printJSON(client.ModeBody{Mode: m})
			}
			fmt.Fprintln(c.Stdout, clean(string(m)))
			return nil
		}),
	}
	c.addClientFlags(cmd, &o)
	cmd.AddCommand(c.modeSetCommand(), c.modeHistoryCommand())
	return cmd
}

func (c *CLI) modeHistoryCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List every change of the expiry mode",
		Long: `List every change of the expiry mode, oldest first: when it happened, the
mode before and after, and whether it was forced ('warp mode set activity
--force' past hosts that still sent v1 heartbeats). The changes are the
server's mode-changed events (GET /v1/mode/history); the mode a database
starts with (--mode of its first 'warp serve') is not a change. At most the
latest 1000 changes are listed.`,
		Example: `  warp mode history
  warp mode history --json | jq '.changes[] | select(.forced)'
  warp mode history -o json`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			h, err := cl.ModeHistory(cmd.Context(), 0)
			if err != nil {
				return fail(cl, err)
			}
			if h.Changes == nil {
				h.Changes = []client.ModeChange{}
			}
			if len(h.Changes) >= warp.MaxListLimit {
				fmt.Fprintf(c.Stderr, "only the latest %d mode changes are listed\n", len(h.Changes))
			}
			if o.json {
				return c.printJSON(h)
			}
			if len(h.Changes) == 0 {
				fmt.Fprintln(c.Stdout, "no mode change recorded; 'warp mode' shows the current mode")
				return nil
			}
			now := c.now()
			tw := newTable(c.Stdout)
			row(tw, "AT", "AGE", "FROM", "TO", "FORCED")
			for _, ch := range h.Changes {
				forced := "no"
				if ch.Forced {
					forced = "yes"
				}
				row(tw, stamp(ch.At), ago(now, ch.At), ch.From, ch.To, forced)
			}
			return tw.Flush()
		}),
	}
	c.addClientFlags(cmd, &o)
	return cmd
}

func (c *CLI) modeSetCommand() *cobra.Command {
	var o clientOptions
	var force bool
	cmd := &cobra.Command{
		Use:   "set MODE",
		Short: "Switch the expiry mode (legacy, transition, activity)",
		Long: `Switch the expiry mode and recompute every held lease's expiry under it.
Switching to activity is refused while 'warp adoption' shows a host that sent
v1 heartbeats within the last 24h: their leases would lapse while their loops
still run. --force switches anyway. The change is recorded as an event.`,
		Example: `  warp mode set activity
  warp mode set activity --force
  warp mode set transition`,
		Args: cobra.ExactArgs(1),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if _, err := warp.ParseMode(args[0]); err != nil {
				return clikit.Usagef("%s", warp.ErrorMessage(err))
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			m, err := cl.SetMode(cmd.Context(), args[0], force)
			if err != nil {
				return fail(cl, err)
			}
			if o.json {
				return c.printJSON(client.ModeBody{Mode: m})
			}
			fmt.Fprintf(c.Stdout, "mode: %s\n", clean(string(m)))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "switch to activity even though some hosts still send v1")
	c.addClientFlags(cmd, &o)
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return modeNames, cobra.ShellCompDirectiveNoFileComp
	}
	return cmd
}
