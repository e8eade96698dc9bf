package warp_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// restart opens a new Service with policy p on db at clk's time, as a new
// warp serve with other flags would.
func restart(t *testing.T, db warp.Store, p warp.Policy, clk *storetest.Clock) *warp.Service {
	t.Helper()
	return startInstance(t, db, p, clk, "")
}

// startInstance is restart as the replica named instance.
func startInstance(t *testing.T, db warp.Store, p warp.Policy, clk *storetest.Clock, instance string) *warp.Service {
	t.Helper()
	svc, err := warp.NewService(db, warp.Config{Policy: p, Now: clk.Now, Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func openSQLite(t *testing.T) warp.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A restart with a shorter --stall-after: the held leases' verdict-due
// times follow the new threshold, so the counts, the verdict listing and
// the verdict pass agree with the verdict each lease shows.
func TestRestartWithOtherThresholdsMovesVerdictDueTimes(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	svc, clk := serviceOn(t, db)
	mustClaim(t, svc, "T-1")
	svc.Close()

	p := warp.DefaultPolicy()
	p.StartupGrace, p.StallAfter = 0, 5*time.Minute
	svc = restart(t, db, p, clk)
	clk.Advance(7 * time.Minute)
	if v, err := svc.Ticket(ctx, "T-1"); err != nil || v.Verdict != warp.VerdictStalled {
		t.Fatalf("T-1 after 7 min at a 5 min stall threshold: %v %v, want stalled", v.Verdict, err)
	}
	c, err := svc.CountVerdicts(ctx)
	if err != nil || c.Counts[warp.VerdictStalled] != 1 || c.Counts[warp.VerdictActive] != 0 {
		t.Errorf("counts %v (%v), want one stalled", c.Counts, err)
	}
	if pg, err := svc.ListTickets(ctx, warp.ListOptions{Verdict: warp.VerdictStalled}); err != nil || len(pg.Tickets) != 1 {
		t.Errorf("listing stalled: %d tickets (%v), want T-1", len(pg.Tickets), err)
	}
	if vp, err := svc.VerdictPass(ctx); err != nil || len(vp.Changes) != 1 || vp.Changes[0].To != warp.VerdictStalled {
		t.Errorf("verdict pass: %+v (%v), want T-1's change to stalled", vp.Changes, err)
	}

	// A longer --silent-after: a lease recorded silent (no due time left)
	// that is no longer silent under it is due again.
	clk.Advance(time.Hour)
	if _, err := svc.VerdictPass(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := svc.Ticket(ctx, "T-1"); v.Verdict != warp.VerdictSilent {
		t.Fatalf("after an hour without heartbeats: %s, want silent", v.Verdict)
	}
	svc.Close()
	p.SilentAfter = 24 * time.Hour
	svc = restart(t, db, p, clk)
	if vp, err := svc.VerdictPass(ctx); err != nil || len(vp.Changes) != 1 || vp.Changes[0].To != warp.VerdictStalled {
		t.Errorf("verdict pass after raising the silent threshold: %+v (%v), want T-1 back to stalled", vp.Changes, err)
	}
}

// --startup-grace 0 on a restart ends the grace an earlier start opened:
// a due lease lapses at the next sweep.
func TestRestartWithoutGraceEndsTheEarlierOne(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	svc, clk := serviceOn(t, db)
	mustClaim(t, svc, "T-1")
	svc.Close()
	clk.Advance(time.Minute)
	// A start with the default grace: T-1, refreshed before it, is
	// protected for 10 minutes.
	svc = restart(t, db, warp.DefaultPolicy(), clk)
	svc.Close()
	clk.Advance(time.Minute)

	p := warp.DefaultPolicy()
	p.StartupGrace, p.LeaseWindow = 0, time.Minute
	svc = restart(t, db, p, clk)
	clk.Advance(2 * time.Minute)
	res, err := svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lapsed) != 1 {
		t.Fatalf("sweep with a 1 min window and no grace: %d lapsed, want T-1", len(res.Lapsed))
	}
}

// A replica that starts while another sweeps opens no startup grace:
// there was no outage, and a replica restarting over and over must not
// keep every dead agent's lease from lapsing. A restart of the replica
// that swept, or a start after sweeps stopped, opens it.
func TestStartupGraceOnlyAfterAnOutage(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	clk := storetest.NewClock(t0)
	a := startInstance(t, db, warp.DefaultPolicy(), clk, "A") // its own grace ends at +10m
	clk.Advance(time.Minute)
	mustClaim(t, a, "T-1") // due at +31m
	clk.Advance(29 * time.Minute)
	if res, err := a.Sweep(ctx); err != nil || len(res.Lapsed) != 0 {
		t.Fatalf("sweep at +30m: %+v, %v", res.Lapsed, err)
	}
	clk.Advance(20 * time.Second)
	startInstance(t, db, warp.DefaultPolicy(), clk, "B") // replica B (re)starts
	clk.Advance(50 * time.Second)                        // A sweeps on schedule: no gap
	res, err := a.Sweep(ctx)
	if err != nil || len(res.Lapsed) != 1 || res.Lapsed[0].Ticket != "T-1" {
		t.Fatalf("A's sweep after B started: %+v, %v; want T-1 lapsed (B's start is no outage)", res.Lapsed, err)
	}

	// A itself restarts at once (killed, back): it swept last, so this is
	// warp coming back, and the leases refreshed before it are protected.
	mustClaim(t, a, "T-3") // due 30 min from now
	clk.Advance(30*time.Minute - 10*time.Second)
	if res, err := a.Sweep(ctx); err != nil || len(res.Lapsed) != 0 {
		t.Fatalf("sweep just before T-3 is due: %+v, %v", res.Lapsed, err)
	}
	clk.Advance(10 * time.Second)
	a = startInstance(t, db, warp.DefaultPolicy(), clk, "A")
	clk.Advance(time.Minute)
	if res, err := a.Sweep(ctx); err != nil || len(res.Lapsed) != 0 {
		t.Fatalf("sweep a minute after the sweeper's own restart: %+v, %v; want T-3 kept by the grace", res.Lapsed, err)
	}
	clk.Advance(10 * time.Minute)
	if res, err := a.Sweep(ctx); err != nil || len(res.Lapsed) != 1 || res.Lapsed[0].Ticket != "T-3" {
		t.Fatalf("sweep after that grace: %+v, %v; want T-3 lapsed", res.Lapsed, err)
	}

	mustClaim(t, a, "T-2") // due 30 min from now
	clk.Advance(38 * time.Minute)
	// No sweep for 38 minutes: warp was down. Any start now protects the
	// leases refreshed before it, T-2 among them.
	c := startInstance(t, db, warp.DefaultPolicy(), clk, "B")
	clk.Advance(time.Minute)
	if res, err := c.Sweep(ctx); err != nil || len(res.Lapsed) != 0 {
		t.Fatalf("sweep a minute after a start that followed an outage: %+v, %v; want T-2 kept by the grace", res.Lapsed, err)
	}
	clk.Advance(10 * time.Minute)
	if res, err := c.Sweep(ctx); err != nil || len(res.Lapsed) != 1 {
		t.Fatalf("sweep after the grace: %+v, %v; want T-2 lapsed", res.Lapsed, err)
	}
}

// beforeFirstUpdate runs its hook once, before the next Update reaches
// the store: a write another request commits just before a transaction.
type beforeFirstUpdate struct {
	warp.Store
	hook func()
}

func (s *beforeFirstUpdate) Update(ctx context.Context, fn func(warp.Tx) error) error {
	if f := s.hook; f != nil {
		s.hook = nil
		f()
	}
	return s.Store.Update(ctx, fn)
}

// A mode change that commits while a sweep starts: the lapse's reason and
// fallback follow the mode the lease's expiry was computed under (here
// activity, forced while the lease was kept by a v1 heartbeat).
func TestSweepLapsesUnderTheModeOfItsTransaction(t *testing.T) {
	ctx := context.Background()
	hs := &beforeFirstUpdate{Store: openSQLite(t)}
	svc, clk := serviceOn(t, hs)
	mustClaim(t, svc, "T-1")
	clk.Advance(30 * time.Minute)
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}) // transition: kept by the v1 fallback
	clk.Advance(time.Minute)
	hs.hook = func() {
		if _, err := svc.SetMode(ctx, warp.ModeActivity, true); err != nil {
			t.Error(err)
		}
	}
	res, err := svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lapsed) != 1 {
		t.Fatalf("lapsed %+v, want T-1 (due under activity mode)", res.Lapsed)
	}
	if l := res.Lapsed[0]; l.EndReason != warp.LapseNoActivity || l.FallbackExtended {
		t.Errorf("T-1 lapsed as %s, fallback %v; want no-activity without the fallback (activity mode)", l.EndReason, l.FallbackExtended)
	}
}
