package warp_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func TestStaleSince(t *testing.T) {
	p := verdictPolicy() // stall 15m, silent 9m
	ns := time.Nanosecond
	exited := mkLease(2, 14*time.Minute, 0)
	exited.Exit = warp.ExitParentExited
	for _, tc := range []struct {
		name  string
		l     warp.Lease
		now   time.Time
		since time.Duration // from p0
		ok    bool
	}{
		{"fresh", mkLease(2, 14*time.Minute, 14*time.Minute), pAt(16 * time.Minute), 0, false},
		{"stalled while heartbeating", mkLease(2, 14*time.Minute, 0), pAt(16 * time.Minute), 15 * time.Minute, true},
		{"at the stall threshold: not yet", mkLease(2, 14*time.Minute, 0), pAt(15 * time.Minute), 0, false},
		{"stall + 1ns", mkLease(2, 14*time.Minute, 0), pAt(15*time.Minute + ns), 15 * time.Minute, true},
		{"stalled, then silent: still counts", mkLease(2, 14*time.Minute, 0), pAt(40 * time.Minute), 15 * time.Minute, true},
		{"silent before stale: a dead loop", mkLease(2, 5*time.Minute, 0), pAt(40 * time.Minute), 0, false},
		{"silent exactly when stale", mkLease(2, 6*time.Minute, 0), pAt(40 * time.Minute), 15 * time.Minute, true},
		{"unwired with fresh activity", hook(mkLease(2, 14*time.Minute, 14*time.Minute), warp.HookNo), pAt(16 * time.Minute), 15 * time.Minute, true},
		{"hook yes, fresh activity", hook(mkLease(2, 14*time.Minute, 14*time.Minute), warp.HookYes), pAt(16 * time.Minute), 0, false},
		{"exited", exited, pAt(16 * time.Minute), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, ok := p.StaleSince(tc.l, tc.now)
			if ok != tc.ok || (ok && !at.Equal(pAt(tc.since))) {
				t.Errorf("got %v %v, want %v at p0+%s", at, ok, tc.ok, tc.since)
			}
		})
	}
}

func TestHookAlarmValidate(t *testing.T) {
	if err := warp.DefaultHookAlarm().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	for _, a := range []warp.HookAlarm{{Ratio: 0, Min: 3}, {Ratio: 1.01, Min: 3}, {Ratio: -1, Min: 3}, {Ratio: math.NaN(), Min: 3}, {Ratio: 0.5, Min: 0}} {
		if err := a.Validate(); !errors.Is(err, warp.ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", a, err)
		}
	}
	if _, err := warp.NewService(nil, warp.Config{HookAlarm: warp.HookAlarm{Ratio: 2, Min: 3}}); !errors.Is(err, warp.ErrInvalid) {
		t.Errorf("NewService with ratio 2: got %v, want ErrInvalid", err)
	}
}
