package warp_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// beat sends a v2 heartbeat of fresh activity for the lease of v.
func beat(t *testing.T, svc *warp.Service, v warp.TicketView) {
	t.Helper()
	if _, err := svc.Heartbeat(context.Background(), warp.Heartbeat{SchemaVersion: 2, Ticket: v.Lease.Ticket, Epoch: v.Lease.Epoch,
		Host: v.Lease.Host, Agent: v.Lease.Agent}); err != nil {
		t.Fatalf("heartbeat %s: %v", v.Lease.Ticket, err)
	}
}

func lapsedIDs(res warp.SweepResult) map[string]bool {
	out := map[string]bool{}
	for _, l := range res.Lapsed {
		out[l.Ticket] = true
	}
	return out
}

// A gap in the sweeps longer than three sweep intervals (warp frozen for
// twice the window, an 8-hour laptop sleep, a database it could not
// write) lapses no lease for the time warp could not observe: the healthy
// leases, whose loops could not reach it, are kept until the grace ends;
// a lease already due when the gap began lapses at the first sweep; a
// lease whose agent died during the gap lapses when the grace ends.
func TestGapInSweepsLapsesNoHealthyLease(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	clk := storetest.NewClock(t0)
	p := warp.DefaultPolicy() // window 30m, grace 10m, sweeps every 30s
	svc := startInstance(t, db, p, clk, "A")
	clk.Advance(p.StartupGrace + time.Minute) // past the start's own grace
	mustClaim(t, svc, "T-dead")               // its agent never beats again
	clk.Advance(20 * time.Minute)
	healthy := mustClaim(t, svc, "T-healthy")
	diesInGap := mustClaim(t, svc, "T-dies")
	for range 22 { // 11 minutes of sweeps every 30 s, the healthy leases beating
		clk.Advance(30 * time.Second)
		beat(t, svc, healthy)
		beat(t, svc, diesInGap)
		if _, err := svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := svc.Ticket(ctx, "T-dead"); v.Lease.State != warp.LeaseLapsed {
		t.Fatalf("T-dead before the gap: %s, want lapsed", v.Lease.State)
	}
	mustClaim(t, svc, "T-dead2") // dead too: due 30 min from now, inside the gap

	clk.Advance(8 * time.Hour) // frozen: no sweep, no heartbeat reached warp
	res, err := svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := lapsedIDs(res); len(got) != 0 {
		t.Fatalf("first sweep after the gap lapsed %v, want none", got)
	}
	// The loops come back: the healthy lease beats, the other never does.
	clk.Advance(time.Minute)
	beat(t, svc, healthy)
	if res, err := svc.Sweep(ctx); err != nil || len(res.Lapsed) != 0 {
		t.Fatalf("sweep in the grace: %v, %v", lapsedIDs(res), err)
	}
	clk.Advance(p.StartupGrace) // the grace is over (and a sweep interval)
	res, err = svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := lapsedIDs(res)
	if !got["T-dies"] || !got["T-dead2"] || got["T-healthy"] || len(got) != 2 {
		t.Fatalf("sweep after the grace lapsed %v, want T-dies and T-dead2 only", got)
	}
}

// However often warp restarts (here every 6 s with a 10 s grace, sweeping
// every 500 ms while it runs), a dead lease lapses within window + grace +
// one sweep of its last evidence: each run's sweeps move the last sweep
// on, and a restart protects only what was not due at it.
func TestCrashLoopStillReclaimsDeadWork(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	clk := storetest.NewClock(t0)
	p := warp.DefaultPolicy()
	p.LeaseWindow, p.StartupGrace = 20*time.Second, 10*time.Second
	start := func() *warp.Service {
		svc, err := warp.NewService(db, warp.Config{Policy: p, Now: clk.Now, Instance: "A", SweepInterval: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Init(ctx); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := start()
	mustClaim(t, svc, "T-dead")
	lastEvidence := clk.Now()
	limit := p.LeaseWindow + p.StartupGrace + 500*time.Millisecond
	for clk.Now().Sub(lastEvidence) <= limit+6*time.Second {
		for range 12 { // one run: 6 s of sweeps every 500 ms
			clk.Advance(500 * time.Millisecond)
			res, err := svc.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Lapsed) == 1 {
				if at := res.Lapsed[0].EndedAt.Sub(lastEvidence); at > limit {
					t.Fatalf("lapsed %v after its last evidence, want within window + grace + a sweep (%v)", at, limit)
				}
				svc.Close()
				return
			}
		}
		svc.Close() // kill -9 and restart
		svc = start()
	}
	svc.Close()
	t.Fatalf("T-dead still held %v after its last evidence while warp restarted every 6 s", clk.Now().Sub(lastEvidence))
}
