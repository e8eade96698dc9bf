package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Observation is what the run saw of one agent, in wall-clock time. The
// report is computed from observations alone (Summarize), so its rules are
// tested without processes.
type Observation struct {
	Plan      AgentPlan
	StartErr  string
	StartedAt time.Time
	FailedAt  time.Time // zero: no failure happened (healthy, or it could not be injected)
	// LastHookEnd is when the last hook the agent started while alive
	// finished: evidence of activity may be that late.
	LastHookEnd time.Time
	DeletedAt   time.Time
	// ReleasedAt is when an operator released the lease (operator-released).
	ReleasedAt  time.Time
	LapsedAt    time.Time // first lapse of the agent's lease; zero when none
	LapseReason string
	LeaseState  warp.LeaseState // at the end of the scenario
	// The lease's times at the end (zero when never claimed).
	LastActivityAt, LastHeartbeatAt, ExpiresAt time.Time
	Verdict                                    warp.Verdict // at the end
	Heartbeats                                 []Received
	LoopsAtEnd                                 int
	LoopsAfterWD                               int // after the final watchdog sweep; -1 without --watchdog
	WatchedAlive                               bool
	HookCalls                                  int
	HookFailures                               int
	HookProblem                                string
	// PostStarts are the starts of the agent's Post hooks; ToldAt the start
	// of the first whose output told it its lease had ended (zero: never);
	// Notices counts such outputs.
	PostStarts []time.Time
	ToldAt     time.Time
	Notices    int
	// The work of a failed agent (issue 45): the edits its tool calls
	// left uncommitted in its worktree; of those, the ones no attempt's
	// snapshot holds byte for byte, and among them the ones that went
	// with a worktree deleted before its loop saved it. Snapshot is the
	// state of its attempt's snapshot ("" none reported).
	WorkEdits, WorkLost, WorkDeleted int
	Snapshot                         string
	// LoopNotices counts the hook's outputs that told the agent it loops.
	LoopNotices int
	// SpinNotices counts those that told it it makes no progress.
	SpinNotices int
}

// observe measures the outcome at the end of the scenario: leases and
// events from the server, heartbeats from the counter, loops from the
// registry and the process table; then, with --watchdog, runs the final
// watchdog sweep and counts loops again.
func (r *run) observe(ctx context.Context) ([]Observation, error) {
	end := time.Now()
	loops := r.liveLoops()
	srv := r.server()
	hbs := r.count.byTicket()
	obs := make([]Observation, len(r.agents))
	for i, a := range r.agents {
		o := Observation{
			Plan: a.plan, StartedAt: a.startedAt, FailedAt: a.failedAt, DeletedAt: a.deletedAt, LastHookEnd: a.lastHookEnd,
			Heartbeats: hbs[a.plan.Ticket], LoopsAtEnd: len(loops[a.plan.Name]), LoopsAfterWD: -1,
			WatchedAlive: a.watchedAlive(), HookCalls: a.hookCalls, HookFailures: a.hookFailures, HookProblem: a.hookProblem,
			ReleasedAt: a.releasedAt, PostStarts: a.postStarts, ToldAt: a.toldAt, Notices: a.notices,
			LoopNotices: a.loopNotices, SpinNotices: a.spinNotices,
		}
		if a.startErr != nil {
			o.StartErr = a.startErr.Error()
		}
		view, err := srv.svc.Ticket(ctx, a.plan.Ticket)
		if err != nil {
			return nil, fmt.Errorf("read ticket %s: %w", a.plan.Ticket, err)
		}
		if view.Lease != nil {
			o.LeaseState = view.Lease.State
			o.LastActivityAt, o.LastHeartbeatAt, o.ExpiresAt = view.Lease.LastActivityAt, view.Lease.LastHeartbeatAt, view.Lease.ExpiresAt
			o.Verdict = srv.svc.Policy().Verdict(*view.Lease, end)
		}
		if !a.failedAt.IsZero() {
			o.WorkEdits, o.WorkLost, o.WorkDeleted, o.Snapshot = a.work(ctx, view.Attempts)
		}
		events, err := srv.svc.Events(ctx, a.plan.Ticket, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("read events of %s: %w", a.plan.Ticket, err)
		}
		for _, e := range events {
			if e.Kind == warp.EventLapsed && o.LapsedAt.IsZero() {
				o.LapsedAt = e.At
				if d, ok := e.Data.(warp.LapsedData); ok {
					o.LapseReason = d.Reason
				}
			}
		}
		obs[i] = o
	}
	if r.cfg.Watchdog {
		r.finalWatchdog(ctx)
		after := r.liveLoops()
		for i, a := range r.agents {
			obs[i].LoopsAfterWD = len(after[a.plan.Name])
		}
	}
	return obs, nil
}

// work judges a failed agent's edits against the snapshots of its
// ticket's attempts (newest first): each edit must be in one, byte for
// byte, in the agent's repository — where refs/gyrum/ lives, so a saved
// snapshot outlives the worktree. An edit missing from every snapshot is
// lost, or deleted when the worktree was deleted (the loop may not have
// saved it before: the deletion follows the kill by 30 product seconds).
func (a *agent) work(ctx context.Context, atts []warp.Attempt) (edits, lost, deleted int, state string) {
	a.mu.Lock()
	es := append([]edit(nil), a.edits...)
	gone := !a.deletedAt.IsZero()
	a.mu.Unlock()
	var commits []string
	for _, at := range atts {
		sn := at.Record.Snapshot
		if state == "" {
			state = sn.State
		}
		if sn.State == warp.SnapshotSaved {
			commits = append(commits, sn.Commit)
		}
	}
	for _, e := range es {
		found := false
		for _, c := range commits {
			if got, err := simGit(ctx, a.repo, "cat-file", "blob", c+":"+e.path); err == nil && got+"\n" == e.content {
				found = true
				break
			}
		}
		switch {
		case found:
		case gone:
			deleted++
		default:
			lost++
		}
	}
	return len(es), lost, deleted, state
}

// summaryInput returns everything Summarize needs besides the observations.
func (r *run) summaryInput(end time.Time) RunInfo {
	steady := r.t0
	for _, a := range r.agents {
		if a.startedAt.After(steady) {
			steady = a.startedAt
		}
	}
	info := RunInfo{
		Scenario: r.plan.Scenario, Client: r.cfg.Client, Mode: r.cfg.Mode, Watchdog: r.cfg.Watchdog,
		TimeScale: r.scale, Timing: r.cfg.Timing, Start: r.t0, End: end, PlannedEnd: r.plan.End,
		SteadyFrom: steady, Injection: r.timing.since(seriesInjection, steady), Hooks: r.timing.since(seriesHook, steady),
		JobBursts:     r.timing.since(seriesJob, steady),
		LagTolerance:  r.cfg.LagTolerance,
		JobCPUPercent: round1(100 * r.job.Duty), BackgroundJobs: r.plan.BackgroundJobs(),
	}
	r.mu.Lock()
	for _, rs := range r.restarts {
		info.Restarts = append(info.Restarts, Restart{StoppedAt: rs.StoppedAt, StartedAt: rs.StartedAt})
	}
	r.mu.Unlock()
	for _, w := range r.wdRuns {
		info.WatchdogRuns++
		if w.Err != "" {
			info.WatchdogErrors = append(info.WatchdogErrors, w.Err)
		}
	}
	return info
}

func (r *run) report(obs []Observation) *Report {
	return Summarize(r.summaryInput(r.at(r.plan.End)), obs)
}
