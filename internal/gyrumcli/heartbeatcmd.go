package gyrumcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/age"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

func (a *App) heartbeatCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "heartbeat",
		Short: "Run, inspect or stop a worktree's heartbeat loop",
		Example: `  gyrum heartbeat status
  gyrum heartbeat kill --dir ../wt-T-42`,
	}
	cmd.AddCommand(a.heartbeatRunCommand(), a.heartbeatStatusCommand(), a.heartbeatKillCommand(), a.heartbeatAskCommand())
	return cmd
}

func (a *App) heartbeatRunCommand() *cobra.Command {
	var dir string
	var schema int
	cmd := &cobra.Command{
		Use:     "run [--dir D] [--schema-version 1|2]",
		Short:   "The activity-gated heartbeat loop (start-work spawns it)",
		Example: `  nohup gyrum heartbeat run --dir ../wt-T-42 >/dev/null 2>&1 &   # restart a loop by hand`,
		Long: `heartbeat run keeps the lease of the worktree's .gyrum/lease.json alive while the
watched agent is alive and working. start-work spawns it detached; running it
by hand is for debugging. It POSTs once at start, then every
HEARTBEAT_INTERVAL_SECS (default 240, ±10 % jitter):

  watched process (heartbeat.parent.pid) gone or its pid recycled
                                 → one exit report "parent-exited", exit
  .gyrum/lease.json gone         → one exit report "worktree-gone", exit
  activity older than HEARTBEAT_ACTIVITY_STALENESS_SECS (default 900)
                                 → POST a stale report ("stale": true: the
                                   verdict stays "stalled", the lease is not
                                   extended)
  otherwise                      → POST schema_version 2 with activity_age_s

Activity age is the time since the latest evidence of work: .gyrum/last-activity
(the agent's last completed tool call); a tool call in .gyrum/in-flight/ (0 while
a process the agent started with the call runs, else counted from its start);
a 'gyrum wait'; CPU used by the agent's own processes, foreground or background
(at least 2 % of a core between two samples; never longer than
HEARTBEAT_INFLIGHT_MAX_SECS, default 7200, after its last tool call); the claim.
Answers 404, 409 and 410 end the loop after leaving the agent a notice
(.gyrum/lease-ended.json, shown by the hook on its next tool call); network
errors and 5xx are retried with a jittered backoff of up to four intervals,
never longer than the server's max_retry_gap_s; unsupported_schema_version
switches to v1 bodies. SIGTERM ends it. It logs to .gyrum/heartbeat.log (rotated at 256 KiB) and records its
latest outcome in .gyrum/heartbeat.state.

--schema-version 1 runs a pre-ADR loop instead: a v1 body every interval,
with no process or activity check, no exit report, answers ignored — an
unmigrated host, for mixed fleets and the simulator. Only SIGTERM (release,
complete-pr, heartbeat kill, the watchdog) ends it.`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if schema != 1 && schema != 2 {
				return clikit.Usagef("--schema-version %d: want 1 or 2", schema)
			}
			return a.heartbeatRun(cmd.Context(), dir, schema)
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	clikit.IntVar(cmd.Flags(), &schema, "schema-version", 2, "2: activity-gated; 1: the pre-ADR v1 loop")
	return cmd
}

func (a *App) heartbeatRun(ctx context.Context, dirFlag string, schema int) error {
	d, err := a.findDir(dirFlag)
	if err != nil {
		return err
	}
	err = heartbeat.Detached(ctx, d, schema, a.getenv)
	if errors.Is(err, heartbeat.ErrSettings) {
		return clikit.Usagef("%v", err)
	}
	return err
}

// LoopStatus is what heartbeat status and status report for one worktree.
type LoopStatus struct {
	Dir string `json:"dir"`
	// Registered: the loop is in the registry ($GYRUM_HOME/run); false for
	// a lease status lists from $GYRUM_HOME/worktrees whose loop is gone.
	Registered bool   `json:"registered"`
	Ticket     string `json:"ticket,omitempty"`
	Epoch      int64  `json:"epoch,omitempty"`
	WarpURL    string `json:"warp_url,omitempty"`
	LeaseErr   string `json:"lease_error,omitempty"`
	LoopPID    int    `json:"loop_pid,omitempty"`
	LoopAlive  bool   `json:"loop_alive"`
	ParentPID  int    `json:"parent_pid,omitempty"`
	ParentOK   bool   `json:"parent_alive"`
	// Watched and WatchedHow are the watched process's name and how
	// start-work chose it (lease.json; empty from an older gyrum).
	Watched    string              `json:"watched,omitempty"`
	WatchedHow string              `json:"watched_how,omitempty"`
	ActivityS  *float64            `json:"activity_age_s,omitempty"`
	InFlight   string              `json:"in_flight,omitempty"`
	LastPOST   *time.Time          `json:"last_post_at,omitempty"`
	Outcome    string              `json:"last_outcome,omitempty"`
	State      *gyrumdir.LoopState `json:"state,omitempty"`
	// Problem says why the loop cannot be trusted to write (a full disk,
	// a state that stopped moving: gyrumdir.Dir.WriteTrouble); empty when
	// nothing says so.
	Problem string `json:"problem,omitempty"`
	// Gone says what ended the worktree's work when the watched agent
	// exited or the loop is gone, and Next what to do about it; both
	// empty while the loop and the agent live.
	Gone string `json:"gone,omitempty"`
	Next string `json:"next,omitempty"`
}

// whatNext fills s.Gone and s.Next for a lease whose agent exited (no loop
// can bring it back: release the ticket, or start the work again from a
// new agent session) or whose loop is gone while its agent lives
// (restart the loop, or release).
func whatNext(s *LoopStatus) {
	if s.Ticket == "" {
		return
	}
	q := shellquote.Quote(s.Dir)
	release := "gyrum release --dir " + q
	switch {
	case s.ParentPID != 0 && !s.ParentOK:
		s.Gone = fmt.Sprintf("the agent it watched (pid %d) has exited; no heartbeat loop can bring it back", s.ParentPID)
		s.Next = release + " hands the ticket back and clears the worktree (a lease warp already ended counts as released); " +
			"to go on with the work, start a new agent session there and run gyrum start-work " + shellquote.Quote(s.Ticket) + " from it"
	case s.LoopPID != 0 && !s.LoopAlive || s.LoopPID == 0 && s.ParentOK:
		s.Gone = "its heartbeat loop is gone while the agent lives: nothing extends the lease"
		s.Next = "restart the loop: nohup gyrum heartbeat run --dir " + q + " >/dev/null 2>&1 &, or hand the ticket back: " + release
	}
}

// inspect reads everything gyrum knows locally about worktree d.
func (a *App) inspect(d gyrumdir.Dir, loopPID int) LoopStatus {
	s := LoopStatus{Dir: d.Worktree, Problem: d.WriteTrouble(a.now())}
	if l, err := d.ReadLease(); err == nil {
		s.Ticket, s.Epoch, s.WarpURL = l.Ticket, l.Epoch, l.WarpURL
		s.Watched, s.WatchedHow = l.Watched, l.WatchedHow
	} else {
		s.LeaseErr = err.Error()
	}
	if id, err := d.ReadPID(gyrumdir.LoopPIDFile); err == nil {
		s.LoopPID, s.LoopAlive = id.PID, id.Alive()
	} else if loopPID != 0 {
		s.LoopPID = loopPID
	}
	if id, err := d.ReadPID(gyrumdir.ParentPIDFile); err == nil {
		s.ParentPID, s.ParentOK = id.PID, id.Alive()
	}
	dur, _ := heartbeat.DurationsFromEnv(a.getenv)
	if dur.InFlightMax == 0 {
		dur.InFlightMax = heartbeat.DefaultInFlightMax
	}
	st, stErr := d.ReadState()
	if stErr == nil && s.LoopAlive && !st.UpdatedAt.IsZero() {
		// The running loop's own judgement (backed calls, background CPU),
		// aged since its last tick unless something is in flight.
		age := st.ActivityAgeS
		if st.InFlight == "" {
			age += max(a.now().Sub(st.UpdatedAt), 0).Seconds()
		}
		s.ActivityS, s.InFlight = &age, st.InFlight
	} else if act, err := d.Activity(a.now(), dur.InFlightMax); err == nil {
		age := act.Age.Seconds()
		s.ActivityS, s.InFlight = &age, act.InFlight
	}
	if stErr == nil {
		s.State, s.Outcome = &st, st.LastOutcome
		if !st.LastPOSTAt.IsZero() {
			t := st.LastPOSTAt
			s.LastPOST = &t
		}
	}
	return s
}

func (a *App) heartbeatStatusCommand() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--dir D] [--json]",
		Short: "Show the worktree's lease, loop, watched process, activity and last POST",
		Example: `  gyrum heartbeat status
  gyrum heartbeat status --dir ../wt-T-42 --json`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			d, err := a.findDir(dir)
			if err != nil {
				return err
			}
			s := a.inspect(d, 0)
			if reg, err := a.registry(); err == nil && s.LoopPID != 0 {
				e, err := reg.Read(s.LoopPID)
				s.Registered = err == nil && gyrumdir.SamePath(e.Dir, d.Worktree)
			}
			whatNext(&s)
			if asJSON {
				return clikit.PrintJSON(a.Stdout, s)
			}
			return a.printStatusLong(a.Stdout, s)
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *App) printStatusLong(w io.Writer, s LoopStatus) error {
	lease := fmt.Sprintf("%s epoch %d (%s)", s.Ticket, s.Epoch, s.WarpURL)
	if s.LeaseErr != "" {
		lease = "none: " + s.LeaseErr
	}
	c := clikit.Clean // each field on its line, whatever the files and the server said
	_, err := fmt.Fprintf(w, "dir       %s\nlease     %s\nloop      %s\nwatching  %s\nactivity  %s\nlast POST %s\n",
		c(s.Dir), c(lease), pidState(s.LoopPID, s.LoopAlive), c(watchedText(s)),
		c(activityText(s)), c(a.postText(s)))
	if err == nil && s.Problem != "" {
		_, err = fmt.Fprintf(w, "problem   %s\n", c(s.Problem))
	}
	if err == nil && s.Next != "" {
		_, err = fmt.Fprintf(w, "gone      %s\nnext      %s\n", c(s.Gone), c(s.Next))
	}
	return err
}

func pidState(pid int, alive bool) string {
	switch {
	case pid == 0:
		return "none"
	case alive:
		return fmt.Sprintf("pid %d alive", pid)
	}
	return fmt.Sprintf("pid %d exited", pid)
}

func activityText(s LoopStatus) string {
	if s.ActivityS == nil {
		return "unknown"
	}
	if s.InFlight != "" {
		return "0s (in flight: " + s.InFlight + ")"
	}
	return age.Format(time.Duration(*s.ActivityS*float64(time.Second))) + " ago"
}

func (a *App) postText(s LoopStatus) string {
	if s.LastPOST == nil {
		if s.Outcome != "" {
			return "never (" + s.Outcome + ")"
		}
		return "never"
	}
	return fmt.Sprintf("%s ago (%s)", age.Format(max(a.now().Sub(*s.LastPOST), 0)), s.Outcome)
}

func (a *App) heartbeatKillCommand() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "kill [--dir D] [--json]",
		Short: "Stop the worktree's loop (identity checked, SIGTERM, SIGKILL after 5 s); the lease stays",
		Example: `  gyrum heartbeat kill
  gyrum heartbeat kill --dir ../wt-T-42 --json   # {"pid": 4242, "result": "terminated"}`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			d, err := a.findDir(dir)
			if err != nil {
				return err
			}
			st, err := a.stopLoop(cmd.Context(), d)
			if err != nil {
				return err
			}
			if asJSON {
				return clikit.PrintJSON(a.Stdout, st)
			}
			_, err = fmt.Fprintln(a.Stdout, st)
			return err
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {pid, result} (result: none, not running, terminated, killed)")
	return cmd
}

// askTimeout bounds heartbeat ask's question to warp.
const askTimeout = 2 * time.Second

// askLease asks warp whether the lease of d's lease.json has ended: the
// lease, the notice for its agent and whether it ended. The token goes
// only to the warp WARP_URL names (heartbeat.SameServer); the lease's
// secret always goes.
func (a *App) askLease(ctx context.Context, d gyrumdir.Dir) (gyrumdir.Lease, gyrumdir.LeaseEnded, bool, error) {
	l, err := d.ReadLease()
	if err != nil {
		return l, gyrumdir.LeaseEnded{}, false, err
	}
	url := firstOf(l.WarpURL, a.getenv("WARP_URL"), client.DefaultURL)
	token := a.getenv("WARP_TOKEN")
	if token != "" && !heartbeat.SameServer(url, a.getenv("WARP_URL")) {
		token = ""
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	n, ended, err := heartbeat.AskEnd(ctx, heartbeat.NewAPI(url, token, l.LeaseSecret, askTimeout), l, a.now())
	return l, n, ended, err
}

// askEnd is the hook's Ask in the gyrum binary (touch-activity): in
// process, silent.
func (a *App) askEnd(d gyrumdir.Dir) (gyrumdir.LeaseEnded, bool) {
	_, n, ended, err := a.askLease(context.Background(), d)
	return n, ended && err == nil
}

// AskResult is `gyrum heartbeat ask --json`.
type AskResult struct {
	Ticket string `json:"ticket"`
	Epoch  int64  `json:"epoch"`
	Ended  bool   `json:"ended"`
	// Notice is what the agent is told when the lease ended.
	Notice  *gyrumdir.LeaseEnded `json:"notice,omitempty"`
	Message string               `json:"message,omitempty"`
}

func (a *App) heartbeatAskCommand() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ask [--dir D] [--json]",
		Short: "Ask warp whether the worktree's lease still holds (what the hook asks when the loop is silent)",
		Long: `Ask warp whether the lease in the worktree's lease.json still holds, and if not, how it
ended, as the agent would be told. The hook asks this itself, at most once a minute, when the
worktree's loop is gone or its state stopped moving (a full disk) and no notice waits.
Exit 0 whether the lease holds or not; 1 when warp cannot be asked.`,
		Example: `  gyrum heartbeat ask
  gyrum heartbeat ask --dir ../wt-T-42 --json   # {"ticket":"T-42","epoch":3,"ended":false}`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			d, err := a.findDir(dir)
			if err != nil {
				return err
			}
			l, n, ended, err := a.askLease(cmd.Context(), d)
			if err != nil {
				return fmt.Errorf("ask warp about the lease of %s: %w", d.Worktree, err)
			}
			r := AskResult{Ticket: l.Ticket, Epoch: l.Epoch, Ended: ended}
			if ended {
				r.Notice, r.Message = &n, n.Message(d.Worktree)
			}
			if asJSON {
				return clikit.PrintJSON(a.Stdout, r)
			}
			if !ended {
				_, err = fmt.Fprintf(a.Stdout, "%s epoch %d: held\n", clikit.Clean(l.Ticket), l.Epoch)
				return err
			}
			_, err = fmt.Fprintln(a.Stdout, clikit.Clean(r.Message))
			return err
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
