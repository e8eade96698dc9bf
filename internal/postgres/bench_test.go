package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// loadLeases fills a fresh store with n claimed tickets whose held leases
// expire an hour after at, except the first due ones, which are already
// due at at. It writes the rows with set-based SQL: what a fleet of claims
// would have left, without n round trips.
func loadLeases(tb testing.TB, db *postgres.DB, n, due int, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	stmts := []string{
		`INSERT INTO tickets (id, title, state, epoch, created_at, updated_at)
		SELECT 'B-' || i, 'bench', 'claimed', 1, $2::bigint, $2::bigint FROM generate_series(1, $1) i WHERE $3 >= 0`,
		`INSERT INTO leases (ticket, epoch, agent, host, state, claimed_at, last_heartbeat_at, last_activity_at,
			progress_at, refreshed_at, expires_at)
		SELECT 'B-' || i, 1, 'agent', 'host-' || (i % 50), 'held', $2::bigint, $2, $2, $2, $2,
			CASE WHEN i <= $3 THEN $2::bigint - 1000000000 ELSE $2::bigint + 3600000000000 END
		FROM generate_series(1, $1) i`,
	}
	var err error
	for _, q := range stmts {
		if _, err = db.Pool().Exec(ctx, q, n, at.UnixNano(), due); err != nil {
			break
		}
	}
	if err == nil {
		_, err = db.Pool().Exec(ctx, "ANALYZE tickets; ANALYZE leases")
	}
	if err != nil {
		tb.Fatalf("load %d leases: %v", n, err)
	}
}

// BenchmarkHeartbeat measures heartbeat ingest: v2 heartbeats through the
// Service on 1000 held leases, from 32 concurrent clients on a pool of 16
// connections (ticket + lease row locks, the lease update, the adoption
// counters, one commit each).
func BenchmarkHeartbeat(b *testing.B) {
	db := openDB(b, postgres.Options{MaxConns: 16})
	c := newClock()
	svc, err := warp.NewService(db, warp.Config{Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	const leases = 1000
	loadLeases(b, db, leases, 0, c.Now())
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(16) // × GOMAXPROCS goroutines
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)%leases + 1
			_, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("B-%d", i), Epoch: 1,
				Host: fmt.Sprintf("host-%d", i%50), ActivityAge: 3})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "heartbeats/s")
}

// BenchmarkSweep measures one sweep over active held leases of which 1000
// are due: it lapses the due ones (lease, ticket, event each) and must not
// pay for the others (the partial index on expires_at).
func BenchmarkSweep(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("active=%d/due=1000", n), func(b *testing.B) {
			if n > 10_000 && testing.Short() {
				b.Skip("1M leases: skipped under -short")
			}
			benchSweep(b, n, 1000)
		})
	}
}

func benchSweep(b *testing.B, n, due int) {
	db := openDB(b, postgres.Options{MaxConns: 4})
	c := newClock()
	svc, err := warp.NewService(db, warp.Config{Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	loadLeases(b, db, n, due, c.Now())
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		res, err := svc.Sweep(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Lapsed) != due {
			b.Fatalf("sweep lapsed %d leases, want %d", len(res.Lapsed), due)
		}
		b.StopTimer()
		// Put the due leases back, as if claimed again and gone quiet.
		for _, q := range []string{
			`UPDATE leases SET state = 'held', ended_at = 0, end_reason = '', fallback_extended = false
			WHERE ticket IN (SELECT 'B-' || i FROM generate_series(1, $1) i)`,
			`UPDATE tickets SET state = 'claimed' WHERE id IN (SELECT 'B-' || i FROM generate_series(1, $1) i)`,
		} {
			if _, err := db.Pool().Exec(ctx, q, due); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(due*b.N)/b.Elapsed().Seconds(), "lapses/s")
}
