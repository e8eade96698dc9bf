package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The benchmarks have the shape of internal/sqlite's, so the figures sit
// side by side: same lease counts, ids, hosts and operations.

// loadLeases fills a fresh store with n claimed tickets B-0000001... whose
// held leases expire an hour after at, except the first due ones, which
// are already due at at. It writes the rows with set-based SQL: what a
// fleet of claims would have left, without n round trips.
func loadLeases(tb testing.TB, db *postgres.DB, n, due int, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	stmts := []string{
		`INSERT INTO tickets (id, title, state, epoch, created_at, updated_at)
		SELECT 'B-' || lpad(i::text, 7, '0'), 'bench', 'claimed', 1, $2::bigint, $2::bigint
		FROM generate_series(1, $1) i WHERE $3::int >= 0`,
		`INSERT INTO leases (ticket, epoch, agent, host, state, claimed_at, last_heartbeat_at, last_activity_at,
			progress_at, refreshed_at, expires_at, verdict_due_at)
		SELECT 'B-' || lpad(i::text, 7, '0'), 1, 'agent', 'bench-host', 'held', $2::bigint, $2, $2, $2, $2,
			CASE WHEN i <= $3 THEN $2::bigint - 1000000000 ELSE $2::bigint + 3600000000000 END,
			$2::bigint + 540000000001
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

// reviveLeases puts the first due bulk leases back to held and due.
func reviveLeases(tb testing.TB, db *postgres.DB, due int) {
	tb.Helper()
	for _, q := range []string{
		`UPDATE leases SET state = 'held', ended_at = 0, end_reason = '', fallback_extended = false
		WHERE ticket IN (SELECT 'B-' || lpad(i::text, 7, '0') FROM generate_series(1, $1) i)`,
		`UPDATE tickets SET state = 'claimed' WHERE id IN (SELECT 'B-' || lpad(i::text, 7, '0') FROM generate_series(1, $1) i)`,
	} {
		if _, err := db.Pool().Exec(context.Background(), q, due); err != nil {
			tb.Fatal(err)
		}
	}
}

// bulkStore is a store with n bulk leases (due of them expired), built on
// first use and kept for every round of a sub-benchmark: the parent owns
// the schema, so the costly setup happens once and outside every timed round.
type bulkStore struct {
	parent *testing.B
	n, due int
	db     *postgres.DB
	svc    *warp.Service
}

func (s *bulkStore) get() (*postgres.DB, *warp.Service) {
	if s.db == nil {
		s.db = openDB(s.parent, postgres.Options{MaxConns: 16})
		c := newClock()
		var err error
		if s.svc, err = warp.NewService(s.db, warp.Config{Now: c.Now}); err != nil {
			s.parent.Fatal(err)
		}
		if err := s.svc.Init(context.Background()); err != nil {
			s.parent.Fatal(err)
		}
		loadLeases(s.parent, s.db, s.n, s.due, c.Now())
	}
	return s.db, s.svc
}

// BenchmarkHeartbeat measures v2 heartbeat ingest through the Service on
// held leases, round-robin: one op is one heartbeat (one READ COMMITTED
// transaction: ticket and lease locked and read, heartbeat counted, lease
// updated, commit). parallel runs 16 × GOMAXPROCS clients on a pool of 16.
func BenchmarkHeartbeat(b *testing.B) {
	for _, leases := range []int{1000, 100000} {
		bs := &bulkStore{parent: b, n: leases}
		b.Run(fmt.Sprintf("leases=%d", leases), func(b *testing.B) {
			if leases > 1000 && testing.Short() {
				b.Skip("100k leases: skipped under -short")
			}
			ctx := context.Background()
			_, svc := bs.get()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("B-%07d", i%leases+1)
				if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "bench-host", ActivityAge: 3}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
		})
	}
	// parallel: every heartbeat from one host (as internal/sqlite's), so
	// they queue on that host's adoption rows; hosts=50 spreads them as a
	// fleet would.
	const leases = 1000
	bs := &bulkStore{parent: b, n: leases}
	for _, hosts := range []int{1, 50} {
		name := "leases=1000/parallel"
		if hosts > 1 {
			name += fmt.Sprintf("/hosts=%d", hosts)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			_, svc := bs.get()
			var next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := next.Add(1)
					id := fmt.Sprintf("B-%07d", n%leases+1)
					host := "bench-host"
					if hosts > 1 {
						host = fmt.Sprintf("bench-host-%d", n%int64(hosts))
					}
					if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: host, ActivityAge: 3}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
		})
	}
}

// BenchmarkSweep measures one Sweep lapsing 1k due leases among 10k and
// 1M held ones: one op is one sweep. The cost should not grow with the
// held leases that are not due (the partial index on expires_at). Between
// ops the 1k leases are put back to held, outside the timer.
func BenchmarkSweep(b *testing.B) {
	const due = 1000
	for _, active := range []int{10000, 1000000} {
		bs := &bulkStore{parent: b, n: active, due: due}
		b.Run(fmt.Sprintf("active=%d/due=%d", active, due), func(b *testing.B) {
			if active > 100000 && testing.Short() {
				b.Skip("1M leases: skipped under -short")
			}
			ctx := context.Background()
			db, svc := bs.get()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := svc.Sweep(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Lapsed) != due {
					b.Fatalf("sweep lapsed %d, want %d", len(res.Lapsed), due)
				}
				b.StopTimer()
				reviveLeases(b, db, due)
				b.StartTimer()
			}
			b.ReportMetric(float64(due*b.N)/b.Elapsed().Seconds(), "lapsed/s")
		})
	}
}

// BenchmarkDueLeases measures the sweep's query alone (locking, inside
// Update, as the sweep runs it) with nothing due among the held leases:
// the O(due) claim.
func BenchmarkDueLeases(b *testing.B) {
	for _, active := range []int{10000, 1000000} {
		bs := &bulkStore{parent: b, n: active}
		b.Run(fmt.Sprintf("active=%d/due=0", active), func(b *testing.B) {
			if active > 100000 && testing.Short() {
				b.Skip("1M leases: skipped under -short")
			}
			ctx := context.Background()
			db, svc := bs.get()
			now := svc.Now().Add(time.Minute)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := db.Update(ctx, func(tx warp.Tx) error {
					ls, err := tx.DueLeases(ctx, warp.DueFilter{Now: now}, 1000)
					if len(ls) != 0 {
						return fmt.Errorf("%d due, want 0", len(ls))
					}
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeartbeatReplicas measures parallel v2 heartbeats (50 hosts,
// 1000 leases) through one warp Service and through two, each with its own
// connection pool on the same schema, as two replicas would share one
// database: one op is one heartbeat. Both pools together hold 16
// connections, as the one replica's does.
func BenchmarkHeartbeatReplicas(b *testing.B) {
	const leases, hosts = 1000, 50
	_, u := newSchema(b)
	open := func(conns int32) (*postgres.DB, *warp.Service) {
		db, err := postgres.Open(context.Background(), u, postgres.Options{MaxConns: conns, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		c := newClock()
		svc, err := warp.NewService(db, warp.Config{Now: c.Now})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { svc.Close() })
		if err := svc.Init(context.Background()); err != nil {
			b.Fatal(err)
		}
		return db, svc
	}
	db, one := open(16)
	loadLeases(b, db, leases, 0, newClock().Now())
	_, a := open(8)
	_, c := open(8)
	for _, tc := range []struct {
		name string
		svcs []*warp.Service
	}{{"replicas=1", []*warp.Service{one}}, {"replicas=2", []*warp.Service{a, c}}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := next.Add(1)
					svc := tc.svcs[n%int64(len(tc.svcs))]
					id := fmt.Sprintf("B-%07d", n%leases+1)
					host := fmt.Sprintf("bench-host-%d", n%hosts)
					if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: host, ActivityAge: 3}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
		})
	}
}

// BenchmarkAdoption measures the adoption read (GET /v1/adoption's store
// query, a 24 h window) over 48 h of counts — what is kept — of hosts that
// each heartbeated every second: per host a minute row a minute and an
// hour row an hour. One op is one read of every host.
func BenchmarkAdoption(b *testing.B) {
	for _, hosts := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			ctx := context.Background()
			db := openDB(b, postgres.Options{})
			now := newClock().Now().Truncate(time.Hour)
			start := now.Add(-48 * time.Hour).Unix()
			for _, q := range []string{
				fmt.Sprintf(`INSERT INTO hosts (host, token, last_schema_version, last_seen)
					SELECT 'host-' || i, '', 2, %d FROM generate_series(1, %d) i`, now.UnixNano(), hosts),
				fmt.Sprintf(`INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count)
					SELECT 'host-' || i, 2, 60, t, 60 FROM generate_series(1, %d) i, generate_series(%d, %d, 60) t`, hosts, start, now.Unix()-60),
				fmt.Sprintf(`INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count)
					SELECT 'host-' || i, 2, 3600, t, 3600 FROM generate_series(1, %d) i, generate_series(%d, %d, 3600) t`, hosts, start, now.Unix()-3600),
				`ANALYZE hosts`, `ANALYZE heartbeat_counts`,
			} {
				if _, err := db.Pool().Exec(ctx, q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			storetest.BenchAdoptionRead(b, db, hosts, now)
		})
	}
}
