package storetest

import (
	"sync"
	"time"
)

// T0 is where the suite's clocks start: a whole second, so adoption
// buckets (one second wide) line up with the tests' arithmetic.
func T0() time.Time { return time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC) }

// Clock is a fake clock safe for concurrent use. Its Now is what
// warp.Config.Now wants.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
