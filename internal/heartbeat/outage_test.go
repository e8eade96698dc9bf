package heartbeat_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// No outage length loses a healthy lease: warp goes down for twice the
// lease window while a fleet of loops keeps failing and backing off; when
// it comes back (startup grace opened, sweeps running) every loop is back
// before the grace ends, because loops never wait longer than the
// max_retry_gap_s the server told them. With the old cap of four intervals
// (2 s here, against a 1 s grace) leases lapsed at the end of the grace.
func TestOutageOfTwiceTheWindowLosesNoLease(t *testing.T) {
	pol := warp.DefaultPolicy()
	pol.LeaseWindow, pol.StartupGrace = 1500*time.Millisecond, time.Second
	pol.StallAfter, pol.SilentAfter = time.Minute, time.Minute
	ws := warptest.StartWithPolicy(t, pol)
	sweeps := startSweeps(t, ws.Svc)

	dur := heartbeat.Durations{Interval: 500 * time.Millisecond, Staleness: 5 * time.Second, InFlightMax: 10 * time.Second}
	const fleet = 5
	var dirs []gyrumdir.Dir
	for i := range fleet {
		ticket := fmt.Sprintf("T-out-%d", i)
		_, parent := watched(t)
		d := worktree(t, ws, ticket, ws.Claim(ticket, "A"), parent)
		dirs = append(dirs, d)
		startLoop(t, d, func(c *heartbeat.Config) {
			c.Durations = dur
			c.Sleep = nil // real timers, real jitter
		})
	}
	// The agents work all along: their hook touches every 100 ms.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			for _, d := range dirs {
				_ = d.TouchActivity(time.Now())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, "every loop's first answer", func() bool { return len(ws.Answered()) >= fleet })

	sweeps.Close()
	ws.Down()
	time.Sleep(2 * pol.LeaseWindow) // the outage: loops fail and back off
	ws.Up()
	restart := time.Now()
	if err := ws.Svc.Init(context.Background()); err != nil { // what warp serve does at start
		t.Fatal(err)
	}
	startSweeps(t, ws.Svc)
	time.Sleep(pol.StartupGrace + pol.LeaseWindow) // past the grace and one more window

	back := map[string]time.Time{}
	for _, b := range ws.Answered() {
		if b.At.After(restart) && b.Status == 200 {
			if _, ok := back[b.Body.Ticket]; !ok {
				back[b.Body.Ticket] = b.At
			}
		}
	}
	for i := range fleet {
		ticket := fmt.Sprintf("T-out-%d", i)
		v := ws.Ticket(ticket)
		if v.Ticket.State != warp.TicketClaimed {
			t.Errorf("%s: state %s (lease %s, %s) after the outage", ticket, v.Ticket.State, v.Lease.State, v.Lease.EndReason)
		}
		at, ok := back[ticket]
		if !ok {
			t.Errorf("%s: no heartbeat answered after the restart", ticket)
		} else if at.Sub(restart) > pol.StartupGrace {
			t.Errorf("%s: first heartbeat after the restart %v later, want within the %v grace", ticket, at.Sub(restart), pol.StartupGrace)
		}
	}
}

// startSweeps runs the real expiry job on svc every 50 ms until Close or
// the end of the test.
func startSweeps(t *testing.T, svc *warp.Service) *expiry.Job {
	t.Helper()
	j, err := expiry.New(svc, expiry.Config{Interval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}
