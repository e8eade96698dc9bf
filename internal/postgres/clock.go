package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The replicas of one database keep one time: the database's. A lease's
// times are written by whichever replica served its heartbeat and read by
// whichever sweeps, so replicas reading their own hosts' clocks would let
// a host whose clock is behind (or stepped back) shorten or lengthen
// every lease it serves. Each replica reads PostgreSQL's clock
// (clock_timestamp()) at Open and every ClockResample after the first
// Now, and runs it on between readings by its own monotonic clock: one
// query per replica every few seconds, none on the request path. warp
// serve gives Now to the Service as its wall clock, with the process's
// monotonic clock as Elapsed, so a step of the database's clock is kept
// off the leases like a step of a host's (internal/warp, clock.go).

// ClockResample is how often a replica reads the database's clock again.
const ClockResample = 5 * time.Second

// clockReadTimeout bounds one reading: a database that does not answer
// leaves the clock running on the last one.
const clockReadTimeout = time.Second

// dbClock is the database's clock as this process last read it.
type dbClock struct {
	mu    sync.Mutex
	db    time.Time // the database's clock at local
	local time.Time // this process's clock then (with its monotonic reading)

	// The readings' goroutine; run has a lock of its own, never db.mu,
	// which the sweep lock holds across calls to the database.
	run     sync.Mutex
	started atomic.Bool // read without run on every Now
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Now returns the database's clock (see ClockResample): the time of its
// last reading moved on by the monotonic time since. The first call starts
// the readings; Close stops them.
func (db *DB) Now() time.Time {
	if !db.clock.started.Load() {
		db.startClock()
	}
	db.clock.mu.Lock()
	defer db.clock.mu.Unlock()
	return db.clock.db.Add(time.Since(db.clock.local))
}

// readClock reads the database's clock once. The reading is taken to be
// of the middle of the round trip.
func (db *DB) readClock(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clockReadTimeout)
	defer cancel()
	before := time.Now()
	var at time.Time
	if err := db.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&at); err != nil {
		return fmt.Errorf("read the database's clock: %w", translate(err))
	}
	local := before.Add(time.Since(before) / 2)
	db.clock.mu.Lock()
	db.clock.db, db.clock.local = at, local
	db.clock.mu.Unlock()
	return nil
}

// startClock starts reading the database's clock every ClockResample
// until Close, unless it runs or stopped already.
func (db *DB) startClock() {
	c := &db.clock
	c.run.Lock()
	defer c.run.Unlock()
	if c.started.Load() || c.stopped {
		return
	}
	c.started.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	db.clock.cancel = cancel
	db.clock.wg.Add(1)
	go func() {
		defer db.clock.wg.Done()
		t := time.NewTicker(ClockResample)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := db.readClock(ctx); err != nil && ctx.Err() == nil {
					db.log.Debug("postgres: the database's clock runs on from its last reading", "err", err)
				}
			}
		}
	}()
}

// stopClock stops the readings, if they started, for good.
func (db *DB) stopClock() {
	c := &db.clock
	c.run.Lock()
	c.stopped = true
	cancel := c.cancel
	c.run.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
}
