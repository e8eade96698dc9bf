package gyrumcli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

func (a *App) waitCommand() *cobra.Command {
	var dir, reason string
	var dur time.Duration
	var done, asJSON bool
	cmd := &cobra.Command{
		Use:   "wait --for D --reason R [--dir D] [--json] | wait --done",
		Short: "Declare a long step that counts as activity (capped by the in-flight cap)",
		Long: `wait declares that the agent is busy with something no tool call shows — waiting
for CI, a review, a long build in the background — so the loop keeps the lease
alive although last-activity grows old. The declaration (.gyrum/wait.json)
counts as activity from now until --for has passed, never longer than
HEARTBEAT_INFLIGHT_MAX_SECS (default 7200 s); 'gyrum wait --done' ends it
early and touches last-activity. The command returns at once.`,
		Example: `  gyrum wait --for 45m --reason "CI on PR 12"
  gyrum wait --done
  gyrum wait --for 2h --reason review --json   # {"reason": ..., "declared_at": ..., "until": ...}`,
		Args: clikit.NoArgs("give the length and the reason as flags: gyrum wait --for 45m --reason \"CI queue\""),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			d, err := a.findDir(dir)
			if err != nil {
				return err
			}
			if done {
				if cmd.Flags().Changed("for") || reason != "" {
					return clikit.Usagef("--done takes no --for or --reason")
				}
				return a.endWait(d, asJSON)
			}
			return a.declareWait(d, dur, reason, asJSON)
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().DurationVar(&dur, "for", 0, "how long the step takes (Go duration: 45m, 1h30m)")
	cmd.Flags().StringVar(&reason, "reason", "", "what the agent waits for (shown as in_flight)")
	cmd.Flags().BoolVar(&done, "done", false, "end the declared wait now")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the declaration as JSON ({\"ended\": true} with --done)")
	return cmd
}

// endWait ends the declared wait of d now (gyrum wait --done) and
// touches last-activity.
func (a *App) endWait(d gyrumdir.Dir, asJSON bool) error {
	if err := d.RemoveWait(); err != nil {
		return err
	}
	if err := d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceWait, Event: "done", At: a.now()}); err != nil {
		return err
	}
	if asJSON {
		return clikit.PrintJSON(a.Stdout, map[string]bool{"ended": true})
	}
	_, err := fmt.Fprintln(a.Stdout, "wait ended")
	return err
}

// declareWait declares a wait of dur (capped by the in-flight cap) for
// reason in d, which must hold a lease.
func (a *App) declareWait(d gyrumdir.Dir, dur time.Duration, reason string, asJSON bool) error {
	if dur <= 0 {
		return clikit.Usagef("--for: give a positive duration, such as 45m")
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return clikit.Usagef("--reason: say what the agent waits for")
	}
	if len(reason) > 200 {
		return clikit.Usagef("--reason is %d bytes, at most 200", len(reason))
	}
	if !d.HasLease() {
		return clikit.Usagef("%s holds no lease: nothing to keep alive", d.Worktree)
	}
	limits, err := a.durations()
	if err != nil {
		return err
	}
	if dur > limits.InFlightMax {
		fmt.Fprintf(a.Stderr, "gyrum: --for %s is longer than the in-flight cap %s: the wait counts for %s only\n",
			dur, limits.InFlightMax, limits.InFlightMax)
		dur = limits.InFlightMax
	}
	now := a.now()
	w := gyrumdir.Wait{Reason: reason, DeclaredAt: now, Until: now.Add(dur)}
	if err := d.WriteWait(w); err != nil {
		return err
	}
	if asJSON {
		return clikit.PrintJSON(a.Stdout, w)
	}
	_, err = fmt.Fprintf(a.Stdout, "waiting for %s until %s (%s)\n", reason, now.Add(dur).Format(time.RFC3339), dur)
	return err
}
