package warp

import (
	"log/slog"
	"sync"
	"time"
)

// The service clock keeps leases on the time that elapsed (docs/DESIGN.md
// section 3, The server's clock). Deadlines are stored as wall-clock times
// (expires_at, last_activity_at + window), so a wall clock stepped back
// by D would keep every lease D longer: the dead ones too. The clock reads
// the wall clock against a monotonic one on every read; a wall clock that
// went back between two reads is absorbed — the service clock runs on by
// the elapsed time, now ahead of the wall clock — and the lead is then
// slewed away at ClockSlew. A forward step pays the lead back first; what
// is left of it is real (a suspended machine, a frozen warp), and the
// sweep's gap grace covers it.
const (
	// ClockSlew is how fast the lead over the wall clock that a backward
	// step left is paid back: 1/ClockSlew of the time that elapses (a
	// second every 20 s, so a step of 10 minutes is gone in 200). Every
	// duration the service measures meanwhile (lease windows, thresholds,
	// graces) lasts up to 1/(ClockSlew-1) longer, never shorter.
	ClockSlew = 20
	// ClockStepLogged is the least backward step the service logs, and
	// the least lead over the wall clock a start takes from the database's
	// last sweep (Service.Init): smaller ones are absorbed in silence
	// (clock jitter, the resampling of a database's clock).
	ClockStepLogged = time.Second
)

// MonotonicClock returns a monotonic clock for Config.Elapsed: the time
// since it was made, on the process's monotonic clock.
func MonotonicClock() func() time.Duration {
	origin := time.Now()
	return func() time.Duration { return time.Since(origin) }
}

// serviceClock is the Service's clock: wall, kept on elapsed when elapsed
// is set (see above); wall as it is otherwise (tests that set the time by
// hand).
type serviceClock struct {
	wall    func() time.Time
	elapsed func() time.Duration
	log     *slog.Logger

	mu          sync.Mutex
	read        bool          // lastWall and lastElapsed hold a reading
	lastWall    time.Time     // the wall clock at the last reading
	lastElapsed time.Duration // the monotonic clock then
	ahead       time.Duration // how far the service clock is ahead of wall
	told        bool          // a lead was logged: log its end too
}

// now returns the service's time.
func (c *serviceClock) now() time.Time {
	if c.elapsed == nil {
		return c.wall()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readLocked()
}

// readLocked takes a reading of both clocks, c.mu held, and returns the
// service's time.
func (c *serviceClock) readLocked() time.Time {
	w, e := c.wall().Round(0), c.elapsed()
	if c.read {
		c.advance(w, e)
	}
	c.read, c.lastWall, c.lastElapsed = true, w, e
	return w.Add(c.ahead)
}

// advance moves the lead from the last reading to the reading (w, e).
func (c *serviceClock) advance(w time.Time, e time.Duration) {
	passed := max(e-c.lastElapsed, 0)
	step := w.Sub(c.lastWall) - passed // what the wall clock did beyond the time that passed
	switch {
	case step < 0:
		c.ahead -= step
		if -step >= ClockStepLogged {
			c.told = true
			c.log.Warn("the system clock stepped back: warp keeps time on the time that elapsed, so no lease lasts longer for the step; "+
				"its clock now runs ahead of the system clock and slews back to it at one second in 20",
				"step", (-step).Round(time.Millisecond), "ahead", c.ahead.Round(time.Millisecond),
				"back_on_system_clock_in", (c.ahead * ClockSlew).Round(time.Second))
		}
	case step > 0 && c.ahead > 0:
		// A forward step after a backward one (the clock set right again)
		// pays back the lead; the rest is time warp did not see.
		c.ahead -= min(step, c.ahead)
	}
	c.ahead -= min(c.ahead, passed/ClockSlew)
	if c.told && c.ahead == 0 {
		c.told = false
		c.log.Info("warp's clock is back on the system clock")
	}
}

// notBefore makes the clock read at least t when it reads more than
// ClockStepLogged before it, by running ahead of the wall clock from now
// on (slewed away like a step's lead): a start that finds the database's
// last sweep in its future, after the clock went back while warp was down.
// Without a monotonic clock it does nothing. It is idempotent.
func (c *serviceClock) notBefore(t time.Time, why string) {
	if c.elapsed == nil {
		return
	}
	c.mu.Lock()
	behind := t.Sub(c.readLocked())
	if behind < ClockStepLogged {
		c.mu.Unlock()
		return
	}
	c.ahead += behind
	c.told = true
	ahead := c.ahead
	c.mu.Unlock()
	c.log.Warn("the system clock is behind "+why+": warp's clock continues from there, ahead of the system clock, "+
		"and slews back to it at one second in 20",
		"behind", behind.Round(time.Millisecond), "ahead", ahead.Round(time.Millisecond),
		"back_on_system_clock_in", (ahead * ClockSlew).Round(time.Second))
}

// lead returns how far the service clock runs ahead of the wall clock
// (Config.Now): the part of a backward step not yet slewed away.
func (c *serviceClock) lead() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ahead
}
