package warp

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fakeClocks is a wall clock and a monotonic one in the test's hands.
type fakeClocks struct {
	wall    time.Time
	elapsed time.Duration
}

func (f *fakeClocks) pass(d time.Duration) { f.wall, f.elapsed = f.wall.Add(d), f.elapsed+d }

func newTestClock(f *fakeClocks) (*serviceClock, *bytes.Buffer) {
	var log bytes.Buffer
	return &serviceClock{wall: func() time.Time { return f.wall }, elapsed: func() time.Duration { return f.elapsed },
		log: slog.New(slog.NewTextHandler(&log, nil))}, &log
}

var clockT0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// A wall clock stepped back by ten minutes does not set the service back:
// it runs on by the time that elapsed, ahead of the wall clock, and pays
// the lead back at one second in ClockSlew until it reads the wall clock
// again. The step is logged once, and so is the end of the lead.
func TestClockStepBackKeepsElapsedTime(t *testing.T) {
	f := &fakeClocks{wall: clockT0}
	c, log := newTestClock(f)
	if got := c.now(); !got.Equal(clockT0) {
		t.Fatalf("first reading %v, want %v", got, clockT0)
	}
	f.pass(time.Second)
	f.wall = f.wall.Add(-10 * time.Minute) // stepped back
	f.pass(time.Second)
	// Two seconds elapsed; the slew took a tenth of a second of the lead.
	want := clockT0.Add(2*time.Second - 2*time.Second/ClockSlew)
	if got := c.now(); !got.Equal(want) {
		t.Fatalf("after the step: %v, want %v (two seconds on, less the slew)", got, want)
	}
	if got, want := c.lead(), 10*time.Minute-2*time.Second/ClockSlew; got != want {
		t.Fatalf("lead %v, want %v", got, want)
	}
	// A lease window of 20 s measured across the lead lasts 20/(1-1/20) s.
	start := c.now()
	for range 2105 {
		f.pass(10 * time.Millisecond)
		if got := c.now(); got.Before(start) {
			t.Fatalf("the service clock went back: %v after %v", got, start)
		}
	}
	if got := c.now().Sub(start); got < 19990*time.Millisecond || got > 20010*time.Millisecond {
		t.Fatalf("21.05 s elapsed measured %v on the service clock, want 20 s (5 %% slew)", got)
	}
	for range 300 { // 200 minutes pay back ten
		f.pass(time.Minute)
		c.now()
	}
	if got := c.now(); !got.Equal(f.wall) || c.lead() != 0 {
		t.Fatalf("after the slew: %v ahead %v, want the wall clock %v", got, c.lead(), f.wall)
	}
	if n := strings.Count(log.String(), "stepped back"); n != 1 {
		t.Errorf("the step was logged %d times, want once:\n%s", n, log.String())
	}
	if n := strings.Count(log.String(), "back on the system clock"); n != 1 {
		t.Errorf("the end of the lead was logged %d times, want once:\n%s", n, log.String())
	}
}

// The clock set right again (a forward step after a backward one) pays
// the lead back at once; what the forward step has beyond the lead is
// time the service did not see, and shows (the sweep's gap grace is for
// that). A forward step without a lead passes as it is.
func TestClockForwardSteps(t *testing.T) {
	f := &fakeClocks{wall: clockT0}
	c, _ := newTestClock(f)
	c.now()
	f.wall = f.wall.Add(-10 * time.Minute)
	c.now()
	f.wall = f.wall.Add(10 * time.Minute) // set right
	if got := c.now(); !got.Equal(clockT0) || c.lead() != 0 {
		t.Fatalf("set right again: %v ahead %v, want %v and no lead", got, c.lead(), clockT0)
	}
	f.wall = f.wall.Add(8 * time.Hour) // a suspended machine
	if got := c.now(); !got.Equal(clockT0.Add(8 * time.Hour)) {
		t.Fatalf("forward step: %v, want %v", got, clockT0.Add(8*time.Hour))
	}
	f.wall = f.wall.Add(-time.Minute)
	c.now()
	f.wall = f.wall.Add(3 * time.Minute)
	if got, want := c.now(), clockT0.Add(8*time.Hour+2*time.Minute); !got.Equal(want) {
		t.Fatalf("back 1 min then forward 3: %v, want %v (the lead paid, two minutes on)", got, want)
	}
}

// A start whose clock reads before the database's last sweep continues
// from it (once), and slews back like a step; a clock that is not behind,
// or behind by less than ClockStepLogged, is left alone. Without a
// monotonic clock (a test's hand-set clock) nothing moves.
func TestClockNotBefore(t *testing.T) {
	f := &fakeClocks{wall: clockT0}
	c, log := newTestClock(f)
	c.notBefore(clockT0.Add(-time.Hour), "x")
	c.notBefore(clockT0.Add(500*time.Millisecond), "x")
	if c.lead() != 0 {
		t.Fatalf("lead %v, want none", c.lead())
	}
	c.notBefore(clockT0.Add(10*time.Minute), "the last sweep")
	c.notBefore(clockT0.Add(10*time.Minute), "the last sweep")
	if got := c.now(); !got.Equal(clockT0.Add(10 * time.Minute)) {
		t.Fatalf("after notBefore: %v, want %v", got, clockT0.Add(10*time.Minute))
	}
	if n := strings.Count(log.String(), "behind the last sweep"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, log.String())
	}
	hand := &serviceClock{wall: func() time.Time { return clockT0 }, log: slog.New(slog.DiscardHandler)}
	hand.notBefore(clockT0.Add(time.Hour), "x")
	if got := hand.now(); !got.Equal(clockT0) {
		t.Fatalf("hand-set clock moved to %v", got)
	}
}
