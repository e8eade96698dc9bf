package warpcli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/warp"
)

func (c *CLI) hostsCommand() *cobra.Command {
	var o clientOptions
	var window time.Duration
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "Show every host: leases by verdict, hook health, adoption, alarms",
		Long: `Show, per host holding a lease or heartbeating within the window: its held
leases by verdict, what the loops report about the activity hook (seen, not
seen, not reported by older loops), the schema of its last heartbeat, and
whether the host is in alarm.

A host is in alarm — "activity hook likely broken" — when most of its leases
(--hook-alarm-ratio of warp serve, default 80 %, and at least --hook-alarm-min,
default 3) turned stalled or unwired within one stall window while their
loops still heartbeated. The alarm clears when a lease of the host shows
hook-backed activity again. The fix: run 'gyrum doctor' on that host.`,
		Example: `  warp hosts
  warp hosts --json | jq '.hosts[] | select(.alarm != null) | .host'`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if window <= 0 {
				return clikit.Usagef("--window must be positive, got %s", window)
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			l, err := cl.Hosts(cmd.Context(), window)
			if err != nil {
				return fail(cl, err)
			}
			if l.Hosts == nil {
				l.Hosts = []client.Host{}
			}
			if o.json {
				return c.printJSON(l)
			}
			return c.printHosts(l)
		}),
	}
	cmd.Flags().DurationVar(&window, "window", warp.DefaultAdoptionWindow, "adoption: look back this far")
	c.addClientFlags(cmd, &o)
	return cmd
}

func (c *CLI) printHosts(l client.HostList) error {
	now := c.now()
	tw := newTable(c.Stdout)
	row(tw, "HOST", "LEASES", "ACTIVE", "STALLED", "UNWIRED", "SILENT", "EXITED", "HOOK SEEN/NOT/UNKNOWN", "SCHEMA", "LAST SEEN", "ALARM")
	for _, h := range l.Hosts {
		schema, seen := "-", "-"
		if a := h.Adoption; a != nil {
			schema, seen = schemaName(a.LastSchemaVersion), ago(now, a.LastSeen)
		}
		alarm := "-"
		if h.Alarm != nil {
			alarm = "since " + ago(now, h.Alarm.Since)
		}
		v := h.Verdicts
		row(tw, h.Host, fmt.Sprint(h.Leases), fmt.Sprint(v["active"]), fmt.Sprint(v["stalled"]), fmt.Sprint(v["unwired"]),
			fmt.Sprint(v["silent"]), fmt.Sprint(v["exited"]), fmt.Sprintf("%d/%d/%d", h.Hook.Seen, h.Hook.NotSeen, h.Hook.Unknown),
			schema, seen, alarm)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range l.Hosts {
		if a := h.Alarm; a != nil {
			fmt.Fprintf(c.Stdout, "\nALARM %s since %s: %s (%d of %d leases went stale together): %s\n",
				clean(h.Host), stamp(a.Since), clean(a.Message), a.Stale, a.Leases, clean(a.Fix))
		}
	}
	return nil
}
