package sqlite_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// benchService opens a store on a new file with a Service on a fixed
// clock at T0, initialised.
func benchService(b *testing.B) (*sqlite.DB, *warp.Service) {
	b.Helper()
	db := MustOpen(b)
	clock := storetest.NewClock(storetest.T0())
	svc, err := warp.NewService(db, warp.Config{Policy: storetest.Policy(), Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	return db, svc
}

// bulkStore is a store with n bulk leases (due of them expired), built on
// first use and kept for every round of a sub-benchmark (b.Run calls its
// function again for each b.N): the parent owns the file, so the costly
// setup happens once and outside every timed round.
type bulkStore struct {
	parent *testing.B
	n, due int
	db     *sqlite.DB
	svc    *warp.Service
}

func (s *bulkStore) get() (*sqlite.DB, *warp.Service) {
	if s.db == nil {
		s.db, s.svc = benchService(s.parent)
		if err := s.db.BulkInsertLeases(context.Background(), s.n, s.due, s.svc.Now()); err != nil {
			s.parent.Fatal(err)
		}
		// The insert's frames into the file, synced, and the WAL empty:
		// the first timed round does not pay for the setup's checkpoint.
		if err := s.db.Exec(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			s.parent.Fatal(err)
		}
	}
	return s.db, s.svc
}

// BenchmarkHeartbeat measures v2 heartbeat ingest through the Service on
// held leases, round-robin: one op is one heartbeat (one write
// transaction: ticket and lease read, heartbeat count, lease update).
func BenchmarkHeartbeat(b *testing.B) {
	for _, leases := range []int{1000, 100000} {
		for _, sync := range []string{"NORMAL", "FULL"} {
			if sync == "FULL" && leases != 1000 {
				continue
			}
			bs := &bulkStore{parent: b, n: leases}
			b.Run(fmt.Sprintf("leases=%d/synchronous=%s", leases, sync), func(b *testing.B) {
				ctx := context.Background()
				db, svc := bs.get()
				if err := db.SetSynchronous(ctx, sync); err != nil {
					b.Fatal(err)
				}
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
	}
	const leases = 1000
	bs := &bulkStore{parent: b, n: leases}
	b.Run("leases=1000/parallel", func(b *testing.B) {
		ctx := context.Background()
		_, svc := bs.get()
		var next atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := fmt.Sprintf("B-%07d", next.Add(1)%leases+1)
				if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "bench-host", ActivityAge: 3}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
	})
}

// BenchmarkHeartbeatLatency measures heartbeat latency at 1M held leases
// under the load they make at the default interval (4,167 heartbeats a
// second), paced, from 64 clients, leases in random order: a heartbeat
// writes pages no other heartbeat of its batch shares. With
// the checkpointer's WAL restarts and without (restart=off: the writer's
// own checkpoint at WriterCheckpointPages, which copies and syncs inside
// a commit). One op is one heartbeat; p50-ms and p99-ms are the figures:
//
//	go test ./internal/sqlite -run '^$' -bench HeartbeatLatency -benchtime 64000x -count 2
func BenchmarkHeartbeatLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("1M leases: skipped under -short")
	}
	const leases, clients, rate = 1_000_000, 64, 4167
	for _, restart := range []bool{true, false} {
		bs := &bulkStore{parent: b, n: leases}
		b.Run(fmt.Sprintf("restart=%s", map[bool]string{true: "on", false: "off"}[restart]), func(b *testing.B) {
			if !restart {
				old := sqlite.RestartFrames
				sqlite.RestartFrames = math.MaxInt64
				defer func() { sqlite.RestartFrames = old }()
			}
			ctx := context.Background()
			_, svc := bs.get()
			pace := time.Second * clients / rate // between two heartbeats of a client
			lat := make([][]time.Duration, clients)
			var wg sync.WaitGroup
			b.ResetTimer()
			for c := range clients {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(c), 1))
					next := time.Now()
					for i := c; i < b.N; i += clients {
						next = next.Add(pace)
						time.Sleep(time.Until(next))
						id := fmt.Sprintf("B-%07d", r.IntN(leases)+1)
						start := time.Now()
						if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "bench-host", ActivityAge: 3}); err != nil {
							b.Error(err)
							return
						}
						lat[c] = append(lat[c], time.Since(start))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "heartbeats/s")
			b.ReportMetric(float64(all[len(all)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100])/1e6, "p99-ms")
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
				if err := db.ReviveBulkLeases(ctx, due); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(due*b.N)/b.Elapsed().Seconds(), "lapsed/s")
		})
	}
}

// BenchmarkDueLeases measures the sweep's query alone (no writes) with
// nothing due among the held leases: the O(due) claim.
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
				if err := db.View(ctx, func(tx warp.Tx) error {
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

// BenchmarkAdoption measures the adoption read (GET /v1/adoption's store
// query, a 24 h window) over 48 h of counts — what is kept — of hosts that
// each heartbeated every second: per host and schema version a minute row
// a minute and an hour row an hour. One op is one read of every host.
func BenchmarkAdoption(b *testing.B) {
	for _, hosts := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			path := b.TempDir() + "/warp.db"
			now := storetest.T0()
			mustOpenPath(b, path).Close()
			start := now.Add(-48 * time.Hour).Unix()
			rawExec(b, path,
				fmt.Sprintf(`WITH RECURSIVE h(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM h WHERE i < %d)
					INSERT INTO hosts (host, token, last_schema_version, last_seen) SELECT 'host-' || i, '', 2, %d FROM h`, hosts, now.UnixNano()),
				fmt.Sprintf(`WITH RECURSIVE h(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM h WHERE i < %d),
					m(t) AS (SELECT %d UNION ALL SELECT t + 60 FROM m WHERE t + 60 < %d)
					INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count) SELECT 'host-' || i, 2, 60, t, 60 FROM h, m`, hosts, start, now.Unix()),
				fmt.Sprintf(`WITH RECURSIVE h(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM h WHERE i < %d),
					m(t) AS (SELECT %d UNION ALL SELECT t + 3600 FROM m WHERE t + 3600 < %d)
					INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count) SELECT 'host-' || i, 2, 3600, t, 3600 FROM h, m`, hosts, start, now.Unix()),
			)
			storetest.BenchAdoptionRead(b, mustOpenPath(b, path), hosts, now)
		})
	}
}
