package heartbeat_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// partitioned starts a warp with lease window w and real sweeps, a loop
// of a working agent behind a Partition (interval w/20, an exchange's
// timeout w/10: the ratios of window 20 s, tick 1 s and a 2 s timeout),
// and returns them with the ticket.
func partitioned(t *testing.T, w time.Duration) (*warpServer, *warptest.Partition, *running, gyrumdir.Dir, string) {
	t.Helper()
	pol := warp.DefaultPolicy()
	pol.LeaseWindow, pol.StartupGrace = w, 0
	pol.StallAfter, pol.SilentAfter = time.Hour, time.Hour
	ws := warptest.StartWithPolicy(t, pol)
	startSweeps(t, ws.Svc)
	part := warptest.StartPartition(t, strings.TrimPrefix(ws.URL(), "http://"))
	const ticket = "T-part"
	_, parent := watched(t)
	d := worktree(t, ws, ticket, ws.Claim(ticket, "A"), parent)
	iv, timeout := w/20, w/10
	r := startLoop(t, d, func(c *heartbeat.Config) {
		c.Durations = heartbeat.Durations{Interval: iv, Staleness: time.Hour, InFlightMax: time.Hour}
		c.Timeout = timeout
		c.API = heartbeat.NewAPI(part.URL(), "", "", timeout)
	})
	// The loop's first answer, as the loop took it (a loaded machine can
	// time the loop out on an answer warp gave): from it the loop holds
	// a deadline, which both tests are about.
	waitFor(t, "the loop's first answer", func() bool { return !r.state().ExpiresAt.IsZero() })
	return ws, part, r, d, ticket
}

// A partition shorter than the window costs no lease: the failing loop
// plans its retries before the expires_at it holds, so one falls after
// the heal and before the lease lapses. Before, it backed off up to four
// intervals whatever its lease said, and came back after it lapsed (10 of
// 16 leases lost to a 15 s cut of a 20 s window).
func TestPartitionShorterThanTheWindowLosesNoLease(t *testing.T) {
	const w = 6 * time.Second
	ws, part, r, _, ticket := partitioned(t, w)
	part.Cut()
	cut := time.Now()
	waitFor(t, "a failed attempt", func() bool { return r.state().Failures >= 1 })
	time.Sleep(w*4/5 - time.Since(cut)) // the cut lasts 0.8 of the window
	part.Heal()
	healed := time.Now()
	warptest.WaitFor(t, "a heartbeat answered after the heal", func() bool {
		for _, b := range ws.Answered() {
			if b.At.After(healed) {
				return true
			}
		}
		return r.exited() != ""
	})
	if e := r.exited(); e != "" {
		t.Fatalf("loop exited (%s) after a %v partition of a %v window", e, healed.Sub(cut).Round(time.Millisecond), w)
	}
	if v := ws.Ticket(ticket); v.Ticket.State != warp.TicketClaimed {
		t.Fatalf("after a %v partition of a %v window: ticket %s, lease %s (%s); waits %v",
			healed.Sub(cut).Round(time.Millisecond), w, v.Ticket.State, v.Lease.State, v.Lease.EndReason, r.sleepLog())
	}
}

// A partition longer than the window: the lease lapses (nothing can tell
// a dead agent from a cut one), and the loop, past the deadline it held,
// retries once an interval, so the agent is told within a tick of the
// heal, not after a backoff of four.
func TestPartitionLongerThanTheWindowTellsTheAgentWithinATick(t *testing.T) {
	const w = 2 * time.Second
	ws, part, r, d, ticket := partitioned(t, w)
	part.Cut()
	warptest.WaitFor(t, "the lease to lapse during the cut", func() bool {
		return ws.Ticket(ticket).Lease.State != warp.LeaseHeld
	})
	// The lease lapsed after the deadline the loop held: every wait the
	// loop chooses from now on is past it (the one under way when the
	// lapse was seen may have been chosen before). Wait for three more
	// attempts, however fast a refused connection fails them.
	n0, f0 := len(r.sleepLog()), r.state().Failures
	waitFor(t, "the loop to wait past the deadline it held", func() bool {
		return r.state().Failures >= f0+3
	})
	n := len(r.sleepLog())
	part.Heal()
	if e := r.wait(); e != heartbeat.ExitLeaseEnded {
		t.Fatalf("exit %q, want %q", e, heartbeat.ExitLeaseEnded)
	}
	if nt, err := d.ReadNotice(); err != nil || nt.How != gyrumdir.EndLapsed {
		t.Fatalf("notice %+v, %v: want a lapsed notice for the agent", nt, err)
	}
	if n <= n0+1 {
		t.Fatalf("no wait chosen past the deadline: waits %v (from %d)", r.sleepLog(), n0)
	}
	for _, s := range r.sleepLog()[n0+1 : n] {
		if s > w/20*11/10 {
			l := ws.Ticket(ticket).Lease
			t.Fatalf("a wait of %v past the lease's end, want at most an interval (%v); waits %v (from %d to %d); the loop's last 200 said expires %v, warp ended the lease at %v (%s, expires_at %v)",
				s, w/20, r.sleepLog(), n0, n, r.state().ExpiresAt.Format("15:04:05.000"), l.EndedAt.Format("15:04:05.000"), l.EndReason, l.ExpiresAt.Format("15:04:05.000"))
		}
	}
}

// clockedAPI is warp seen through a network that drops everything in
// [cutFrom, cutTo): an attempt then costs the loop its whole timeout and
// fails; any other attempt extends the lease by window. The clock is the
// test's: the schedule is checked on the defaults' real lengths (a 30 min
// window, 4 min ticks, a 30 s timeout) without waiting for them.
type clockedAPI struct {
	now            *time.Time
	window         time.Duration
	timeout        time.Duration
	cutFrom, cutTo time.Time
	attempts       []time.Time
	answered       []time.Time
}

func (a *clockedAPI) Heartbeat(context.Context, client.HeartbeatRequest) (client.HeartbeatResponse, error) {
	a.attempts = append(a.attempts, *a.now)
	if !a.now.Before(a.cutFrom) && a.now.Before(a.cutTo) {
		*a.now = a.now.Add(a.timeout)
		return client.HeartbeatResponse{}, errors.New("i/o timeout")
	}
	a.answered = append(a.answered, *a.now)
	return client.HeartbeatResponse{Extended: true, ExpiresAt: a.now.Add(a.window), ExpiresInS: a.window.Seconds()}, nil
}

func (a *clockedAPI) Ticket(context.Context, string) (client.Ticket, error) {
	return client.Ticket{}, errors.New("unused")
}

func (a *clockedAPI) LeaseStatus(context.Context, string, int64) (client.LeaseStatus, error) {
	return client.LeaseStatus{}, errors.New("unused")
}

// A partition of any length up to the window less two ticks, starting
// anywhere within a tick of the last answer, ends with an answer before
// the lease the loop held lapses, when an exchange's timeout is at most
// the interval (the defaults, and any interval of 2 s or more); and the
// issue's scaled run (a 2 s timeout, twice its 1 s tick) holds through
// its 15 s cut of a 20 s window. The old schedule (backoff alone) came
// back after the lease lapsed in the scaled run.
func TestRetryScheduleOutlastsAPartitionShorterThanTheWindow(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-sched", ws.Claim("T-sched", "A"), parent)
	for _, c := range []struct {
		name                string
		window, iv, timeout time.Duration
		lengths             []time.Duration
	}{
		{"defaults", 30 * time.Minute, heartbeat.DefaultInterval, 30 * time.Second,
			[]time.Duration{time.Minute, 10 * time.Minute, 17 * time.Minute, 22 * time.Minute}},
		{"timeout = interval", 20 * time.Second, 2 * time.Second, 2 * time.Second,
			[]time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 16 * time.Second}},
		{"issue's scaled run", 20 * time.Second, time.Second, 2 * time.Second,
			[]time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second}},
	} {
		for _, start := range []time.Duration{c.iv / 100, c.iv / 2, c.iv * 99 / 100} {
			for _, length := range c.lengths {
				for _, jitter := range []float64{0, 0.5, 1} {
					now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
					api := &clockedAPI{now: &now, window: c.window, timeout: c.timeout}
					l, err := heartbeat.New(heartbeat.Config{Dir: d, Registry: gyrumdir.NewRegistry(t.TempDir()),
						Durations: heartbeat.Durations{Interval: c.iv, Staleness: 1000 * time.Hour, InFlightMax: 1000 * time.Hour},
						Timeout:   c.timeout, API: api, Now: func() time.Time { return now }, Rand: func() float64 { return jitter }})
					if err != nil {
						t.Fatal(err)
					}
					if e := l.Tick(context.Background()); e != "" {
						t.Fatalf("first tick: %s", e)
					}
					last := now
					api.cutFrom, api.cutTo = last.Add(start), last.Add(start+length)
					for now.Before(api.cutTo) || len(api.answered) == 1 {
						now = now.Add(l.Delay())
						if e := l.Tick(context.Background()); e != "" {
							t.Fatalf("tick: %s", e)
						}
					}
					if back := api.answered[1]; !back.Before(last.Add(c.window)) {
						t.Errorf("%s: partition of %v from +%v (jitter draw %v): back at +%v, after the lease lapsed at +%v (attempts at %v)",
							c.name, length, start, jitter, back.Sub(last), c.window, offsets(api.attempts, last))
					}
				}
			}
		}
	}
}

// A partition that starts at the claim, before warp ever answered the
// loop, costs no lease either: the loop takes its deadline from lease.json
// (held_until, start-work's reading of the claim's answer) and retries
// before it. Without that deadline (a lease.json of an older gyrum) the
// waits back off to four ticks: a 22-minute partition from the claim came
// back at +30m48s, a 26-minute one as late as +33m12s, past the lease.
func TestRetryScheduleOutlastsAPartitionFromTheClaim(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-first", ws.Claim("T-first", "A"), parent)
	const window, iv, timeout = 30 * time.Minute, heartbeat.DefaultInterval, 30 * time.Second
	for _, length := range []time.Duration{time.Minute, 10 * time.Minute, 22 * time.Minute, 26 * time.Minute} {
		for _, jitter := range []float64{0, 0.5, 1} {
			claim := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
			now := claim
			lease, err := d.ReadLease()
			if err != nil {
				t.Fatal(err)
			}
			lease.HeldUntil = claim.Add(window)
			if err := d.WriteLease(lease); err != nil {
				t.Fatal(err)
			}
			api := &clockedAPI{now: &now, window: window, timeout: timeout, cutFrom: claim, cutTo: claim.Add(length)}
			l, err := heartbeat.New(heartbeat.Config{Dir: d, Registry: gyrumdir.NewRegistry(t.TempDir()),
				Durations: heartbeat.Durations{Interval: iv, Staleness: 1000 * time.Hour, InFlightMax: 1000 * time.Hour},
				Timeout:   timeout, API: api, Now: func() time.Time { return now }, Rand: func() float64 { return jitter }})
			if err != nil {
				t.Fatal(err)
			}
			for len(api.answered) == 0 {
				if e := l.Tick(context.Background()); e != "" {
					t.Fatalf("tick: %s", e)
				}
				if len(api.answered) == 0 {
					now = now.Add(l.Delay())
				}
			}
			if back := api.answered[0]; !back.Before(claim.Add(window)) {
				t.Errorf("partition of %v from the claim (jitter draw %v): first answer at +%v, after the lease lapsed at +%v (attempts at %v)",
					length, jitter, back.Sub(claim), window, offsets(api.attempts, claim))
			}
		}
	}
}

func offsets(ts []time.Time, from time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Sub(from).Round(time.Second))
	}
	return out
}

// A full disk does not swallow the lease-ended notice: the loop that
// cannot write it keeps trying, and once space returns the agent is told.
// Before, the loop exited on the failed write and the agent heard nothing
// (0 notices in 42 tool calls, none 15 s after space returned).
func TestNoticeSurvivesAFullDisk(t *testing.T) {
	fs := warptest.SmallFS(t, "4m")
	ws := newWarp(t)
	_, parent := watched(t)
	root := filepath.Join(fs, "wt")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	d := worktreeIn(t, root, ws, "T-full", ws.Claim("T-full", "A"), parent)
	r := startLoop(t, d, nil)
	waitFor(t, "a heartbeat", func() bool { return ws.Count() >= 1 })
	free := warptest.FillDisk(t, fs)
	lease, err := d.ReadLease()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Svc.Release(context.Background(), "T-full", lease.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	n := ws.Count()
	waitFor(t, "the 410", func() bool {
		for _, b := range ws.Answered()[n:] {
			if b.Status == http.StatusGone {
				return true
			}
		}
		return false
	})
	if _, err := d.ReadNotice(); err == nil {
		t.Fatal("a notice was written on a full disk: the test's disk is not full")
	}
	// Several retries fail while the disk stays full; the loop lives on.
	slept := r.sleepCount()
	waitFor(t, "the loop to sleep between retries", func() bool { return r.sleepCount() >= slept+3 })
	if e := r.exited(); e != "" {
		t.Fatalf("loop exited (%s) with its notice unwritten", e)
	}
	free()
	if e := r.wait(); e != heartbeat.ExitLeaseEnded {
		t.Fatalf("exit %q, want %q", e, heartbeat.ExitLeaseEnded)
	}
	if nt, err := d.ReadNotice(); err != nil || nt.How != gyrumdir.EndReleased {
		t.Fatalf("notice %+v, %v: want the release told once space returned", nt, err)
	}
}
