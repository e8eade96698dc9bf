// Package heartbeat is the activity-gated heartbeat loop, `gyrum heartbeat
// run` (DESIGN.md section 4, "The loop").
//
// A loop belongs to one worktree and one lease. It POSTs once at start,
// then every interval (±10 % jitter) it checks, in order:
//
//  1. the watched agent process (heartbeat.parent.pid, pid and start time)
//     is alive — else it sends one exit report "parent-exited" and exits;
//  2. .gyrum/lease.json is still there — else one exit report
//     "worktree-gone" and exit (a lease.json naming another lease means a
//     newer start-work took over the worktree: exit without a report);
//  3. the activity age (gyrumdir.Dir.Activity: 0 while a tool call or a
//     declared wait runs and is younger than the in-flight cap) is within
//     the staleness limit — else it skips this POST;
//
// and then POSTs a schema_version 2 heartbeat carrying activity_age_s,
// in_flight and the hook health: hook_seen (has the agent's hook fired
// since the loop started — the hook-event counter moved, or last-activity
// shows a hook record or an unexplained touch newer than the start) and
// hook_events (hook runs counted since the previous acknowledged POST; a
// failed POST's count is sent again). Answers 404, 409 and 410 end the loop quietly; network errors
// and 5xx keep it running with a jittered backoff of up to four intervals;
// unsupported_schema_version switches it to the v1 body (all the checks
// stay) for the rest of its life. Cancelling the context (SIGTERM) ends it.
// On every exit it removes heartbeat.pid and its registry entry when they
// still name it.
//
// SchemaVersion 1 runs the pre-ADR loop instead, for mixed fleets and the
// simulator: a v1 body every interval, no process or activity check, no
// exit report, answers ignored — exactly what an unmigrated host does. It
// still registers, so release, complete-pr and the watchdog can reap it.
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Exit says why a loop ended.
type Exit string

// Reasons a loop ends. The first two are also sent as exit reports.
const (
	ExitParentExited Exit = warp.ExitParentExited // the watched process is gone or its pid recycled
	ExitWorktreeGone Exit = warp.ExitWorktreeGone // lease.json (or the whole worktree) is gone
	ExitLeaseEnded   Exit = "lease-ended"         // 410: completed, released or lapsed
	ExitStaleEpoch   Exit = "stale-epoch"         // 409: someone else holds the ticket now
	ExitNotFound     Exit = "not-found"           // 404: the server does not know the ticket
	ExitSuperseded   Exit = "superseded"          // lease.json now names another lease
	ExitSignal       Exit = "signal"              // the context ended (SIGTERM)
)

// ErrAlreadyRunning reports a live loop already registered for the worktree.
var ErrAlreadyRunning = errors.New("a heartbeat loop already runs for this worktree")

// Config configures a Loop.
type Config struct {
	// Dir is the worktree's .gyrum/; it must hold lease.json and, for a v2
	// loop, heartbeat.parent.pid.
	Dir gyrumdir.Dir
	// Registry is $GYRUM_HOME/run.
	Registry gyrumdir.Registry
	// Token authenticates to warp (WARP_TOKEN); none when empty.
	Token string
	// Durations: interval, staleness, in-flight cap. Zero fields take the defaults.
	Durations Durations
	// Jitter is the fraction each wait varies by; 0 means DefaultJitter,
	// negative means none.
	Jitter float64
	// SchemaVersion is 2 (the default) or 1 (the pre-ADR loop).
	SchemaVersion int
	// HTTPClient sends the heartbeats; one is made when nil (timeout: the
	// interval, within 2..30 s).
	HTTPClient *http.Client
	// Self is the loop's own identity; proc.Self() when zero.
	Self proc.Identity
	// Now is the clock (time.Now when nil); Sleep waits d or until ctx
	// ends (a timer when nil); Rand returns [0,1) (math/rand/v2 when nil).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
	// Logger receives the loop's log; discarded when nil.
	Logger *slog.Logger
}

// Loop is one heartbeat loop. Use New, then Run.
type Loop struct {
	cfg    Config
	dir    gyrumdir.Dir
	lease  gyrumdir.Lease
	parent proc.Identity
	client *httpapi.Client
	log    *slog.Logger
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	rand   func() float64

	legacy   bool // SchemaVersion 1: the pre-ADR loop
	v1Body   bool // fell back to v1 bodies after unsupported_schema_version
	failures int  // consecutive failed POSTs
	stale    bool // the previous tick skipped for staleness
	state    gyrumdir.LoopState

	// Hook health (issue 8): when the loop started, the hook-event counter,
	// whether the hook has fired since the start, and the events counted
	// but not yet acknowledged by a 200 (they are sent again after a
	// failed POST, so the server's sum loses none).
	startedAt   time.Time
	hooks       *gyrumdir.HookCounter
	hookSeen    bool
	hookPending int64
}

// New checks cfg, reads the lease and the watched identity, and returns a
// loop ready to Run.
func New(cfg Config) (*Loop, error) {
	if cfg.Dir.Path == "" {
		return nil, errors.New("heartbeat: no .gyrum directory")
	}
	def := Durations{DefaultInterval, DefaultStaleness, DefaultInFlightMax}
	if cfg.Durations.Interval <= 0 {
		cfg.Durations.Interval = def.Interval
	}
	if cfg.Durations.Staleness <= 0 {
		cfg.Durations.Staleness = def.Staleness
	}
	if cfg.Durations.InFlightMax <= 0 {
		cfg.Durations.InFlightMax = def.InFlightMax
	}
	switch {
	case cfg.Jitter == 0:
		cfg.Jitter = DefaultJitter
	case cfg.Jitter < 0:
		cfg.Jitter = 0
	case cfg.Jitter > 0.5:
		return nil, fmt.Errorf("heartbeat: jitter %v is above 0.5", cfg.Jitter)
	}
	switch cfg.SchemaVersion {
	case 0:
		cfg.SchemaVersion = 2
	case 1, 2:
	default:
		return nil, fmt.Errorf("heartbeat: schema version %d: want 1 or 2", cfg.SchemaVersion)
	}
	l := &Loop{cfg: cfg, dir: cfg.Dir, log: cfg.Logger, now: cfg.Now, sleep: cfg.Sleep, rand: cfg.Rand,
		legacy: cfg.SchemaVersion == 1}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.sleep == nil {
		l.sleep = sleepCtx
	}
	if l.rand == nil {
		l.rand = rand.Float64
	}
	var err error
	if l.lease, err = l.dir.ReadLease(); err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	if l.parent, err = l.dir.ReadPID(gyrumdir.ParentPIDFile); err != nil && !l.legacy {
		return nil, fmt.Errorf("heartbeat: watched process: %w", err)
	}
	if cfg.Self.IsZero() {
		if l.cfg.Self, err = proc.Self(); err != nil {
			return nil, fmt.Errorf("heartbeat: own identity: %w", err)
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: min(max(cfg.Durations.Interval, 2*time.Second), 30*time.Second)}
	}
	l.client = httpapi.NewClient(l.lease.WarpURL, cfg.Token).WithHTTPClient(hc)
	return l, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Lease returns the lease the loop keeps alive.
func (l *Loop) Lease() gyrumdir.Lease { return l.lease }

// Run registers the loop (registry entry, then heartbeat.pid), POSTs once,
// ticks until an exit condition or the end of ctx, and unregisters. The
// error is for a loop that could not start (ErrAlreadyRunning, an
// unwritable registry); every exit after the start is a nil error.
func (l *Loop) Run(ctx context.Context) (Exit, error) {
	if err := l.register(); err != nil {
		return "", err
	}
	exit := Exit("")
	defer func() { l.unregister(exit) }()
	exit = l.tick(ctx, true)
	for exit == "" {
		d := l.Delay()
		l.state.NextTickAt = l.now().Add(d)
		l.writeState()
		if err := l.sleep(ctx, d); err != nil {
			exit = ExitSignal
			break
		}
		exit = l.tick(ctx, false)
	}
	l.log.Info("loop exits", "reason", string(exit), "posts", l.state.Posts, "skips", l.state.Skips, "failures", l.state.Failures)
	return exit, nil
}

func (l *Loop) register() error {
	var err error
	self := l.cfg.Self
	if cur, err := l.dir.ReadPID(gyrumdir.LoopPIDFile); err == nil && cur != self && cur.Alive() {
		return fmt.Errorf("%w: pid %d (%s)", ErrAlreadyRunning, cur.PID, l.dir.File(gyrumdir.LoopPIDFile))
	}
	if err := l.cfg.Registry.Add(gyrumdir.Entry{PID: self.PID, StartTime: self.StartTime, Dir: l.dir.Worktree, Ticket: l.lease.Ticket}); err != nil {
		return fmt.Errorf("heartbeat: register: %w", err)
	}
	if err := l.dir.WritePID(gyrumdir.LoopPIDFile, self); err != nil {
		_, _ = l.cfg.Registry.Remove(self)
		return fmt.Errorf("heartbeat: register: %w", err)
	}
	now := l.now()
	l.startedAt = now
	if l.hooks, err = l.dir.NewHookCounter(); err != nil {
		l.log.Warn("hook events cannot be counted", "err", err)
	}
	l.state = gyrumdir.LoopState{PID: self.PID, StartTime: self.StartTime, SchemaVersion: l.cfg.SchemaVersion,
		StartedAt: now, UpdatedAt: now, LastOutcome: "started"}
	l.log.Info("loop starts", "ticket", l.lease.Ticket, "epoch", l.lease.Epoch, "warp", l.lease.WarpURL,
		"parent", l.parent.String(), "interval", l.cfg.Durations.Interval, "staleness", l.cfg.Durations.Staleness,
		"inflight_max", l.cfg.Durations.InFlightMax, "schema_version", l.cfg.SchemaVersion)
	return nil
}

func (l *Loop) unregister(exit Exit) {
	self := l.cfg.Self
	if _, err := l.dir.RemovePIDIf(gyrumdir.LoopPIDFile, self); err != nil {
		l.log.Warn("remove pid file", "err", err)
	}
	if _, err := l.cfg.Registry.Remove(self); err != nil {
		l.log.Warn("remove registry entry", "err", err)
	}
	l.state.LastOutcome = "exit: " + string(exit)
	l.state.NextTickAt = time.Time{}
	l.writeState() // fails quietly when the worktree is gone: nothing is recreated
}

func (l *Loop) writeState() {
	l.state.UpdatedAt = l.now()
	if err := l.dir.WriteState(l.state); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.log.Warn("write state", "err", err)
	}
}

// Delay returns the wait before the next tick: the interval, doubled per
// consecutive failure up to four intervals, varied by ±jitter and never
// above four intervals.
func (l *Loop) Delay() time.Duration {
	iv := l.cfg.Durations.Interval
	mult := 1
	for i := 1; i < l.failures && mult < 4; i++ {
		mult *= 2
	}
	d := time.Duration(float64(iv) * float64(mult) * (1 + l.cfg.Jitter*(2*l.rand()-1)))
	return min(d, 4*iv)
}

// Tick runs one tick (not the start POST) and returns the exit it led to,
// "" to go on. Run calls it; tests may too.
func (l *Loop) Tick(ctx context.Context) Exit { return l.tick(ctx, false) }

func (l *Loop) tick(ctx context.Context, start bool) Exit {
	now := l.now()
	if l.legacy {
		l.post(ctx, l.v1(), now)
		return ""
	}
	if !l.parent.Alive() {
		l.log.Info("watched process is gone", "parent", l.parent.String())
		l.exitReport(ctx, ExitParentExited)
		return ExitParentExited
	}
	cur, err := l.dir.ReadLease()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.log.Info("lease.json is gone", "dir", l.dir.Worktree)
		l.exitReport(ctx, ExitWorktreeGone)
		return ExitWorktreeGone
	case err != nil:
		l.skip("corrupt-lease", err)
		return ""
	case cur.Ticket != l.lease.Ticket || cur.Epoch != l.lease.Epoch:
		l.log.Info("lease.json names another lease", "ticket", cur.Ticket, "epoch", cur.Epoch)
		return ExitSuperseded
	}
	act, err := l.dir.Activity(now, l.cfg.Durations.InFlightMax)
	if err != nil {
		l.skip("no-activity", err)
		return ""
	}
	l.state.ActivityAgeS, l.state.InFlight = act.Age.Seconds(), act.InFlight
	if !start && act.Age > l.cfg.Durations.Staleness {
		if !l.stale {
			l.log.Info("activity is stale: skipping heartbeats", "age", act.Age.Round(time.Millisecond), "limit", l.cfg.Durations.Staleness)
		}
		l.stale = true
		l.skip("skipped-stale", nil)
		return ""
	}
	if l.stale {
		l.log.Info("activity resumed", "age", act.Age.Round(time.Millisecond))
		l.stale = false
	}
	l.observeHook()
	body := l.v2(act.Age, act.InFlight)
	if l.v1Body {
		body = l.v1()
	}
	return l.post(ctx, body, now)
}

func (l *Loop) skip(outcome string, err error) {
	l.state.Skips++
	l.state.LastOutcome = outcome
	if err != nil {
		l.state.LastError = err.Error()
		l.log.Warn("tick skipped", "outcome", outcome, "err", err)
	}
}

func (l *Loop) v1() httpapi.HeartbeatRequest {
	return httpapi.HeartbeatRequest{Ticket: l.lease.Ticket, Host: l.lease.Host, Agent: l.lease.Agent}
}

func (l *Loop) v2(age time.Duration, inFlight string) httpapi.HeartbeatRequest {
	two := 2
	secs := age.Seconds()
	seen := l.hookSeen
	return httpapi.HeartbeatRequest{SchemaVersion: &two, Ticket: l.lease.Ticket, Epoch: l.lease.Epoch,
		Host: l.lease.Host, Agent: l.lease.Agent, ActivityAgeS: &secs, InFlight: inFlight,
		HookSeen: &seen, HookEvents: l.hookPending}
}

// observeHook updates hook_seen and the pending hook-event count before a
// v2 body is built. hook_seen is sticky for the loop's life: once the hook
// has fired since the start, it is wired. The counter is the exact source;
// the activity record also covers hooks of an older gyrum, which only
// touch last-activity and do not count.
func (l *Loop) observeHook() {
	if l.hooks != nil {
		n, err := l.hooks.Take()
		if err != nil {
			l.log.Warn("count hook events", "err", err)
		}
		l.hookPending += n
		l.state.HookEvents += n
		if n > 0 {
			l.hookSeen = true
		}
	}
	if !l.hookSeen {
		seen, err := l.dir.HookFiredSince(l.startedAt)
		if err != nil {
			l.log.Warn("read activity record", "err", err)
		}
		l.hookSeen = seen
	}
	l.state.HookSeen = l.hookSeen
}

// post sends body and turns the answer into the loop's next step.
func (l *Loop) post(ctx context.Context, body httpapi.HeartbeatRequest, now time.Time) Exit {
	res, err := l.client.Heartbeat(ctx, body)
	l.state.Posts++
	l.state.LastPOSTAt = now
	if err == nil {
		if body.SchemaVersion != nil {
			l.hookPending -= body.HookEvents // the server has added them
		}
		l.failures = 0
		l.state.LastOutcome, l.state.LastStatus, l.state.LastError = "ok", http.StatusOK, ""
		l.state.ExpiresAt, l.state.Verdict = res.ExpiresAt, res.Verdict
		if !res.Extended && res.Note != "" {
			l.log.Info("heartbeat recorded, lease not extended", "note", res.Note)
		} else {
			l.log.Debug("heartbeat", "expires_at", res.ExpiresAt, "verdict", res.Verdict)
		}
		return ""
	}
	if ctx.Err() != nil {
		return ExitSignal
	}
	var apiErr *httpapi.APIError
	status := 0
	if errors.As(err, &apiErr) {
		status = apiErr.Status
	}
	l.state.LastStatus, l.state.LastError = status, err.Error()
	if l.legacy {
		// The pre-ADR loop ignores every answer.
		l.state.LastOutcome = "error"
		l.state.Failures++
		l.log.Info("heartbeat failed (v1 loop goes on)", "status", status, "err", err)
		return ""
	}
	switch {
	case errors.Is(err, warp.ErrUnsupportedSchema) && !l.v1Body:
		l.log.Warn("server does not speak schema_version 2: falling back to v1 bodies", "err", err)
		l.v1Body = true
		l.state.SchemaVersion = 1
		return l.post(ctx, l.v1(), now)
	case errors.Is(err, warp.ErrLeaseEnded):
		l.state.LastOutcome = "lease-ended"
		l.log.Info("lease ended on the server", "err", err)
		return ExitLeaseEnded
	case errors.Is(err, warp.ErrStaleEpoch), errors.Is(err, warp.ErrConflict):
		l.state.LastOutcome = "stale-epoch"
		l.log.Info("lease taken over", "err", err)
		return ExitStaleEpoch
	case errors.Is(err, warp.ErrNotFound):
		l.state.LastOutcome = "not-found"
		l.log.Info("ticket unknown to the server", "err", err)
		return ExitNotFound
	}
	l.failures++
	l.state.Failures++
	l.state.LastOutcome = "error"
	l.log.Warn("heartbeat failed: will retry", "status", status, "consecutive", l.failures, "err", err)
	return ""
}

// exitReport sends the one exit report of a stopping v2 loop; a transport
// error or 5xx gets one retry, nothing more.
func (l *Loop) exitReport(ctx context.Context, why Exit) {
	if l.v1Body {
		return // the server speaks v1 only: there is no exit report to send
	}
	now := l.now()
	age := now.Sub(l.lease.ClaimedAt)
	if act, err := l.dir.Activity(now, l.cfg.Durations.InFlightMax); err == nil {
		// The agent is gone: a marker it left behind is no longer a running
		// tool call, only evidence of activity when the call started. Crediting
		// it as "in flight now" would keep the lease alive past the death.
		last := act.LastActivity
		if act.InFlightSince.After(last) {
			last = act.InFlightSince
		}
		if last.IsZero() {
			last = now.Add(-act.Age)
		}
		age = now.Sub(last)
	}
	l.observeHook()
	body := l.v2(max(age, 0), "")
	body.Exit = string(why)
	for attempt := 0; attempt < 2; attempt++ {
		_, err := l.client.Heartbeat(ctx, body)
		l.state.Posts++
		l.state.LastPOSTAt = l.now()
		if err == nil {
			l.log.Info("exit report sent", "exit", string(why))
			return
		}
		var apiErr *httpapi.APIError
		if ctx.Err() != nil || (errors.As(err, &apiErr) && apiErr.Status < 500) {
			l.log.Info("exit report refused", "exit", string(why), "err", err)
			return
		}
		l.log.Warn("exit report failed", "exit", string(why), "attempt", attempt+1, "err", err)
		if attempt == 0 && l.sleep(ctx, min(l.cfg.Durations.Interval, time.Second)) != nil {
			return
		}
	}
}

// State returns the loop's latest state (what heartbeat.state holds).
func (l *Loop) State() gyrumdir.LoopState { return l.state }
