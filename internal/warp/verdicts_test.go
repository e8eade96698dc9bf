package warp_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

var t0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func mustService(tb testing.TB) (*warp.Service, *storetest.Clock) {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "warp.db"))
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return serviceOn(tb, db)
}

// postgresService runs the service on a fresh schema of WARP_TEST_POSTGRES,
// dropped at the end; it skips when the variable is unset.
func postgresService(tb testing.TB) (*warp.Service, *storetest.Clock) {
	tb.Helper()
	u := os.Getenv("WARP_TEST_POSTGRES")
	if u == "" {
		tb.Skip("WARP_TEST_POSTGRES is not set: point it at a PostgreSQL server to run the verdict pass on PostgreSQL " +
			"(.ci/run sets it)")
	}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "warp_verdicts_" + hex.EncodeToString(b)
	db, err := postgres.Open(ctx, u, postgres.Options{Schema: schema})
	if err != nil {
		tb.Fatalf("open postgres: %v", err)
	}
	tb.Cleanup(func() {
		db.Close()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return serviceOn(tb, db)
}

func serviceOn(tb testing.TB, db warp.Store) (*warp.Service, *storetest.Clock) {
	tb.Helper()
	ctx := context.Background()
	clk := storetest.NewClock(t0)
	p := warp.DefaultPolicy()
	p.StartupGrace = 0
	svc, err := warp.NewService(db, warp.Config{Policy: p, Now: clk.Now})
	if err != nil {
		tb.Fatalf("new service: %v", err)
	}
	if err := svc.Init(ctx); err != nil {
		tb.Fatalf("init: %v", err)
	}
	tb.Cleanup(func() { svc.Close() })
	storeOf.Store(svc, db)
	return svc, clk
}

// storeOf maps a test's Service to its store, for seeding rows in bulk
// where the Service (sealed) has no way in.
var storeOf sync.Map

func mustClaim(tb testing.TB, svc *warp.Service, id string) warp.TicketView {
	tb.Helper()
	ctx := context.Background()
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id, Title: "title of " + id}); err != nil {
		tb.Fatalf("create %s: %v", id, err)
	}
	v, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "agent-" + id, Host: "host-" + id})
	if err != nil {
		tb.Fatalf("claim %s: %v", id, err)
	}
	return v
}

func mustHeartbeat(tb testing.TB, svc *warp.Service, h warp.Heartbeat) {
	tb.Helper()
	if _, err := svc.Heartbeat(context.Background(), h); err != nil {
		tb.Fatalf("heartbeat %+v: %v", h, err)
	}
}

func verdictEvents(tb testing.TB, svc *warp.Service, id string) []warp.Event {
	tb.Helper()
	evs, err := svc.Events(context.Background(), id, 0, 0)
	if err != nil {
		tb.Fatalf("events %s: %v", id, err)
	}
	var out []warp.Event
	for _, e := range evs {
		if e.Kind == warp.EventVerdictChanged {
			out = append(out, e)
		}
	}
	return out
}

func changeMap(cs []warp.VerdictChange) map[string]warp.VerdictChange {
	m := map[string]warp.VerdictChange{}
	for _, c := range cs {
		m[c.Ticket] = c
	}
	return m
}

func TestRecordVerdicts(t *testing.T) {
	svc, clk := mustService(t)
	testRecordVerdicts(t, svc, clk)
}

func TestRecordVerdictsPostgres(t *testing.T) {
	svc, clk := postgresService(t)
	testRecordVerdicts(t, svc, clk)
}

func testRecordVerdicts(t *testing.T, svc *warp.Service, clk *storetest.Clock) {
	ctx := context.Background()
	p := svc.Policy()
	for _, id := range []string{"A", "B", "C", "D"} {
		mustClaim(t, svc, id)
	}

	// A fresh claim is active and recorded as nothing: no event, no write.
	cs, err := svc.RecordVerdicts(ctx)
	if err != nil {
		t.Fatalf("record verdicts: %v", err)
	}
	if len(cs) != 0 {
		t.Fatalf("changes after claims: got %+v, want none", cs)
	}

	// 16 minutes on: A works, B's loop reports an idle agent, C's loop is
	// gone, D's loop reported the agent exited.
	clk.Advance(16 * time.Minute)
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "A", Epoch: 1, Host: "host-A", ActivityAge: 0})
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "B", Epoch: 1, Host: "host-B", ActivityAge: 16 * 60})
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "D", Epoch: 1, Host: "host-D", Exit: warp.ExitParentExited})
	cs, err = svc.RecordVerdicts(ctx)
	if err != nil {
		t.Fatalf("record verdicts: %v", err)
	}
	got := changeMap(cs)
	want := map[string]struct {
		to    warp.Verdict
		since time.Time
	}{
		"B": {warp.VerdictStalled, t0.Add(p.StallAfter)},
		"C": {warp.VerdictSilent, t0.Add(p.SilentAfter)},
		"D": {warp.VerdictExited, t0.Add(16 * time.Minute)},
	}
	if len(cs) != len(want) {
		t.Fatalf("changes: got %d (%+v), want %d", len(cs), cs, len(want))
	}
	for id, w := range want {
		c, ok := got[id]
		if !ok {
			t.Fatalf("no change for %s in %+v", id, cs)
		}
		if c.From != warp.VerdictActive || c.To != w.to || !c.Since.Equal(w.since) || !c.At.Equal(clk.Now()) ||
			c.Agent != "agent-"+id || c.Host != "host-"+id || c.Epoch != 1 || c.EventID == 0 {
			t.Errorf("change %s: got %+v, want active → %s since %s", id, c, w.to, w.since)
		}
		evs := verdictEvents(t, svc, id)
		if len(evs) != 1 {
			t.Fatalf("verdict events of %s: got %d, want 1", id, len(evs))
		}
		e := evs[0]
		if d, _ := e.Data.(warp.VerdictChangedData); e.ID != c.EventID || e.Epoch != 1 || d.From != warp.VerdictActive || d.To != w.to ||
			!d.Since.Equal(w.since) || d.Host != "host-"+id {
			t.Errorf("event of %s: got %+v", id, e)
		}
		v, err := svc.Ticket(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Lease.RecordedVerdict != w.to {
			t.Errorf("recorded verdict of %s: got %q, want %q", id, v.Lease.RecordedVerdict, w.to)
		}
	}
	if evs := verdictEvents(t, svc, "A"); len(evs) != 0 {
		t.Errorf("A stayed active but has verdict events %+v", evs)
	}

	// A second pass at the same time finds nothing: the verdicts are recorded.
	if cs, err = svc.RecordVerdicts(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("second pass: got %+v, %v; want no changes", cs, err)
	}

	// B's agent comes back; A's lease is released (ended leases are not judged).
	clk.Advance(time.Minute)
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "B", Epoch: 1, Host: "host-B", ActivityAge: 1})
	if _, err := svc.Release(ctx, "A", 1, "done for today"); err != nil {
		t.Fatal(err)
	}
	cs, err = svc.RecordVerdicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Ticket != "B" || cs[0].From != warp.VerdictStalled || cs[0].To != warp.VerdictActive ||
		!cs[0].Since.Equal(clk.Now()) {
		t.Fatalf("comeback: got %+v, want B stalled → active since %s", cs, clk.Now())
	}
	if evs := verdictEvents(t, svc, "B"); len(evs) != 2 || evs[1].Data.(warp.VerdictChangedData).From != warp.VerdictStalled || evs[1].Data.(warp.VerdictChangedData).To != warp.VerdictActive {
		t.Fatalf("B's verdict events: got %+v, want active→stalled, stalled→active", evs)
	}

	// C goes from silent back to active with a v1 heartbeat (the heartbeat
	// stands in for activity on a v1 host).
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 1, Ticket: "C", Host: "host-C"})
	cs, err = svc.RecordVerdicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Ticket != "C" || cs[0].From != warp.VerdictSilent || cs[0].To != warp.VerdictActive {
		t.Fatalf("C back: got %+v, want C silent → active", cs)
	}
}

// TestRecordVerdictsPages checks the pass over more leases than one batch
// records each change exactly once.
func TestRecordVerdictsPages(t *testing.T) {
	svc, clk := mustService(t)
	testRecordVerdictsPages(t, svc, clk)
}

func TestRecordVerdictsPagesPostgres(t *testing.T) {
	svc, clk := postgresService(t)
	testRecordVerdictsPages(t, svc, clk)
}

func testRecordVerdictsPages(t *testing.T, svc *warp.Service, clk *storetest.Clock) {
	ctx := context.Background()
	const n = 1234
	seedHeld(t, svc, n, t0)
	clk.Advance(svc.Policy().SilentAfter + time.Second)
	// Before the pass the counts already say silent (the due leases
	// correct the recorded active), and after it too (recorded).
	wantCounts := func(when string) {
		t.Helper()
		c, err := svc.CountVerdicts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Counts[warp.VerdictSilent] != n || c.Held() != n {
			t.Errorf("%s: counts %v, want %d silent of %d", when, c.Counts, n, n)
		}
	}
	wantCounts("before the pass")
	cs, err := svc.RecordVerdicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != n {
		t.Fatalf("changes: got %d, want %d", len(cs), n)
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Ticket] || c.To != warp.VerdictSilent || c.From != warp.VerdictActive {
			t.Fatalf("change %+v: duplicate or wrong", c)
		}
		seen[c.Ticket] = true
	}
	if cs, err := svc.RecordVerdicts(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("second pass: got %d changes, %v; want 0", len(cs), err)
	}
	wantCounts("after the pass")
}

// seedHeld inserts n claimed tickets with fresh leases at t in one
// transaction, through the store (the claim path would cost n transactions).
func seedHeld(tb testing.TB, svc *warp.Service, n int, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	p := svc.Policy()
	db, _ := storeOf.Load(svc)
	err := db.(warp.Store).Update(ctx, func(tx warp.Tx) error {
		for i := range n {
			id := fmt.Sprintf("S-%06d", i)
			tk, err := tx.CreateTicket(ctx, warp.Ticket{ID: id, Title: "seeded", State: warp.TicketOpen, CreatedAt: at, UpdatedAt: at})
			if err != nil {
				return err
			}
			l := warp.Lease{Ticket: id, Epoch: 1, Agent: "seed", Host: fmt.Sprintf("h%02d", i%50), State: warp.LeaseHeld,
				ClaimedAt: at, LastHeartbeatAt: at, LastActivityAt: at, RefreshedAt: at, SchemaVersion: 2}
			l.ExpiresAt = p.ExpiresAt(warp.ModeTransition, l)
			l.VerdictDueAt = p.VerdictDue(l, at)
			if err := tx.InsertLease(ctx, l); err != nil {
				return err
			}
			tk.State, tk.Epoch = warp.TicketClaimed, 1
			if err := tx.UpdateTicket(ctx, tk); err != nil {
				return err
			}
		}
		for i := range min(n, 50) {
			held := int64(n / 50)
			if i < n%50 {
				held++
			}
			if err := tx.AddVerdictCounts(ctx, fmt.Sprintf("h%02d", i), warp.NewHeldCounts(warp.HookUnknown, held)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("seed %d held leases: %v", n, err)
	}
}

// BenchmarkRecordVerdicts measures one verdict pass over a fleet of held
// leases, with no change to record and with 1% changing per pass, to show
// what the pass costs per lease read and per change written.
func BenchmarkRecordVerdicts(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("held=%d/changes=0", n), func(b *testing.B) {
			svc, _ := mustService(b)
			seedHeld(b, svc, n, t0)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				cs, err := svc.RecordVerdicts(ctx)
				if err != nil || len(cs) != 0 {
					b.Fatalf("got %d changes, %v", len(cs), err)
				}
			}
		})
		b.Run(fmt.Sprintf("held=%d/changes=1pct", n), func(b *testing.B) {
			svc, clk := mustService(b)
			seedHeld(b, svc, n, t0)
			ctx := context.Background()
			var changed int
			for b.Loop() {
				// Between passes (not timed): time moves past the silent
				// threshold and every lease heartbeats except each
				// hundredth one that is still active, so 1% change per pass
				// (going silent, or coming back).
				b.StopTimer()
				clk.Advance(svc.Policy().SilentAfter + time.Second)
				refreshAllBut(b, svc, clk.Now())
				b.StartTimer()
				cs, err := svc.RecordVerdicts(ctx)
				if err != nil {
					b.Fatal(err)
				}
				changed += len(cs)
			}
			b.ReportMetric(float64(changed)/float64(b.N), "changes/op")
		})
	}
}

// refreshAllBut heartbeats every held lease at at, through the store,
// except each hundredth one whose recorded verdict is active: those go
// silent, and come back on the next round.
func refreshAllBut(tb testing.TB, svc *warp.Service, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	db, _ := storeOf.Load(svc)
	err := db.(warp.Store).Update(ctx, func(tx warp.Tx) error {
		after := ""
		for {
			ls, err := tx.HeldLeases(ctx, "", after, 1000)
			if err != nil {
				return err
			}
			for _, l := range ls {
				after = l.Ticket
				var idx int
				if _, err := fmt.Sscanf(l.Ticket, "S-%d", &idx); err != nil {
					return err
				}
				if idx%100 == 0 && l.RecordedVerdict != warp.VerdictSilent {
					continue
				}
				l.LastHeartbeatAt, l.LastActivityAt, l.RefreshedAt = at, at, at
				l.ExpiresAt = svc.Policy().ExpiresAt(warp.ModeTransition, l)
				if err := tx.UpdateLease(ctx, l); err != nil {
					return err
				}
			}
			if len(ls) < 1000 {
				return nil
			}
		}
	})
	if err != nil {
		tb.Fatalf("refresh: %v", err)
	}
}
