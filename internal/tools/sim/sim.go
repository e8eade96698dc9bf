// Package sim is the fleet simulator behind warpsim: it shows on real
// processes whether the heartbeat tells the truth.
//
// A run starts an embedded warp (the real service on a temporary SQLite
// file, the real HTTP API and expiry job) on 127.0.0.1, and for every
// simulated agent a watched stand-in for Claude Code (this executable run
// again as a small helper named claude, see helper.go) that starts the
// processes of its tool calls as its own children, a temporary worktree, a
// real `gyrum start-work` (with CLAUDE_PID, as from a Bash call) whose
// detached loop heartbeats to that warp, and an activity generator that
// runs the real `gyrum touch-activity` hook with Claude Code hook payloads
// on stdin and CLAUDE_PID in its environment. The agents behave like the
// measured client (docs/DESIGN.md section 6): foreground calls of at most 10
// minutes backed by a child process, longer work as background jobs that
// use a little CPU with no hook until they end, denied calls (PreToolUse
// without Post), hook payloads whose cwd is the project rather than the
// worktree, and sessions told by a hook that their lease ended.
//
// Every product duration is divided by the time scale. Failures are
// injected on the scenario's schedule (orphans by SIGKILL, with and without
// deleting the worktree; wedged agents that stop calling tools, after a
// normal or a denied call; an operator's release; a warp restart), and the
// outcome is measured from the server's side: which leases lapsed and when,
// which heartbeats claimed progress after a failure, which loops are still
// running. The Report says per class of agent whether the product kept its
// claims — unless the simulator's own timing says the machine was too
// loaded for the time scale (timing.go): then it says so instead.
//
// The simulator only signals processes it started, by pid after checking
// their start time, and removes everything it created when it ends, also
// when its context is cancelled (Ctrl-C).
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Defaults of a run.
const (
	DefaultTimeScale = 600
	MinTimeScale     = 1
	MaxTimeScale     = 10000
)

// ErrInterrupted reports a run stopped by its context (Ctrl-C) before the
// scenario ended. Everything it started has been stopped and removed.
var ErrInterrupted = errors.New("simulation interrupted")

// Config configures a run.
type Config struct {
	Scenario  string    // ScenarioADR138 when empty
	Agents    int       // DefaultAgents when zero
	TimeScale float64   // DefaultTimeScale when zero
	Client    Client    // ClientV2 when empty
	Mode      warp.Mode // warp.DefaultMode when empty
	// Watchdog runs `gyrum watchdog sweep` on its schedule and once at the end.
	Watchdog bool
	// Gyrum is the gyrum binary (see FindGyrum). Required.
	Gyrum string
	// Timing holds the unscaled product durations; DefaultTiming when zero.
	Timing Timing
	// TempDir is where the run's directory is created; os.TempDir when empty.
	TempDir string
	// Logger receives progress; discarded when nil.
	Logger *slog.Logger
	// LagTolerance is how late (p95, wall clock) the loops' ticks and the
	// background jobs' CPU bursts may run, and half how late the
	// simulator's own actions and hook execs may run, before the machine is
	// judged too loaded for the time scale and the claims are not judged;
	// a quarter of the scaled heartbeat interval when zero.
	LagTolerance time.Duration
}

func (c *Config) validate() error {
	if c.Scenario == "" {
		c.Scenario = ScenarioADR138
	}
	if c.Agents == 0 {
		c.Agents = DefaultAgents
	}
	if c.TimeScale == 0 {
		c.TimeScale = DefaultTimeScale
	}
	if c.TimeScale < MinTimeScale || c.TimeScale > MaxTimeScale || c.TimeScale != c.TimeScale {
		return warp.Errorf(warp.ErrInvalid, "--time-scale %v: want %d to %d (600 turns the 240 s heartbeat interval into 0.4 s)", c.TimeScale, MinTimeScale, MaxTimeScale)
	}
	if c.Client == "" {
		c.Client = ClientV2
	}
	if _, err := ParseClient(string(c.Client)); err != nil {
		return err
	}
	if c.Mode == "" {
		c.Mode = warp.DefaultMode
	}
	if _, err := warp.ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Timing == (Timing{}) {
		c.Timing = DefaultTiming()
	}
	if c.Gyrum == "" {
		return fmt.Errorf("%w: Config.Gyrum is empty", ErrNoGyrum)
	}
	if err := executable(c.Gyrum); err != nil {
		return fmt.Errorf("%w: %v", ErrNoGyrum, err)
	}
	if err := checkGyrum(c.Gyrum); err != nil {
		return err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// run is the state of one simulation.
type run struct {
	cfg   Config
	plan  Plan
	log   *slog.Logger
	scale float64

	root, home, agentsDir string
	url                   string // the embedded warp; a restart keeps the port
	count                 *counter
	srvCfg                serverConfig
	// claudeBin and jobBin start this executable as the watched stand-in
	// and as a background job (helper.go), under those names.
	claudeBin, jobBin string
	job               jobShape
	timing            timingLog

	mu       sync.Mutex
	srv      *embedded
	restarts []restartRecord
	t0       time.Time

	agents []*agent

	wdMu   sync.Mutex // one watchdog sweep at a time
	wdRuns []watchdogRun
}

type restartRecord struct {
	StoppedAt, StartedAt time.Time
}

// Run runs the simulation described by cfg and returns its report. The
// error is ErrInterrupted (wrapped) when ctx ends first; an error setting
// up the run (no gyrum, a port, the database) ends it early. In every case
// every process the run started is stopped and its directory removed before
// Run returns. The stand-ins are the running executable started again: its
// main must hand its arguments to StandIn before anything else.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	plan, err := Build(cfg.Scenario, cfg.Agents, cfg.Client, cfg.Timing)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, plan: plan, log: cfg.Logger, scale: cfg.TimeScale, count: &counter{}}
	r.job = jobFor(r.real(cfg.Timing.Interval))
	if tr := feasible(cfg.TimeScale, cfg.Timing, plan); tr != nil {
		return NotRun(r.summaryInput(time.Time{}), len(plan.Agents), *tr), nil
	}
	root, err := os.MkdirTemp(cfg.TempDir, "warp-sim-")
	if err != nil {
		return nil, fmt.Errorf("create simulation directory: %w", err)
	}
	r.root = root
	defer r.cleanup()
	if r.root, err = filepath.Abs(root); err != nil {
		r.root = root
		return nil, fmt.Errorf("create simulation directory: %w", err)
	}
	r.home = filepath.Join(r.root, "gyrum-home")
	r.agentsDir = filepath.Join(r.root, "agents")
	bin := filepath.Join(r.root, "bin")
	for _, d := range []string{r.home, r.agentsDir, bin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create simulation directory: %w", err)
		}
	}
	if r.claudeBin, r.jobBin, err = helperBins(bin); err != nil {
		return nil, err
	}
	r.log.Info("simulation directory", "dir", r.root)
	return r.execute(ctx)
}

// helperBins makes the names the stand-ins run under: dir/claude and
// dir/sim-job, links to this executable (a process is named after the file
// it was started from). Without links the executable itself is used.
func helperBins(dir string) (claude, job string, err error) {
	self, err := os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("find this executable for the stand-ins: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	claude, job = filepath.Join(dir, "claude"), filepath.Join(dir, "sim-job")
	for _, l := range []string{claude, job} {
		if os.Symlink(self, l) != nil {
			return self, self, nil
		}
	}
	return claude, job, nil
}

// real turns an unscaled product duration into wall-clock time of this run.
func (r *run) real(d time.Duration) time.Duration { return time.Duration(float64(d) / r.scale) }

// unscaled turns wall-clock time of this run into product time.
func (r *run) unscaled(d time.Duration) time.Duration { return time.Duration(float64(d) * r.scale) }

// at is the wall-clock time of an unscaled offset into the scenario.
func (r *run) at(d time.Duration) time.Time { return r.t0.Add(r.real(d)) }

// scaledPolicy is the server policy of the run.
func (r *run) scaledPolicy() warp.Policy {
	t := r.cfg.Timing
	return warp.Policy{
		LeaseWindow:  r.real(t.LeaseWindow),
		StallAfter:   r.real(t.StallAfter),
		SilentAfter:  r.real(t.SilentAfter),
		StartupGrace: r.real(t.StartupGrace),
		SpinAfter:    r.real(t.SpinAfter),
	}
}

func (r *run) server() *embedded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srv
}

func (r *run) execute(ctx context.Context) (*Report, error) {
	r.srvCfg = serverConfig{
		DBPath: filepath.Join(r.root, "warp.db"),
		Policy: r.scaledPolicy(),
		Mode:   r.cfg.Mode,
		Sweep:  max(r.real(r.cfg.Timing.Sweep), time.Millisecond),
		Count:  r.count,
		// The embedded warp logs every lapse at info; the report counts them.
		Logger: slog.New(minLevel{Handler: r.log.Handler(), min: slog.LevelWarn}).With("component", "warp"),
	}
	srv, err := startEmbedded(ctx, r.srvCfg, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	r.url = srv.URL()
	for _, ap := range r.plan.Agents {
		if _, err := srv.svc.CreateTicket(ctx, warp.NewTicket{ID: ap.Ticket, Title: fmt.Sprintf("simulated %s agent %s", ap.Class, ap.Name)}); err != nil {
			return nil, fmt.Errorf("create ticket %s: %w", ap.Ticket, err)
		}
		a := &agent{plan: ap, r: r, dir: filepath.Join(r.agentsDir, ap.Name)}
		a.cwd = a.dir
		if ap.ProjectCwd {
			// The project the session runs in; the worktree start-work
			// prepares for the ticket lies elsewhere.
			a.cwd = filepath.Join(r.agentsDir, ap.Name+".project")
		}
		// The agent's repository and worktree exist before the clock
		// starts: git's own time must not delay the schedule.
		if err := a.makeWorktree(ctx); err != nil {
			return nil, fmt.Errorf("agent %s: %w", ap.Name, err)
		}
		r.agents = append(r.agents, a)
	}
	r.log.Info("embedded warp listening", "url", srv.URL(), "mode", r.cfg.Mode, "lease_window", r.srvCfg.Policy.LeaseWindow,
		"sweep", r.srvCfg.Sweep, "startup_grace", r.srvCfg.Policy.StartupGrace)

	r.t0 = time.Now()
	end := r.at(r.plan.End)
	r.log.Info("scenario started", "scenario", r.plan.Scenario, "agents", len(r.agents), "client", r.cfg.Client,
		"time_scale", r.scale, "unscaled_minutes", r.plan.End.Minutes(), "real_seconds", r.real(r.plan.End).Seconds())

	actx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	var wg sync.WaitGroup
	for _, a := range r.agents {
		wg.Go(func() { a.run(actx) })
	}
	errc := make(chan error, 1)
	if r.plan.RestartAt > 0 {
		wg.Go(func() {
			if err := r.restart(actx); err != nil {
				errc <- err
			}
		})
	}
	if r.cfg.Watchdog && r.plan.WatchdogEvery > 0 {
		wg.Go(func() { r.watchdogSchedule(actx, ctx, end) })
	}

	var runErr error
	select {
	case <-ctx.Done():
		runErr = fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	case err := <-errc:
		runErr = err
	case <-time.After(time.Until(end)):
	}
	stopAgents()
	wg.Wait()
	if runErr != nil {
		return nil, runErr
	}
	started := 0
	for _, a := range r.agents {
		if a.startErr == nil {
			started++
		}
	}
	r.log.Info("scenario ended; measuring", "agents_started", started)
	obs, err := r.observe(ctx)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	}
	return r.report(obs), nil
}

// restart stops the embedded warp at RestartAt and starts it again on the
// same database and port RestartOutage later, or at once when ctx ends
// during the outage.
func (r *run) restart(ctx context.Context) error {
	if !sleepUntil(ctx, r.at(r.plan.RestartAt)) {
		return nil
	}
	r.mu.Lock()
	old := r.srv
	r.mu.Unlock()
	addr := old.Addr()
	stopped := time.Now()
	old.stop()
	r.log.Info("warp stopped for the restart", "outage_unscaled", r.plan.RestartOutage)
	// Started again even when the scenario ends during the outage (a run
	// far behind its schedule): the measurement reads through it.
	sleepUntil(ctx, r.at(r.plan.RestartAt+r.plan.RestartOutage))
	srv, err := startEmbedded(context.WithoutCancel(ctx), r.srvCfg, addr)
	if err != nil {
		return fmt.Errorf("restart warp: %w", err)
	}
	r.mu.Lock()
	r.srv = srv
	r.restarts = append(r.restarts, restartRecord{StoppedAt: stopped, StartedAt: srv.started})
	r.mu.Unlock()
	r.log.Info("warp restarted on the same database and port", "url", srv.URL())
	return nil
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// cleanup stops every process the run started and removes its directory.
// It runs on every path out of Run, with its own deadline so a cancelled
// run still cleans up.
func (r *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A watchdog sweep still running must end before its files go.
	r.wdMu.Lock()
	r.wdMu.Unlock() //nolint:staticcheck // an empty critical section: wait for the holder
	var wg sync.WaitGroup
	for _, a := range r.agents {
		wg.Go(func() { a.cleanup(ctx) })
	}
	wg.Wait()
	// Loops the per-agent view missed (a pid file that was never read).
	for _, l := range r.liveLoops() {
		for _, id := range l {
			r.stopProcess(ctx, id)
		}
	}
	// Anything else of the run still running (a loop a start-work spawned
	// while the passes above ran, a stand-in's job): every process the run
	// starts carries its marker.
	r.killMarked()
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.stop()
	}
	if err := os.RemoveAll(r.root); err != nil {
		r.log.Error("remove simulation directory", "dir", r.root, "err", err)
	}
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
