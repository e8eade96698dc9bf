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
	b.WriteString("| target | requests | errors | req/s | p50 ms | p90 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Ingest {
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.2f | %.2f | %.2f |\n", x.Target, x.Requests, x.Errors, x.PerSecond, x.P50Ms, x.P90Ms, x.P99Ms)
	}
	if r.IngestRatio > 0 {
		fmt.Fprintf(&b, "\nwarp ingests heartbeats at %.0f %% of the no-op handler's rate (ratio %.3f).\n", r.IngestRatio*100, r.IngestRatio)
	}

	b.WriteString("\n### Expiry sweep (SQLite)\n\n")
	b.WriteString("| active leases | due per sweep | sweeps | sweep p50 ms | sweep max ms | nothing due ms | load s |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Sweep {
		fmt.Fprintf(&b, "| %d | %d | %d | %.1f | %.1f | %.2f | %.1f |\n", x.Active, x.Due, x.Sweeps, x.P50Ms, x.MaxMs, x.IdleMs, x.LoadSeconds)
	}

	b.WriteString("\n### Hook cost: one exec each, one after the other\n\n")
	b.WriteString("| command | n | mean ms | p50 ms | p99 ms | CPU ms |\n|---|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Exec {
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", x.Command, x.N, x.MeanMs, x.P50Ms, x.P99Ms, x.CPUMs)
	}

	b.WriteString("\n### Heartbeat loop cost\n\n")
	b.WriteString("| loop | ticks | RSS KiB | CPU per tick ms |\n|---|---:|---:|---:|\n")
	for _, x := range r.Loop {
		rss := fmt.Sprint(x.RSSKiB)
		if x.CurlRSSKiB > 0 {
			rss = fmt.Sprintf("%d + %d (the curl of each tick)", x.RSSKiB, x.CurlRSSKiB)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.3f |\n", x.Loop, x.Ticks, rss, x.CPUPerTickMs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
