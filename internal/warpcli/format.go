package warpcli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/age"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/handoff"
	"github.com/gyrum-labs/warp/internal/progress"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Age is age.Format, the one way durations are written (internal/age).
func Age(d time.Duration) string { return age.Format(d) }

// ago is age.Ago: "3m12s ago", "in 4m00s", "-" for zero.
func ago(now, t time.Time) string { return age.Ago(now, t) }

func stamp(t time.Time) string { return clikit.Stamp(t) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// row prints one table row. Every cell goes through clean: agent-supplied
// text (agent labels, hosts, titles, in_flight, reasons) must not reach an
// operator's terminal as escape sequences, nor break the table.
func row(w io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = clean(c)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// clean is clikit.Clean: text safe to print on a terminal.
func clean(s string) string { return clikit.Clean(s) }

// ticketTable prints tickets one a line.
func ticketTable(w io.Writer, now time.Time, tickets []client.Ticket) error {
	tw := newTable(w)
	row(tw, "ID", "STATE", "VERDICT", "EPOCH", "AGENT", "HOST", "SCHEMA", "ACTIVITY", "HEARTBEAT", "EXPIRES", "TITLE")
	for _, t := range tickets {
		agent, host, schema, act, hb, exp := "-", "-", "-", "-", "-", "-"
		if l := t.Lease; l != nil && t.State == "claimed" {
			agent, host = dash(l.Agent), dash(l.Host)
			schema = schemaName(l.SchemaVersion)
			act, hb, exp = ago(now, l.LastActivityAt), ago(now, l.LastHeartbeatAt), ago(now, l.ExpiresAt)
		}
		row(tw, t.ID, t.State, dash(t.Verdict), fmt.Sprint(t.Epoch), agent, host, schema, act, hb, exp, truncate(t.Title, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var unwired [][2]string
	for _, t := range tickets {
		if t.Verdict == string(warp.VerdictUnwired) && t.Lease != nil {
			unwired = append(unwired, [2]string{t.ID, t.Lease.Host})
		}
	}
	return unwiredFixes(w, unwired)
}

// rowTable prints rows of the event stream as ticketTable prints tickets,
// but for ACTIVITY, which is the lease's progress (what the verdict is
// judged on: for a lease whose latest heartbeat was v1, the later of
// activity and heartbeat), the time a row carries.
func rowTable(w io.Writer, now time.Time, rows []client.StreamTicket) error {
	tw := newTable(w)
	row(tw, "ID", "STATE", "VERDICT", "EPOCH", "AGENT", "HOST", "SCHEMA", "ACTIVITY", "HEARTBEAT", "EXPIRES", "TITLE")
	var unwired [][2]string
	for _, r := range rows {
		agent, host, schema, act, hb, exp := "-", "-", "-", "-", "-", "-"
		if r.State == "claimed" {
			agent, host = dash(r.Agent), dash(r.Host)
			schema = schemaName(r.SchemaVersion)
			act, hb, exp = ago(now, client.MSTime(r.ActivityAt)), ago(now, client.MSTime(r.HeartbeatAt)), ago(now, client.MSTime(r.ExpiresAt))
			if r.Verdict == string(warp.VerdictUnwired) {
				unwired = append(unwired, [2]string{r.ID, r.Host})
			}
		}
		row(tw, r.ID, r.State, dash(r.Verdict), fmt.Sprint(r.Epoch), agent, host, schema, act, hb, exp, truncate(r.Title, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return unwiredFixes(w, unwired)
}

// unwiredFixes prints, after a table, one fix line per host with unwired
// leases, given as (ticket, host) pairs.
func unwiredFixes(w io.Writer, unwired [][2]string) error {
	byHost := map[string][]string{}
	var hosts []string
	for _, u := range unwired {
		if _, ok := byHost[u[1]]; !ok {
			hosts = append(hosts, u[1])
		}
		byHost[u[1]] = append(byHost[u[1]], u[0])
	}
	sort.Strings(hosts)
	for i, h := range hosts {
		if i == 0 {
			fmt.Fprintln(w)
		}
		if _, err := fmt.Fprintf(w, "unwired (%s): the activity hook has not fired since the loop started: %s\n",
			strings.Join(byHost[h], ", "), clean(warp.UnwiredFix(h))); err != nil {
			return err
		}
	}
	return nil
}

// hookHealth describes what the loop reported about the activity hook.
func hookHealth(l client.Lease) string {
	switch warp.HookSeen(l.HookSeen) {
	case warp.HookYes:
		return fmt.Sprintf("fired since the loop started (%d events reported)", l.HookEvents)
	case warp.HookNo:
		return "not fired since the loop started"
	}
	return "not reported (a loop from before hook reporting)"
}

func schemaName(v int) string {
	if v == 0 {
		return "claim"
	}
	return fmt.Sprintf("v%d", v)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ticketDetail prints one ticket, its lease and its events.
func ticketDetail(w io.Writer, now time.Time, t client.Ticket, events []client.Event) error {
	tw := newTable(w)
	row(tw, "ticket", t.ID)
	row(tw, "title", dash(t.Title))
	row(tw, "labels", dash(strings.Join(t.Labels, ", ")))
	row(tw, "state", t.State)
	row(tw, "epoch", fmt.Sprint(t.Epoch))
	row(tw, "created", stamp(t.CreatedAt)+" ("+ago(now, t.CreatedAt)+")")
	if t.Lease != nil {
		leaseRows(tw, now, t.Verdict, *t.Lease)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(t.Attempts) > 0 {
		fmt.Fprintf(w, "\nattempts (%d, newest first)\n", len(t.Attempts))
		for _, line := range handoff.Lines(handoff.New(t, t.Epoch+1).Attempts, 0) {
			fmt.Fprintln(w, clikit.Clean(line))
		}
	}
	fmt.Fprintf(w, "\nevents (%d)\n", len(events))
	tw = newTable(w)
	row(tw, "ID", "AT", "AGE", "KIND", "EPOCH", "DETAILS")
	for _, e := range events {
		row(tw, fmt.Sprint(e.ID), stamp(e.At), Age(now.Sub(e.At)), e.Kind, fmt.Sprint(e.Epoch), details(e.Data))
	}
	return tw.Flush()
}

// leaseRows adds the rows of lease l (its ticket's verdict given) to
// ticket show's table.
func leaseRows(tw *tabwriter.Writer, now time.Time, verdict string, l client.Lease) {
	row(tw, "lease", fmt.Sprintf("epoch %d, %s, agent %s on host %s", l.Epoch, l.State, dash(l.Agent), dash(l.Host)))
	if verdict != "" {
		row(tw, "  verdict", verdict)
	}
	if verdict == string(warp.VerdictUnwired) {
		row(tw, "  fix", warp.UnwiredFix(l.Host)+": the activity hook has not fired since the loop started")
	}
	if l.Loop != nil {
		row(tw, "  loop", progress.Words(l.Loop.Label, l.Loop.Count, l.Loop.Error))
	}
	if l.LastProgressAt != nil {
		row(tw, "  last progress", stamp(*l.LastProgressAt)+" ("+ago(now, *l.LastProgressAt)+")")
	}
	row(tw, "  hook", hookHealth(l))
	row(tw, "  claimed", stamp(l.ClaimedAt)+" ("+ago(now, l.ClaimedAt)+")")
	row(tw, "  last heartbeat", stamp(l.LastHeartbeatAt)+" ("+ago(now, l.LastHeartbeatAt)+"), schema "+schemaName(l.SchemaVersion))
	row(tw, "  last activity", stamp(l.LastActivityAt)+" ("+ago(now, l.LastActivityAt)+")")
	if l.InFlight != "" {
		row(tw, "  in flight", l.InFlight)
	}
	if l.State == "held" {
		row(tw, "  expires", stamp(l.ExpiresAt)+" ("+ago(now, l.ExpiresAt)+")")
	}
	if l.Exit != "" {
		row(tw, "  exit report", l.Exit)
	}
	if l.EndedAt != nil {
		end := stamp(*l.EndedAt) + " (" + ago(now, *l.EndedAt) + ")"
		if l.EndReason != "" {
			end += ", " + l.EndReason
		}
		if l.FallbackExtended {
			end += ", the v1 fallback had extended it"
		}
		row(tw, "  ended", end)
	}
	if l.PRURL != "" {
		row(tw, "  pr", l.PRURL)
	}
}

// details prints an event's data as sorted key=value pairs.
func details(data map[string]any) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := fmt.Sprint(data[k])
		if v == "" {
			continue
		}
		parts = append(parts, k+"="+v)
	}
	return dash(strings.Join(parts, " "))
}
