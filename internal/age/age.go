// Package age writes a duration the one way warp's and gyrum's command
// lines and the dashboard's pages write it (issue 46: there were two, and
// Go's own "12h0m0s" on the pages): whole seconds under a minute ("45s"),
// minutes and seconds under an hour ("3m12s"), hours and minutes under a
// day ("5h07m"), days and hours beyond ("3d04h"). The dashboard's script
// (assets/live.js, fmtDur) writes the same. A leaf: it imports nothing of
// the module, so the agent side uses it too.
package age

import (
	"fmt"
	"time"
)

// Format writes d; a negative d gets a leading "-".
func Format(d time.Duration) string {
	if d < 0 {
		return "-" + Format(-d)
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	case d < time.Hour:
		d = d.Truncate(time.Second)
		return fmt.Sprintf("%dm%02ds", int64(d/time.Minute), int64(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		d = d.Truncate(time.Minute)
		return fmt.Sprintf("%dh%02dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute))
	}
	d = d.Truncate(time.Hour)
	return fmt.Sprintf("%dd%02dh", int64(d/(24*time.Hour)), int64(d%(24*time.Hour)/time.Hour))
}

// Ago writes t relative to now: "3m12s ago", "in 4m00s", "-" for the zero
// time.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := now.Sub(t); d >= 0 {
		return Format(d) + " ago"
	}
	return "in " + Format(t.Sub(now))
}
