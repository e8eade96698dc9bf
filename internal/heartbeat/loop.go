// Package heartbeat is the activity-gated heartbeat loop, `gyrum heartbeat
// run`.
//
// A loop belongs to one worktree and one lease. It POSTs once at start,
// then every interval (±10 % jitter) it gathers facts — the watched agent
// process, lease.json, last-activity, in-flight markers and the processes
// that back them, a declared wait, the CPU the agent's own processes used —
// and the pure Decide (decide.go) turns them into one action: an exit
// report and exit (agent gone, lease.json gone), a quiet exit (lease.json
// names another lease), a skip (lease.json unreadable), a stale report
// (the agent shows no activity within the staleness limit: the loop lives,
// the lease is not extended) or a heartbeat. Heartbeats carry
// activity_age_s, in_flight and the hook health: hook_seen (has the
// agent's hook fired since the loop started) and hook_events (hook runs
// counted since the previous acknowledged POST; a failed POST's count is
// sent again).
//
// Answers 404, 409 and 410 end the loop after it leaves the agent a notice
// (.gyrum/lease-ended.json) that the hook shows on the next tool call;
// network errors and 5xx keep it running with a jittered backoff of up to
// four intervals, never longer than the server's max_retry_gap_s;
// unsupported_schema_version switches it to the v1 body for the rest of its
// life. Cancelling the context (SIGTERM) ends it. On every exit it removes
// heartbeat.pid and its registry entry when they still name it.
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
	"strings"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/transcript"
)

// Exit says why a loop ended.
type Exit string

// Reasons a loop ends. The first two are also sent as exit reports.
const (
	ExitParentExited Exit = client.ExitParentExited // the watched process is gone or its pid recycled
	ExitWorktreeGone Exit = client.ExitWorktreeGone // lease.json (or the whole worktree) is gone
	ExitLeaseEnded   Exit = "lease-ended"           // 410: completed, released or lapsed
	ExitStaleEpoch   Exit = "stale-epoch"           // 409: someone else holds the ticket now
	ExitNotFound     Exit = "not-found"             // 404: the server does not know the ticket
	ExitSuperseded   Exit = "superseded"            // lease.json now names another lease
	ExitSignal       Exit = "signal"                // the context ended (SIGTERM)
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
	// Token authenticates to warp (WARP_TOKEN); none when empty. It is
	// sent only when the lease's server is Server (SameServer).
	Token string
	// Server is the warp the token is for (WARP_URL; "" the default).
	Server string
	// Durations: interval, staleness, in-flight cap. Zero fields take the defaults.
	Durations Durations
	// Jitter is the fraction each wait varies by; 0 means DefaultJitter,
	// negative means none.
	Jitter float64
	// SchemaVersion is 2 (the default) or 1 (the pre-ADR loop).
	SchemaVersion int
	// API sends the heartbeats; NewAPI for the lease's server, token and
	// secret when nil, with Timeout.
	API API
	// Timeout bounds one exchange with warp; the interval, within
	// 2..30 s, when zero. A failing loop counts it in when it plans its
	// retries before the lease it holds lapses (Delay).
	Timeout time.Duration
	// Self is the loop's own identity; proc.Self() when zero.
	Self proc.Identity
	// Now is the clock (time.Now when nil); Sleep waits d or until ctx
	// ends (a timer when nil); Rand returns [0,1) (math/rand/v2 when nil).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
	// Logger receives the loop's log; discarded when nil.
	Logger *slog.Logger
	// Agents is $GYRUM_HOME/agents: the loop removes its agent's entry
	// when the agent or the lease file is gone. Zero: no index.
	Agents gyrumdir.AgentIndex
	// Prepared is $GYRUM_HOME/worktrees: with Registry and Agents, what
	// the loop restores when $GYRUM_HOME lost them (restoreHome). Zero:
	// not restored.
	Prepared gyrumdir.Prepared
	// Snapshot lists the host's processes (proc.TakeSnapshot when nil).
	Snapshot func() (proc.Snapshot, error)
}

// Loop is one heartbeat loop. Use New, then Run.
type Loop struct {
	cfg    Config
	dir    gyrumdir.Dir
	lease  gyrumdir.Lease
	leases *gyrumdir.LeaseWatch // lease.json, read every tick
	parent proc.Identity
	// server is the app server that runs the agent's tool calls
	// (heartbeat.server.pid; zero without one): see serverProcs.
	server proc.Identity
	watch  *proc.Watch // parent, asked every tick
	api    API
	log    *slog.Logger
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	rand   func() float64

	legacy   bool // SchemaVersion 1: the pre-ADR loop
	v1Body   bool // fell back to v1 bodies after unsupported_schema_version
	failures int  // consecutive failed POSTs
	stale    bool // the previous tick skipped for staleness
	state    gyrumdir.LoopState

	// Hook health: when the loop started, the hook-event counter,
	// whether the hook has fired since the start, and the events counted
	// but not yet acknowledged by a 200 (they are sent again after a
	// failed POST, so the server's sum loses none).
	startedAt   time.Time
	hooks       *gyrumdir.HookCounter
	hookSeen    bool
	hookPending int64

	// The agent's processes at the previous sample, and the latest sample
	// that found them busy (see sample).
	prevProcs []proc.Sample
	prevAt    time.Time
	busyAt    time.Time
	busyWhat  string
	// pruned is when the loop last removed old tombstones of ended calls
	// (gyrumdir's EndCall).
	pruned time.Time

	// calls reads, across ticks, what the agent's transcript says of its
	// tool calls (see agentCalls).
	calls *transcript.Tracker

	// maxGap is the longest wait the server allows between attempts
	// (HeartbeatResponse.MaxRetryGapS); 0 until an answer says.
	maxGap time.Duration
	// held is when the lease lapses unless extended again, on the loop's
	// own clock: the start of the tick whose POST was answered plus the
	// answer's expires_in_s (its expires_at from a server that does not
	// send it); before any answer, lease.json's held_until (zero from an
	// older gyrum). A failing loop retries before it (Delay).
	held time.Time
	// corruptTicks counts the ticks in a row that found lease.json
	// unreadable (see facts).
	corruptTicks int
	// untold is the lease-ended notice the loop could not write (see
	// keepTelling); nil when there is none.
	untold *gyrumdir.LeaseEnded
	// progress is the progress evidence (issue 44); verdict is warp's
	// latest verdict, whose turn to spinning the agent is told.
	progress *progressWatch
	verdict  string
	// unbackedSince holds, per in-flight marker, since when samples have
	// found no process backing its call (see noteUnbacked).
	unbackedSince map[string]time.Time
}

// New checks cfg, reads the lease and the watched identity, and returns a
// loop ready to Run.
func New(cfg Config) (*Loop, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	l := &Loop{cfg: cfg, dir: cfg.Dir, log: cfg.Logger, now: cfg.Now, sleep: cfg.Sleep, rand: cfg.Rand,
		legacy: cfg.SchemaVersion == 1, calls: transcript.NewTracker()}
	if err := l.readFiles(); err != nil {
		return nil, err
	}
	if cfg.Self.IsZero() {
		var err error
		if l.cfg.Self, err = proc.Self(); err != nil {
			return nil, fmt.Errorf("heartbeat: own identity: %w", err)
		}
	}
	l.api = cfg.API
	if l.api == nil {
		l.api = l.newAPI()
	}
	// Last: the watch holds a pidfd until Run's end closes it, and no
	// error return above may leave it open.
	l.watch = proc.NewWatch(l.parent)
	return l, nil
}

// withDefaults checks cfg and fills what it leaves zero with the defaults.
func (cfg *Config) withDefaults() error {
	if cfg.Dir.Path == "" {
		return errors.New("heartbeat: no .gyrum directory")
	}
	def := Durations{DefaultInterval, DefaultStaleness, DefaultInFlightMax, DefaultHungAfter}
	if cfg.Durations.Interval <= 0 {
		cfg.Durations.Interval = def.Interval
	}
	if cfg.Durations.Staleness <= 0 {
		cfg.Durations.Staleness = def.Staleness
	}
	if cfg.Durations.InFlightMax <= 0 {
		cfg.Durations.InFlightMax = def.InFlightMax
	}
	if cfg.Durations.HungAfter <= 0 {
		cfg.Durations.HungAfter = def.HungAfter
	}
	switch {
	case cfg.Jitter == 0:
		cfg.Jitter = DefaultJitter
	case cfg.Jitter < 0:
		cfg.Jitter = 0
	case cfg.Jitter > maxJitter:
		return fmt.Errorf("heartbeat: jitter %v is above 0.5", cfg.Jitter)
	}
	switch cfg.SchemaVersion {
	case 0:
		cfg.SchemaVersion = 2
	case 1, 2:
	default:
		return fmt.Errorf("heartbeat: schema version %d: want 1 or 2", cfg.SchemaVersion)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = min(max(cfg.Durations.Interval, 2*time.Second), 30*time.Second)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Snapshot == nil {
		cfg.Snapshot = proc.TakeSnapshot
	}
	return nil
}

// readFiles reads the lease and the identities start-work left in .gyrum/.
func (l *Loop) readFiles() error {
	var err error
	l.leases = l.dir.WatchLease()
	if l.lease, err = l.leases.Read(); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	// Until warp answers, the deadline start-work saw in the claim's
	// answer: a loop whose first POSTs fail retries before it too.
	l.held = l.lease.HeldUntil
	if l.parent, err = l.dir.ReadPID(gyrumdir.ParentPIDFile); err != nil && !l.legacy {
		return fmt.Errorf("heartbeat: watched process: %w", err)
	}
	if l.server, err = l.dir.ReadPID(gyrumdir.ServerPIDFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Without it the agent's calls on the server go unseen (stale
		// sooner), which is no reason to leave the lease without a loop.
		l.log.Warn("heartbeat.server.pid unreadable: calls the app server runs are not seen", "err", err)
	}
	return nil
}

// newAPI is the client for the lease's server. A lease.json naming another
// server than WARP_URL gets the lease's own secret, never the token (see
// SameServer).
func (l *Loop) newAPI() API {
	url := l.lease.WarpURL
	if url == "" {
		url = client.DefaultURL
	}
	token := l.cfg.Token
	if token != "" && !SameServer(url, l.cfg.Server) {
		token = ""
		l.log.Warn("WARP_TOKEN not sent: lease.json names another warp than WARP_URL", "lease_warp", url, "warp_url", l.cfg.Server)
	}
	return NewAPI(url, token, l.lease.LeaseSecret, l.cfg.Timeout)
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
	defer func() {
		l.unregister(exit)
		l.watch.Close()
	}()
	exit = l.tick(ctx, true)
	// The agent's exit cuts the wait short: the exit report goes out at
	// once, not up to a tick later, so a released-on-exit ticket is free
	// within a second of the crash.
	wake, stopWake := l.wakeOnExit(ctx)
	defer stopWake()
	for exit == "" {
		d := l.Delay()
		l.state.NextTickAt = l.now().Add(d)
		l.writeState()
		if err := l.sleep(wake, d); err != nil {
			if ctx.Err() != nil {
				exit = ExitSignal
				break
			}
			wake = ctx // woken by the exit: tick now, and sleep plainly after
		}
		exit = l.tick(ctx, false)
	}
	l.snapshot(ctx, exit)
	if l.untold != nil && exit != ExitSignal {
		l.keepTelling(ctx)
	}
	l.log.Info("loop exits", "reason", string(exit), "posts", l.state.Posts, "skips", l.state.Skips, "failures", l.state.Failures)
	return exit, nil
}

// snapshot saves and reports the worktree's state when the loop ended
// because its agent is gone or its lease ended (SaveSnapshot), after the
// exit report. release and complete-pr stop the loop with a signal and
// save it themselves; a superseded lease.json is the next lease's.
func (l *Loop) snapshot(ctx context.Context, exit Exit) {
	switch exit {
	case ExitParentExited, ExitWorktreeGone, ExitLeaseEnded, ExitStaleEpoch:
	default:
		return
	}
	if l.legacy {
		return
	}
	api, _ := l.api.(SnapshotAPI)
	_, _ = SaveSnapshot(ctx, api, l.dir.Worktree, l.lease, l.lease.SnapshotPush, l.log)
}

// wakeOnExit returns a context that ctx's end or the watched process's
// exit cancels (proc.Watch.Exited), and the function that releases it.
// Where the exit cannot be waited on, it is ctx: the tick's check finds
// the exit.
func (l *Loop) wakeOnExit(ctx context.Context) (context.Context, context.CancelFunc) {
	exited := l.watch.Exited()
	if exited == nil {
		return ctx, func() {}
	}
	wake, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-exited:
			cancel()
		case <-wake.Done():
		}
	}()
	return wake, cancel
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

// restoreHome re-creates this loop's entries in $GYRUM_HOME when they are
// gone ($GYRUM_HOME deleted or pruned under live loops): the registry
// entry (the watchdog and gyrum status find the loop by it), and, when
// that was gone too, the prepared worktree and the agent index entry of
// the watched agent, through which the hook credits this worktree and
// shows the agent a lease-ended notice. Without them a working agent's
// hook stops crediting, its lease lapses and nobody is told. A tick that
// finds the entry costs one small read. (In wrap mode the watched process
// is gyrum itself: the wrapped agent's index entry is not restored, and
// the hook finds the worktree by its cwd.)
func (l *Loop) restoreHome() {
	if l.cfg.Registry == (gyrumdir.Registry{}) {
		return
	}
	self := l.cfg.Self
	if _, err := l.cfg.Registry.Read(self.PID); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	var restored []string
	if err := l.cfg.Registry.Add(gyrumdir.Entry{PID: self.PID, StartTime: self.StartTime, Dir: l.dir.Worktree, Ticket: l.lease.Ticket}); err != nil {
		l.log.Warn("$GYRUM_HOME lost this loop's registry entry and it cannot be restored", "err", err)
		return
	}
	restored = append(restored, "registry entry")
	if l.cfg.Prepared != (gyrumdir.Prepared{}) {
		if err := l.cfg.Prepared.Add(l.dir.Worktree); err == nil {
			restored = append(restored, "prepared worktree")
		}
	}
	if l.cfg.Agents != (gyrumdir.AgentIndex{}) && !l.wrapped() {
		if err := l.cfg.Agents.Add(l.parent, l.dir.Worktree); err == nil {
			restored = append(restored, "agent index entry")
		}
	}
	l.log.Warn("$GYRUM_HOME lost this loop's entries (deleted under it?): restored them", "restored", strings.Join(restored, ", "))
}

// wrapped reports whether the watched process is gyrum itself (start-work
// -- CMD); it reads /proc, only when restoring.
func (l *Loop) wrapped() bool {
	snap, err := l.cfg.Snapshot()
	if err != nil {
		return false
	}
	for _, p := range snap.Procs {
		if p.PID == l.parent.PID {
			return strings.HasPrefix(p.Name, ownPrefix)
		}
	}
	return false
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
// consecutive failure up to four intervals, varied by ±jitter. It never
// exceeds the longest gap the server allows (the max_retry_gap_s of its
// last answer, derived from its startup grace; DefaultMaxRetryGap before
// any answer): a warp restart after an outage of any length then finds
// every loop back before the grace ends, so no healthy lease lapses.
//
// A failing loop also never sleeps past the lease it holds: before the
// held deadline it waits at most half of what is left after one
// exchange's timeout, so two more attempts fall before the lease lapses
// and a partition that heals before then costs no lease; past it, at most
// an interval, so the agent hears within a tick of the heal that its lease
// ended.
func (l *Loop) Delay() time.Duration {
	d := l.backoff()
	if l.failures == 0 || l.held.IsZero() {
		return d
	}
	iv := l.cfg.Durations.Interval
	left := l.held.Sub(l.now())
	if left <= 0 {
		return min(d, iv)
	}
	return min(d, max((left-l.cfg.Timeout)/2, min(iv, MinRetryGap)))
}

func (l *Loop) backoff() time.Duration {
	iv := l.cfg.Durations.Interval
	mult := 1
	for i := 1; i < l.failures && mult < 4; i++ {
		mult *= 2
	}
	d := time.Duration(float64(iv) * float64(mult) * (1 + l.cfg.Jitter*(2*l.rand()-1)))
	gap := l.maxGap
	if gap <= 0 {
		gap = DefaultMaxRetryGap
	}
	// The server's cap has a floor: a startup grace of a millisecond (or
	// an answer that says so) would otherwise make every loop of the fleet
	// POST in a tight loop.
	return min(d, 4*iv, max(gap, min(iv, MinRetryGap)))
}

// MinRetryGap is the shortest wait between attempts a server's
// max_retry_gap_s can ask for (or the interval, when that is shorter).
const MinRetryGap = time.Second

// tombstoneAge is how long an ended call's tombstone is kept at least: a
// second run of the hook for the same call comes within milliseconds.
const tombstoneAge = time.Minute

// DefaultMaxRetryGap caps the wait between attempts until the server has
// said its own cap: 90 % of warp's default startup grace (10 minutes; the
// loop does not link the server's domain package, a test keeps the two
// in step).
const DefaultMaxRetryGap = 9 * time.Minute

// Tick runs one tick (not the start POST) and returns the exit it led to,
// "" to go on. Run calls it; tests may too.
func (l *Loop) Tick(ctx context.Context) Exit { return l.tick(ctx, false) }

func (l *Loop) tick(ctx context.Context, start bool) Exit {
	now := l.now()
	if l.legacy {
		l.post(ctx, l.v1(), now)
		return ""
	}
	l.restoreHome()
	f := l.facts(now, start)
	d := Decide(f, Limits{Staleness: l.cfg.Durations.Staleness, InFlightMax: l.cfg.Durations.InFlightMax, HungAfter: l.cfg.Durations.HungAfter})
	switch d.Action {
	case ActReport:
		l.log.Info("exit", "reason", string(d.Exit), "parent", l.parent.String(), "dir", l.dir.Worktree)
		l.exitReport(ctx, d, now)
		if l.cfg.Agents != (gyrumdir.AgentIndex{}) {
			// The agent is gone, or its lease.json: the hook must stop
			// crediting this worktree on its behalf.
			_ = l.cfg.Agents.Remove(l.parent, l.dir.Worktree)
		}
		return d.Exit
	case ActExit:
		l.log.Info("lease.json names another lease: exit")
		return d.Exit
	case ActSkip:
		l.skip(d.Why, nil)
		return ""
	}
	l.state.ActivityAgeS, l.state.InFlight = d.Age.Seconds(), d.InFlight
	if d.Stale != l.stale {
		if d.Stale {
			l.log.Info("activity is stale: reporting it, the lease is no longer extended", "age", d.Age.Round(time.Millisecond), "limit", l.cfg.Durations.Staleness)
		} else {
			l.log.Info("activity resumed", "age", d.Age.Round(time.Millisecond), "in_flight", d.InFlight)
		}
		l.stale = d.Stale
	}
	l.observeHook()
	l.observeProgress(ctx, now)
	if d.InFlight == "" || strings.HasPrefix(d.InFlight, BackgroundPrefix) {
		// The age was measured when the tick began; sampling processes
		// takes time under load, and warp subtracts the age from the time
		// it receives the POST: without this, every POST would credit the
		// delay as activity (a stale report would creep the lease forward).
		d.Age += max(l.now().Sub(now), 0)
	}
	body := l.v2(d)
	if l.v1Body {
		if d.Stale {
			// A v1 body cannot say "stale": sending it would extend the lease.
			l.skip("skipped-stale", nil)
			return ""
		}
		body = l.v1()
	}
	exit := l.post(ctx, body, now)
	if d.Stale && l.state.LastOutcome == "ok" {
		l.state.LastOutcome = d.Why
	}
	return exit
}

// facts gathers what the tick decides on. Unreadable files count as
// missing evidence. The process tree — a read of every /proc/PID/stat,
// the costliest part of a tick — is sampled only when it can change what
// is sent: a tool call started less than a staleness limit ago (is it
// running now?), or evidence without it (markers unbacked, the last busy
// sample) that would be stale within two ticks — two samples a tick apart
// then tell whether the agent's processes work before the lease goes
// stale. A loop at rest, its agent's hook firing, reads no /proc.
func (l *Loop) facts(now time.Time, start bool) Facts {
	f := Facts{Now: now, Start: start, WatchedAlive: l.watch.Alive(), ClaimedAt: l.lease.ClaimedAt, Lease: l.leaseFact()}
	if t, err := l.dir.LastActivity(); err == nil {
		f.HookLast = t
	}
	markers, err := l.dir.InFlight()
	if err != nil {
		l.log.Warn("read in-flight markers", "err", err)
	}
	if now.Sub(l.pruned) >= tombstoneAge {
		l.pruned = now
		if err := l.dir.PruneEnded(now.Add(-tombstoneAge)); err != nil {
			l.log.Warn("prune ended calls' tombstones", "err", err)
		}
	}
	if w, err := l.dir.ReadWait(); err == nil && !w.Future(now) {
		f.Wait = &w
	}
	f.BusyAt, f.BusyWhat = l.busyAt, l.busyWhat
	// What the agent recorded of its calls comes first: it is read only
	// while markers exist, and only what the transcript gained since.
	openShell := false
	for i, st := range l.agentCalls(markers, now, l.cfg.Durations.InFlightMax) {
		shell := ShellTool(markers[i].Tool)
		openShell = openShell || shell && st == CallOpen
		f.Markers = append(f.Markers, MarkerFact{Tool: markers[i].Tool, Since: markers[i].Since, Agent: st, Shell: shell})
	}
	lim := Limits{Staleness: l.cfg.Durations.Staleness, InFlightMax: l.cfg.Durations.InFlightMax, HungAfter: l.cfg.Durations.HungAfter}
	soon := lim.Staleness - time.Duration(2*float64(l.cfg.Durations.Interval)*(1+l.cfg.Jitter))
	recent := false
	for _, m := range markers {
		recent = recent || now.Sub(m.Since) < lim.Staleness
	}
	// An unfinished shell call is sampled whatever its age: whether a
	// process backs it tells a long build from a hung call.
	if f.WatchedAlive && (recent || openShell || f.evidenceAge(lim, true) >= soon) {
		procs, agents := l.sample(now)
		sinces := make([]time.Time, len(f.Markers))
		for i, m := range f.Markers {
			sinces[i] = m.Since
		}
		for i, b := range BackedMarkers(sinces, procs, agents) {
			f.Markers[i].Backed = b
		}
		f.BusyAt, f.BusyWhat = l.busyAt, l.busyWhat
		l.noteUnbacked(markers, f.Markers, now)
	}
	for i := range f.Markers {
		if at, ok := l.unbackedSince[markers[i].Name]; ok && !f.Markers[i].Backed {
			f.Markers[i].Unbacked = now.Sub(at)
		}
	}
	return f
}

// noteUnbacked records, per marker, since when samples have found no
// process backing its call (hung calls, issue 44), and forgets markers
// that are gone or backed.
func (l *Loop) noteUnbacked(markers []gyrumdir.Marker, facts []MarkerFact, now time.Time) {
	if l.unbackedSince == nil {
		l.unbackedSince = map[string]time.Time{}
	}
	live := map[string]bool{}
	for i, m := range markers {
		live[m.Name] = true
		if facts[i].Backed {
			delete(l.unbackedSince, m.Name)
		} else if _, ok := l.unbackedSince[m.Name]; !ok {
			l.unbackedSince[m.Name] = now
		}
	}
	for name := range l.unbackedSince {
		if !live[name] {
			delete(l.unbackedSince, name)
		}
	}
}

// leaseFact reads lease.json. Unreadable for more than a tick (not a
// write in progress), the loop, which knows its lease, writes it back and
// heartbeats the lease from memory (warp says whether it lives, and a 410
// tells the agent), or the lease would lapse in silence.
func (l *Loop) leaseFact() LeaseFact {
	cur, err := l.leases.Read()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.corruptTicks = 0
		return LeaseMissing
	case err == nil:
		l.corruptTicks = 0
		if cur.Ticket != l.lease.Ticket || cur.Epoch != l.lease.Epoch {
			return LeaseOther
		}
		return LeaseOurs
	}
	l.state.LastError = err.Error()
	if l.corruptTicks++; l.corruptTicks == 1 {
		l.log.Warn("lease.json unreadable", "err", err)
		return LeaseCorrupt
	}
	if werr := l.dir.WriteLease(l.lease); werr != nil {
		l.log.Warn("lease.json unreadable for more than a tick and cannot be restored: heartbeating the lease from memory", "err", err, "write_err", werr)
	} else {
		l.log.Warn("lease.json unreadable for more than a tick: restored it from the loop's memory", "err", err)
		l.corruptTicks = 0
	}
	return LeaseOurs
}

// agentCalls reads what the agent's session transcript says of each
// marker's call younger than the in-flight cap: only when the hook
// recorded a transcript, and only what it appended since the last tick
// (transcript.Tracker). Nothing readable leaves every call CallUnknown.
func (l *Loop) agentCalls(markers []gyrumdir.Marker, now time.Time, inFlightMax time.Duration) []CallState {
	out := make([]CallState, len(markers))
	var ids []string
	for _, m := range markers {
		if id := m.ToolUseID(); id != "" && now.Sub(m.Since) < inFlightMax {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return out
	}
	path, err := l.dir.Transcript()
	if err != nil || path == "" {
		return out
	}
	st := l.calls.Status(path, ids)
	l.calls.Forget(map[string]bool{path: true})
	for i, m := range markers {
		switch st[m.ToolUseID()] {
		case transcript.Open:
			out[i] = CallOpen
		case transcript.Finished:
			out[i] = CallFinished
		}
	}
	return out
}

// sample takes a snapshot of the agent's own processes (descendants of the
// watched process, gyrum's left out; in wrap mode, where the watched
// process is gyrum itself, the wrapped agent's descendants) and, when the
// previous sample is at most three intervals old (two, plus the largest
// jitter), records whether they were busy in between.
// It returns the agent's processes and the pids of the agent itself (the
// parents of its tool calls' processes).
func (l *Loop) sample(now time.Time) ([]proc.Sample, map[int]bool) {
	snap, err := l.cfg.Snapshot()
	if err != nil {
		l.log.Warn("sample processes", "err", err)
		l.prevProcs, l.prevAt = nil, time.Time{}
		return nil, nil
	}
	procs, agents := agentProcs(snap, l.parent.PID, relaunchedAgent)
	procs = append(procs, serverProcs(snap, l.server, l.parent.PID, agents)...)
	if snap.CPUKnown && !l.prevAt.IsZero() {
		elapsed := now.Sub(l.prevAt)
		// A baseline older than two intervals would credit work done long
		// ago to now: it only serves as the next baseline.
		if elapsed > 0 && float64(elapsed) <= 2*float64(l.cfg.Durations.Interval)*(1+maxJitter) {
			if cpu, name := CPUUse(l.prevProcs, procs); Busy(cpu, elapsed) {
				l.busyAt, l.busyWhat = now, name
			}
		}
	}
	l.prevProcs, l.prevAt = procs, now
	return procs, agents
}

// maxJitter bounds Config.Jitter.
const maxJitter = 0.5

// ownPrefix names gyrum's own processes: the hook and its helpers are the
// agent's bookkeeping, not its work.
const ownPrefix = "gyrum"

// agentProcs returns the agent's own processes in snap — the descendants
// of watched, or, when watched is gyrum itself (wrap mode), of its
// children — and the pids of the agent (watched, or those children). A
// child of the agent that is the agent again (relaunched: isAgent says so,
// as Gemini CLI's node launcher runs the real CLI in a node child) is the
// agent too: its tool calls' processes are the agent's calls, and its own
// CPU — the agent thinking or waiting on its model — is never counted as
// the agent's background work.
func agentProcs(snap proc.Snapshot, watched int, isAgent func(pid int) bool) ([]proc.Sample, map[int]bool) {
	agents := map[int]bool{watched: true}
	for _, p := range snap.Procs {
		if p.PID != watched {
			continue
		}
		if strings.HasPrefix(p.Name, ownPrefix) {
			agents = map[int]bool{}
			for _, c := range snap.Procs {
				if c.PPID == watched && !strings.HasPrefix(c.Name, ownPrefix) {
					agents[c.PID] = true
				}
			}
		}
		break
	}
	// Relaunches: children of the agent that are the agent, to any depth.
	for grew := true; grew; {
		grew = false
		for _, c := range snap.Procs {
			if agents[c.PPID] && !agents[c.PID] && !strings.HasPrefix(c.Name, ownPrefix) && isAgent(c.PID) {
				agents[c.PID], grew = true, true
			}
		}
	}
	var out []proc.Sample
	for pid := range agents {
		for _, p := range snap.Descendants(pid, ownPrefix) {
			if !agents[p.PID] {
				out = append(out, p)
			}
		}
	}
	return dedupe(out), agents
}

// serverProcs adds the processes of the app server that runs the agent's
// tool calls (Codex's app-server daemon, heartbeat.server.pid): its
// children that started since the agent (watched) did, and everything
// below them. The server itself joins agents, so those children back the
// agent's calls like its own children would, and its own CPU (the model's
// stream) is never background work. Children older than the agent — a
// call an earlier session left running on the server — are not this
// session's work. A server gone or recycled (identity changed) adds nothing.
func serverProcs(snap proc.Snapshot, server proc.Identity, watched int, agents map[int]bool) []proc.Sample {
	if server.IsZero() {
		return nil
	}
	var since time.Time
	found := false
	for _, p := range snap.Procs {
		switch {
		case p.Identity == server:
			found = true
		case p.PID == watched:
			since = p.Started
		}
	}
	if !found || since.IsZero() {
		return nil
	}
	agents[server.PID] = true
	var out []proc.Sample
	for _, c := range snap.Procs {
		if c.PPID != server.PID || agents[c.PID] || strings.HasPrefix(c.Name, ownPrefix) || c.Started.Before(since.Add(-startSlack)) {
			continue
		}
		out = append(out, c)
		out = append(out, snap.Descendants(c.PID, ownPrefix)...)
	}
	return out
}

// dedupe drops repeats of a process (one below two agents of a chain is
// listed under each).
func dedupe(ps []proc.Sample) []proc.Sample {
	seen := make(map[int]bool, len(ps))
	out := ps[:0]
	for _, p := range ps {
		if !seen[p.PID] {
			seen[p.PID] = true
			out = append(out, p)
		}
	}
	return out
}

// relaunchedAgent reports whether process pid is a known agent (its
// command line read: agentproc.Name). agentProcs asks it only of the
// agent's direct children, and only while the loop samples.
func relaunchedAgent(pid int) bool {
	in, err := proc.Stat(pid)
	if err != nil {
		return false
	}
	args, _ := proc.Cmdline(pid)
	_, ok := agentproc.Name(in.Name, args)
	return ok
}

func (l *Loop) skip(outcome string, err error) {
	l.state.Skips++
	l.state.LastOutcome = outcome
	if err != nil {
		l.state.LastError = err.Error()
		l.log.Warn("tick skipped", "outcome", outcome, "err", err)
	}
}

func (l *Loop) v1() client.HeartbeatRequest {
	return client.HeartbeatRequest{Ticket: l.lease.Ticket, Host: l.lease.Host, Agent: l.lease.Agent}
}

func (l *Loop) v2(d Decision) client.HeartbeatRequest {
	two := 2
	secs := d.Age.Seconds()
	seen := l.hookSeen
	body := client.HeartbeatRequest{SchemaVersion: &two, Ticket: l.lease.Ticket, Epoch: l.lease.Epoch,
		Host: l.lease.Host, Agent: l.lease.Agent, ActivityAgeS: &secs, InFlight: d.InFlight, Stale: d.Stale,
		HookSeen: &seen, HookEvents: l.hookPending}
	body.Note, body.NoteAt = PendingNote(l.dir, l.state.NoteSentAt)
	if l.progress != nil {
		body.ProgressAgeS = client.Ptr(l.progress.age(l.now()).Seconds())
		body.Loop = l.progress.loop
	}
	return body
}

// PendingNote returns the agent's note (note.json) and its time when it
// is not the one warp acknowledged at sent; nils when there is none to
// send (none written, the same, or unreadable: a torn note is not sent).
func PendingNote(d gyrumdir.Dir, sent time.Time) (*string, *time.Time) {
	n, err := d.ReadNote()
	if err != nil || n.At.Equal(sent) {
		return nil, nil
	}
	return &n.Text, &n.At
}

// observeProgress reads the progress evidence once per tick.
func (l *Loop) observeProgress(ctx context.Context, now time.Time) {
	if l.progress == nil {
		claimed := l.lease.ClaimedAt
		if claimed.IsZero() || claimed.After(now) {
			claimed = now
		}
		l.progress = newProgressWatch(l.dir.Worktree, claimed)
	}
	if err := l.progress.observe(ctx, l.dir, now); err != nil {
		l.log.Warn("read progress evidence", "err", err)
	}
	if err := l.dir.RotateCalls(); err != nil {
		l.log.Warn("rotate calls", "err", err)
	}
	l.state.ProgressAgeS = l.progress.age(now).Seconds()
}

// VerdictSpinning is warp's verdict of a lease whose agent is active but
// whose work has not progressed for the progress deadline.
const VerdictSpinning = "spinning"

// nudge tells the agent, once per episode, that warp judges its lease
// spinning (the hook shows the nudge on its next call).
func (l *Loop) nudge(verdict string, now time.Time) {
	was := l.verdict
	l.verdict = verdict
	if verdict != VerdictSpinning || was == VerdictSpinning || l.progress == nil {
		return
	}
	n := gyrumdir.Nudge{Ticket: l.lease.Ticket, Epoch: l.lease.Epoch, Episode: verdict + " " + now.UTC().Format(time.RFC3339),
		Text: SpinningNudge(l.lease.Ticket, l.progress.age(now)), At: now}
	if err := l.dir.WriteNudge(n); err != nil {
		l.log.Warn("write nudge", "err", err)
	}
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
func (l *Loop) post(ctx context.Context, body client.HeartbeatRequest, now time.Time) Exit {
	res, err := l.api.Heartbeat(ctx, body)
	l.state.Posts++
	l.state.LastPOSTAt = now
	if err == nil {
		l.answered(body, res, now)
		return ""
	}
	if ctx.Err() != nil {
		return ExitSignal
	}
	return l.refused(ctx, body, now, err)
}

// answered records a 200 answer to body, sent at the tick's start now.
func (l *Loop) answered(body client.HeartbeatRequest, res client.HeartbeatResponse, now time.Time) {
	if body.SchemaVersion != nil {
		l.hookPending -= body.HookEvents // the server has added them
	}
	if body.NoteAt != nil {
		l.state.NoteSentAt = *body.NoteAt
	}
	l.failures = 0
	l.state.LastOutcome, l.state.LastStatus, l.state.LastError = "ok", 200, ""
	l.state.ExpiresAt, l.state.Verdict = res.ExpiresAt, res.Verdict
	l.nudge(res.Verdict, now)
	l.held = res.ExpiresAt
	if res.ExpiresInS > 0 {
		l.held = now.Add(time.Duration(res.ExpiresInS * float64(time.Second)))
	}
	if res.MaxRetryGapS > 0 {
		l.maxGap = time.Duration(res.MaxRetryGapS * float64(time.Second))
	}
	if !res.Extended && res.Note != "" {
		l.log.Info("heartbeat recorded, lease not extended", "note", res.Note)
	} else {
		l.log.Debug("heartbeat", "expires_at", res.ExpiresAt, "verdict", res.Verdict)
	}
}

// refused turns a failed POST of body into the loop's next step: the end
// of the lease (warp's own 404, 409, 410: the agent is told), v1 bodies
// from now on, or a failure to retry.
func (l *Loop) refused(ctx context.Context, body client.HeartbeatRequest, now time.Time, err error) Exit {
	var apiErr *client.APIError
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
	// An answer without warp's error body (a proxy's 404 page during a
	// bad deploy, another service at the URL) only guesses its code from
	// the status: it is retried like any failure, never taken as the end
	// of the lease, or one misrouted minute would end every loop of the
	// fleet and tell every agent to stop.
	final := apiErr != nil && !apiErr.Guessed
	switch {
	case !final:
	case errors.Is(err, client.ErrUnsupportedSchema) && !l.v1Body:
		l.log.Warn("server does not speak schema_version 2: falling back to v1 bodies", "err", err)
		l.v1Body = true
		l.state.SchemaVersion = 1
		if body.Stale {
			// A v1 body cannot say "stale": sending it would extend the
			// lease of an idle agent, as the later ticks' check knows.
			l.skip("skipped-stale", nil)
			return ""
		}
		return l.post(ctx, l.v1(), now)
	case errors.Is(err, client.ErrLeaseEnded):
		l.state.LastOutcome = "lease-ended"
		l.log.Info("lease ended on the server", "err", err)
		l.tellAgent(ctx, gyrumdir.EndLapsed, apiErr)
		return ExitLeaseEnded
	case errors.Is(err, client.ErrStaleEpoch), errors.Is(err, client.ErrConflict), errors.Is(err, client.ErrNotHolder):
		l.state.LastOutcome = "stale-epoch"
		l.log.Info("lease taken over", "err", err)
		l.tellAgent(ctx, gyrumdir.EndTakenOver, nil)
		return ExitStaleEpoch
	case errors.Is(err, client.ErrNotFound):
		l.state.LastOutcome = "not-found"
		l.log.Info("ticket unknown to the server", "err", err)
		l.tellAgent(ctx, gyrumdir.EndUnknown, nil)
		return ExitNotFound
	}
	l.failures++
	l.state.Failures++
	l.state.LastOutcome = "error"
	l.log.Warn("heartbeat failed: will retry", "status", status, "consecutive", l.failures, "err", err)
	return ""
}

// exitReport sends the one exit report of a stopping v2 loop, with the
// age of the last evidence d computed for a gone agent at measured; a
// transport error or 5xx gets one retry, nothing more.
func (l *Loop) exitReport(ctx context.Context, d Decision, measured time.Time) {
	if l.v1Body {
		return // the server speaks v1 only: there is no exit report to send
	}
	l.observeHook()
	for attempt := 0; attempt < 2; attempt++ {
		// d.Age was measured at measured; warp subtracts the age from the
		// time it receives the report, so the age sent grows with the
		// delay (a slow tick, the retry's wait), or the report would
		// credit activity after the agent's death.
		body := l.v2(Decision{Age: d.Age + max(l.now().Sub(measured), 0)})
		body.Exit = string(d.Exit)
		_, err := l.api.Heartbeat(ctx, body)
		l.state.Posts++
		l.state.LastPOSTAt = l.now()
		if err == nil {
			l.log.Info("exit report sent", "exit", string(d.Exit))
			return
		}
		var apiErr *client.APIError
		if ctx.Err() != nil || (errors.As(err, &apiErr) && apiErr.Status < 500) {
			l.log.Info("exit report refused", "exit", string(d.Exit), "err", err)
			return
		}
		l.log.Warn("exit report failed", "exit", string(d.Exit), "attempt", attempt+1, "err", err)
		if attempt == 0 && l.sleep(ctx, min(l.cfg.Durations.Interval, time.Second)) != nil {
			return
		}
	}
}

// tellAgent leaves the agent a notice that its lease ended (the hook shows
// it on the next tool call). how is what the heartbeat's answer implies; a
// 410 says how the lease ended in its detail (an older server's is refined
// by asking warp). A lease.json that no longer names the lease means the
// agent moved on: nothing to tell. A notice that cannot be written (a full
// disk) is kept for keepTelling.
func (l *Loop) tellAgent(ctx context.Context, how string, answer *client.APIError) {
	if !l.stillOurs() {
		return
	}
	n := gyrumdir.LeaseEnded{Ticket: l.lease.Ticket, Epoch: l.lease.Epoch, How: how, At: l.now()}
	if state := answer.DetailValue(client.DetailLeaseState); state != "" {
		switch state {
		case client.LeaseReleased:
			n.How = gyrumdir.EndReleased
		case client.LeaseCompleted:
			n.How = gyrumdir.EndCompleted
		}
		n.Reason = answer.DetailValue(client.DetailEndReason)
	} else if how == gyrumdir.EndLapsed {
		if t, err := l.api.Ticket(ctx, l.lease.Ticket); err == nil {
			if asked, ended := EndOf(t, l.lease, n.At); ended {
				n = asked
			}
		}
	}
	if err := l.dir.WriteNotice(n); err != nil {
		l.log.Warn("write the lease-ended notice: will try again until it is written", "err", err)
		l.untold = &n
		return
	}
	l.log.Info("the agent will be told on its next tool call", "how", n.How, "reason", n.Reason)
}

// stillOurs reports whether lease.json still concerns this loop's lease:
// it names it, or it is unreadable (still this loop's worktree). Gone or
// naming another lease, the agent has moved on.
func (l *Loop) stillOurs() bool {
	cur, err := l.dir.ReadLease()
	return err != nil && !errors.Is(err, fs.ErrNotExist) || err == nil && cur.Ticket == l.lease.Ticket && cur.Epoch == l.lease.Epoch
}

// NoticeRetry is how often a loop tries again to write a lease-ended
// notice it could not write (at most; the interval when shorter).
const NoticeRetry = 5 * time.Second

// keepTelling tries to write the notice tellAgent could not until it is
// written, the agent is gone, lease.json no longer concerns the lease, or
// ctx ends: after a full disk gets space back, the agent is told within
// NoticeRetry. Meanwhile the hook may learn the end from warp itself
// (the loop's state stops moving: see gyrumdir.Dir.LoopSilent).
func (l *Loop) keepTelling(ctx context.Context) {
	every := min(l.cfg.Durations.Interval, NoticeRetry)
	for l.untold != nil {
		if l.sleep(ctx, every) != nil || !l.watch.Alive() || !l.stillOurs() {
			return
		}
		if err := l.dir.WriteNotice(*l.untold); err == nil {
			l.log.Info("the lease-ended notice is written at last: the agent will be told on its next tool call", "how", l.untold.How)
			l.untold = nil
		}
	}
}

// AskEnd asks warp through api whether lease l has ended: the notice for
// its agent (dated at) and true when it has. It reads the lease itself
// (GET /v1/tickets/{id}/leases/{epoch}), which an agent token may do with
// the lease's secret; from an older warp without that route it reads the
// ticket, which needs an admin token when the server has tokens. A ticket
// warp does not know (its own 404, not a proxy's) ended as EndUnknown.
func AskEnd(ctx context.Context, api API, l gyrumdir.Lease, at time.Time) (gyrumdir.LeaseEnded, bool, error) {
	st, err := api.LeaseStatus(ctx, l.Ticket, l.Epoch)
	var apiErr *client.APIError
	if errors.Is(err, client.ErrNotFound) && errors.As(err, &apiErr) && apiErr.Guessed {
		// No such route: an older warp. Its ticket says as much.
		t, err := api.Ticket(ctx, l.Ticket)
		if errors.Is(err, client.ErrNotFound) && errors.As(err, &apiErr) && !apiErr.Guessed {
			return gyrumdir.LeaseEnded{Ticket: l.Ticket, Epoch: l.Epoch, How: gyrumdir.EndUnknown, At: at}, true, nil
		}
		if err != nil {
			return gyrumdir.LeaseEnded{}, false, err
		}
		n, ended := EndOf(t, l, at)
		return n, ended, nil
	}
	if errors.Is(err, client.ErrNotFound) && errors.As(err, &apiErr) {
		return gyrumdir.LeaseEnded{Ticket: l.Ticket, Epoch: l.Epoch, How: gyrumdir.EndUnknown, At: at}, true, nil
	}
	if err != nil {
		return gyrumdir.LeaseEnded{}, false, err
	}
	n, ended := EndOfLease(st, l, at)
	return n, ended, nil
}

// EndOfLease says from warp's answer st about lease l whether it ended,
// and how: the notice for its agent, with at as its time. Released and
// completed say so with their reason; a lapsed lease whose ticket another
// claim took since was taken over.
func EndOfLease(st client.LeaseStatus, l gyrumdir.Lease, at time.Time) (gyrumdir.LeaseEnded, bool) {
	n := gyrumdir.LeaseEnded{Ticket: l.Ticket, Epoch: l.Epoch, How: gyrumdir.EndLapsed, At: at, Reason: st.Lease.EndReason}
	switch st.Lease.State {
	case client.LeaseHeld:
		return gyrumdir.LeaseEnded{}, false
	case client.LeaseReleased:
		n.How = gyrumdir.EndReleased
	case client.LeaseCompleted:
		n.How = gyrumdir.EndCompleted
	default:
		if st.CurrentEpoch > l.Epoch {
			n.How = gyrumdir.EndTakenOver
		}
	}
	return n, true
}

// EndOf says from warp's ticket t whether lease l ended, and how: the
// notice for its agent, with at as its time. A held lease of l's epoch has
// not ended; a later epoch took over; a ticket without a lease of its own
// (ended and reopened) lapsed.
func EndOf(t client.Ticket, l gyrumdir.Lease, at time.Time) (gyrumdir.LeaseEnded, bool) {
	n := gyrumdir.LeaseEnded{Ticket: l.Ticket, Epoch: l.Epoch, How: gyrumdir.EndLapsed, At: at}
	switch {
	case t.Lease == nil || t.Lease.Epoch < l.Epoch:
		return n, true
	case t.Lease.Epoch > l.Epoch:
		n.How = gyrumdir.EndTakenOver
		return n, true
	}
	switch t.Lease.State {
	case client.LeaseHeld:
		return gyrumdir.LeaseEnded{}, false
	case client.LeaseReleased:
		n.How = gyrumdir.EndReleased
	case client.LeaseCompleted:
		n.How = gyrumdir.EndCompleted
	}
	n.Reason = t.Lease.EndReason
	return n, true
}

// State returns the loop's latest state (what heartbeat.state holds).
func (l *Loop) State() gyrumdir.LoopState { return l.state }
