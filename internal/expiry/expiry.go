// Package expiry runs the lease-expiry sweep in the background: every
// interval it asks the warp Service to lapse the leases whose expiry has
// passed. A failing sweep (the database briefly down) is logged and retried
// on the next tick; it never stops the job.
package expiry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Config configures a Job.
type Config struct {
	// Interval between sweeps; warp.DefaultSweepInterval when zero.
	Interval time.Duration
	// Logger receives lapses and sweep errors; discarded when nil.
	Logger *slog.Logger
	// OnSweep, when set, is called after every successful sweep (metrics,
	// tests), and after a failed one that committed lapses or verdict
	// changes before it failed (then OnError follows). It runs on the
	// job's goroutine: keep it short.
	OnSweep func(warp.SweepResult)
	// OnError, when set, is called after every failed sweep with its error.
	OnError func(error)
	// Locker, when set, makes the job sweep on a tick only while it holds
	// the lock, so one of several replicas sharing a database sweeps per
	// interval. The server composes it from the store (internal/postgres
	// implements it); nil sweeps on every tick.
	Locker SweepLocker
}

// validate fills defaults and rejects a configuration that cannot work.
func (c *Config) validate() error {
	if c.Interval == 0 {
		c.Interval = warp.DefaultSweepInterval
	}
	if c.Interval < 0 {
		return warp.Errorf(warp.ErrInvalid, "sweep interval must be positive, got %s", c.Interval)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Job sweeps expired leases every Interval. Start it once; Close stops it.
type Job struct {
	svc *warp.Service
	cfg Config

	mu      sync.Mutex
	cancel  context.CancelFunc
	started bool
	wg      sync.WaitGroup
	// first is closed once the first sweep after Start has run (or was
	// skipped for the lock, or failed).
	first chan struct{}
}

// New returns a Job sweeping svc. It validates cfg and fills its defaults.
func New(svc *warp.Service, cfg Config) (*Job, error) {
	if svc == nil {
		return nil, errors.New("expiry: nil service")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Job{svc: svc, cfg: cfg, first: make(chan struct{})}, nil
}

// FirstSweep is closed once the first sweep after Start has run, been
// skipped (another replica holds the sweep lock) or failed: a caller that
// drives the clock itself (tests) waits for it so that sweep cannot land
// in the middle of its own steps.
func (j *Job) FirstSweep() <-chan struct{} { return j.first }

// Interval returns the time between sweeps.
func (j *Job) Interval() time.Duration { return j.cfg.Interval }

// Start runs a first sweep at once and then one every Interval, in a
// goroutine, until ctx is done or Close is called. A second Start is an
// error.
func (j *Job) Start(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.started {
		return errors.New("expiry: job already started")
	}
	j.started = true
	ctx, j.cancel = context.WithCancel(ctx)
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		j.loop(ctx)
	}()
	return nil
}

func (j *Job) loop(ctx context.Context) {
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	first := true
	for {
		j.sweep(ctx)
		if first {
			close(j.first)
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SweepLocker is implemented by stores that several warp replicas share
// (internal/postgres). The job sweeps on a tick only when TrySweepLock
// returns ok, so one replica sweeps per interval; ok false with a nil error
// means another replica holds the lock. release ends the sweep. hold is
// how long the lock may outlive the last call: the job passes three sweep
// intervals, so a frozen sweeper is replaced within that.
type SweepLocker interface {
	TrySweepLock(ctx context.Context, hold time.Duration) (release func(), ok bool, err error)
}

// sweep runs one sweep and reports it; errors are logged, never returned,
// so a database outage only costs the ticks it lasts.
func (j *Job) sweep(ctx context.Context) {
	if j.cfg.Locker != nil {
		release, held, err := j.cfg.Locker.TrySweepLock(ctx, 3*j.cfg.Interval)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			j.cfg.Logger.Error("lease sweep skipped: cannot check the sweep lock; retrying next tick", "err", err, "retry_in", j.cfg.Interval)
			if j.cfg.OnError != nil {
				j.cfg.OnError(err)
			}
			return
		}
		if !held {
			return // another replica sweeps
		}
		defer release()
	}
	res, err := j.RunOnce(ctx)
	if err != nil && ctx.Err() != nil {
		return // stopping: the error is the cancellation
	}
	// A sweep that failed part-way still committed what it reports (its
	// batches, the verdict pass): those lapses and changes are reported
	// like any others, or no later sweep would (they are done).
	if j.cfg.OnSweep != nil && (err == nil || len(res.Lapsed)+len(res.VerdictChanges)+len(res.HostAlarms) > 0) {
		j.cfg.OnSweep(res)
	}
	if err != nil {
		j.cfg.Logger.Error("lease sweep failed; retrying next tick", "err", err, "retry_in", j.cfg.Interval,
			"lapsed_before_the_failure", len(res.Lapsed))
		if j.cfg.OnError != nil {
			j.cfg.OnError(err)
		}
	}
}

// RunOnce runs one sweep synchronously, then the verdict pass, and logs
// every lease it lapsed. The verdict pass runs even when the sweep failed
// (after some of its batches, or in its bookkeeping): it is a transaction
// of its own, and a sweep that keeps failing must not stop verdicts.
func (j *Job) RunOnce(ctx context.Context) (warp.SweepResult, error) {
	res, err := j.svc.Sweep(ctx)
	if ctx.Err() == nil {
		res = j.recordVerdicts(ctx, res)
	}
	if len(res.Lapsed) == 0 {
		return res, err
	}
	for _, l := range res.Lapsed {
		j.cfg.Logger.Info("lease lapsed", "ticket", l.Ticket, "epoch", l.Epoch, "agent", l.Agent, "host", l.Host,
			"expires_at", l.ExpiresAt, "reason", l.EndReason, "fallback_extended", l.FallbackExtended)
	}
	return res, err
}

// Close stops the job and waits for a running sweep to finish.
func (j *Job) Close() error {
	j.mu.Lock()
	cancel := j.cancel
	j.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	j.wg.Wait()
	return nil
}
