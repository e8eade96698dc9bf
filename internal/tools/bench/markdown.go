package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the results as markdown tables; command is the
// command line that produced them, quoted in the text.
func (r *Results) WriteMarkdown(w io.Writer, command string) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Measured %s on %s (%s/%s, %d CPUs, %s) with `%s`.\n\n",
		m.At.Format("2006-01-02 15:04 MST"), m.Hostname, m.GOOS, m.GOARCH, m.CPUs, m.GoVersion, command)

	b.WriteString("### Heartbeat ingest (HTTP, loopback, same Go load generator)\n\n")
	b.WriteString("| target | requests | errors | req/s | p50 ms | p90 ms | p99 ms | no-op run right before, req/s | ratio (the median pair's; lowest–highest) | CPU µs/request, no-op / this (whole process) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Ingest {
		anchor, ratio, cpu := "", "", fmt.Sprintf("%.1f", x.CPUPerRequestUs)
		switch {
		case x.CPURatio() > 0:
			cpu = fmt.Sprintf("%.1f / %.1f (×%.3f)", x.AnchorCPUPerRequestUs, x.CPUPerRequestUs, x.CPURatio())
		case x.CPURatioWithPostgres() > 0:
			cpu = fmt.Sprintf("%.1f / %.1f + PostgreSQL's %.1f (×%.3f; without PostgreSQL's ×%.3f)", x.AnchorCPUPerRequestUs, x.CPUPerRequestUs,
				x.PostgresCPUPerRequestUs, x.CPURatioWithPostgres(), x.ProcessCPURatio())
		case x.AnchorCPUPerRequestUs > 0:
			cpu = fmt.Sprintf("%.1f / %.1f (PostgreSQL's own not measured; ×%.3f without it)", x.AnchorCPUPerRequestUs, x.CPUPerRequestUs, x.ProcessCPURatio())
		}
		if x.Anchor > 0 {
			anchor, ratio = fmt.Sprintf("%.0f", x.Anchor), fmt.Sprintf("%.3f", x.Ratio())
			if x.Pairs > 1 {
				ratio += fmt.Sprintf(" (%.3f–%.3f)", x.RatioMin, x.RatioMax)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.2f | %.2f | %.2f | %s | %s | %s |\n", x.Target, x.Requests, x.Errors, x.PerSecond, x.P50Ms, x.P90Ms, x.P99Ms, anchor, ratio, cpu)
	}
	if r.IngestRatio > 0 {
		fmt.Fprintf(&b, "\nwarp ingests heartbeats at %.0f %% of the no-op handler's rate measured right before it (ratio %.3f, 50 hosts; each warp row is the pair with the median ratio of its no-op/warp pairs).\n", r.IngestRatio*100, r.IngestRatio)
		b.WriteString("A warp row is the server as `warp serve` composes it (connection limits, timeouts, the metrics' and the dashboard's hooks, the expiry job), with an admin token on every request, which the no-op handler is sent too.\n")
		b.WriteString("The CPU column is this process's CPU time per answered request in the same runs, the load generator's included (a PostgreSQL server's only where the row says so): its ×figure is the ratio a machine of constant speed would give, both runs keeping the CPUs as busy.\n")
		if r.PostgresRatio > 0 {
			fmt.Fprintf(&b, "On PostgreSQL (one warp): %.0f %% (ratio %.3f).\n", r.PostgresRatio*100, r.PostgresRatio)
			b.WriteString("On a PostgreSQL server on this machine, its processes' CPU per request (from /proc) is measured too: the ×figure with it is what warp and its database reach sharing the CPUs, the one without it what warp's process alone would give with the database on other machines.\n")
		}
	}

	b.WriteString("\n### Expiry sweep (SQLite)\n\n")
	b.WriteString("| active leases | due per sweep | sweeps | sweep p50 ms | sweep max ms | nothing due ms | tick p50 ms | tick max ms | idle tick ms | load s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Sweep {
		fmt.Fprintf(&b, "| %d | %d | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.1f |\n", x.Active, x.Due, x.Sweeps, x.P50Ms, x.MaxMs, x.IdleMs,
			x.TickP50Ms, x.TickMaxMs, x.TickIdleMs, x.LoadSeconds)
	}
	b.WriteString("\nA tick is what the expiry job runs every interval: the sweep (due leases lapse) and the verdict pass (due leases change verdict, here as many turning silent).\n")
	b.WriteString("\n| active leases | /metrics scrape ms | hosts overview ms | under load: heartbeats/s asked | answered/s | errors | hb p50 ms | hb p99 ms | ticks | tick p50 ms | tick max ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Sweep {
		if u := x.UnderLoad; u != nil {
			fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.0f | %.0f | %d | %.2f | %.2f | %d | %.1f | %.1f |\n", x.Active, x.ScrapeMs, x.HostsMs, u.Rate, u.Achieved, u.Errors, u.P50Ms, u.P99Ms, u.Ticks, u.TickP50Ms, u.TickMaxMs)
		} else {
			fmt.Fprintf(&b, "| %d | %.1f | %.1f | | | | | | | | |\n", x.Active, x.ScrapeMs, x.HostsMs)
		}
	}
	b.WriteString("\nUnder load: a paced generator POSTs v2 heartbeats for the held leases through the HTTP API while a tick runs every second; nothing is due in those ticks, so they show a tick's floor while it shares SQLite's one writer with the heartbeats' group commits.\n")

	b.WriteString("\n### Hook cost: one exec each, one after the other\n\n")
	b.WriteString("| command | n | mean ms | p50 ms | p99 ms | CPU ms |\n|---|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Exec {
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", x.Command, x.N, x.MeanMs, x.P50Ms, x.P99Ms, x.CPUMs)
	}

	if hr := r.HookVsMinimalGo; hr > 0 {
		fmt.Fprintf(&b, "\ngyrum-hook exec'd directly, interleaved with a minimal static Go binary that touches the activity file: ×%.2f that binary (p50; target ≤ ×1.1).\n", hr)
	}
	if hr := r.HookRatio; hr > 0 {
		fmt.Fprintf(&b, "\nThe hook as Claude Code runs it (`/bin/sh -c`, payload on stdin), interleaved with the touch-activity.sh script it replaces, run the same way: ×%.2f the script (p50; target < ×1).\n", hr)
	}

	b.WriteString("\n### Heartbeat loop cost\n\n")
	b.WriteString("| loop | ticks | RSS KiB | its own (RssAnon) KiB | CPU per tick ms |\n|---|---:|---:|---:|---:|\n")
	for _, x := range r.Loop {
		rss := fmt.Sprint(x.RSSKiB)
		if x.CurlRSSKiB > 0 {
			rss = fmt.Sprintf("%d + %d (the curl of each tick)", x.RSSKiB, x.CurlRSSKiB)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %.3f |\n", x.Loop, x.Ticks, rss, x.AnonKiB, x.CPUPerTickMs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
