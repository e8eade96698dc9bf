package storetest

import (
	"sync"
	"time"
)

// T0 is where the suite's clocks start: a whole second, so adoption
// buckets (one second wide) line up with the tests' arithmetic.
func T0() time.Time { return time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC) }

// Clock is a fake clock safe for concurrent use: a wall clock, whose Now
// is what warp.Config.Now wants, and a monotonic one, whose Elapsed is
// what warp.Config.Elapsed wants. Advance moves both (time passes); Step
// and Set move the wall clock alone (it is stepped).
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	elapsed time.Duration
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the wall clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Elapsed returns the monotonic clock's time: how far Advance moved the
// clock since it was made.
func (c *Clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.elapsed += d
	return c.now
}

// Step moves the wall clock alone by d (back when negative), as an
// operator or a time daemon stepping it does, and returns the new time.
func (c *Clock) Step(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set puts the wall clock at t; the monotonic clock does not move.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
