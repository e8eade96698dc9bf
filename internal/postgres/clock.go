package postgres

import (
	"context"
	"fmt"
	"sync"
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

	start  sync.Once
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Now returns the database's clock (see ClockResample): the time of its
// last reading moved on by the monotonic time since. The first call starts
// the readings; Close stops them.
func (db *DB) Now() time.Time {
	db.clock.start.Do(db.startClock)
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

// startClock reads the database's clock every ClockResample until Close.
func (db *DB) startClock() {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return
	}
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

// stopClock stops the readings, if they started.
func (db *DB) stopClock() {
	db.mu.Lock()
	cancel := db.clock.cancel
	db.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	db.clock.wg.Wait()
}
