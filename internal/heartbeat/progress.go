package heartbeat

import (
	"context"
	"errors"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/progress"
)

// progressWatch gathers the loop's progress evidence (issue 44): the
// worktree's states, the calls the hook fingerprinted, the agent's notes.
type progressWatch struct {
	tree    progress.Worktree
	states  *progress.Tracker
	noGit   bool // the worktree is not a git worktree: no states
	claimed time.Time
	last    time.Time // the latest progress; the claim until any
	noteAt  time.Time // the latest note seen
	callsAt time.Time // the latest call record read
	// results holds each call's latest result, so a call whose result
	// differs from its previous run's is progress.
	results map[[8]byte][8]byte
	loop    *client.LoopReport
}

// maxResults bounds progressWatch.results: past it the map starts over
// (a lease that made that many distinct calls is not looping).
const maxResults = 4096

func newProgressWatch(worktree string, claimed time.Time) *progressWatch {
	return &progressWatch{tree: progress.Worktree{Dir: worktree}, states: progress.NewTracker(),
		claimed: claimed, last: claimed, callsAt: claimed, results: map[[8]byte][8]byte{}}
}

// observe reads the evidence once (a tick) at now and updates the latest
// progress and the loop the latest calls make.
func (w *progressWatch) observe(ctx context.Context, d gyrumdir.Dir, now time.Time) error {
	var errs []error
	first := w.states.Last().IsZero()
	if !w.noGit {
		s, err := w.tree.State(ctx)
		switch {
		case errors.Is(err, progress.ErrNotGit):
			w.noGit = true
		case err != nil:
			errs = append(errs, err)
		case w.states.Observe(s, now) && !first:
			// The first state is where the lease starts, not progress.
			w.progressed(now)
		}
	}
	// `gyrum note` leaves the agent's latest note in note.json: one newer
	// than the last one seen is progress (a missing or torn one is none).
	if n, err := d.ReadNote(); err == nil {
		if n.At.After(w.noteAt) {
			if !w.noteAt.IsZero() || n.At.After(w.last) {
				w.progressed(earlier(n.At, now))
			}
			w.noteAt = n.At
		}
	}
	recs, err := d.LastCalls(progress.Window * 4)
	if err != nil {
		errs = append(errs, err)
	}
	var window []gyrumdir.CallRecord
	for _, r := range recs {
		if r.At.Before(w.claimed) {
			continue // before the claim, or an earlier lease's
		}
		window = append(window, r)
		if !r.At.After(w.callsAt) {
			continue // read at an earlier tick
		}
		if len(w.results) >= maxResults {
			clear(w.results)
		}
		if prev, ok := w.results[r.Call]; ok && prev != r.Result {
			w.progressed(earlier(r.At, now))
		}
		w.results[r.Call] = r.Result
		w.callsAt = r.At
	}
	w.loop = nil
	if loop, ok := progress.Detect(calls(window), progress.DefaultLimits); ok {
		w.loop = &client.LoopReport{Label: loop.Label, Count: loop.Count, Error: loop.Error}
	}
	return errors.Join(errs...)
}

func (w *progressWatch) progressed(at time.Time) {
	if at.After(w.last) {
		w.last = at
	}
}

// age is the time since the latest progress, at now.
func (w *progressWatch) age(now time.Time) time.Duration { return max(now.Sub(w.last), 0) }

// SpinningNudge is what the agent is told when warp says its lease makes
// no progress.
func SpinningNudge(ticket string, age time.Duration) string {
	return "gyrum: no progress on ticket " + ticket + " for " + age.Round(time.Minute).String() +
		": no new change in the worktree, no commit, no call with a new result, no note. " +
		"Change approach; if stuck, `gyrum note` what you tried and `gyrum release`."
}

// earlier returns the earlier of a and b: evidence dated in the future
// (a clock ahead) counts as now.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// calls turns the records of the calls file into progress.Calls.
func calls(recs []gyrumdir.CallRecord) []progress.Call {
	out := make([]progress.Call, len(recs))
	for i, r := range recs {
		out[i] = progress.Call{Call: r.Call, Result: r.Result, Failed: r.Failed, Label: r.Label, Error: r.Error}
	}
	return out
}
