package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// BenchmarkTallies measures the charts' reads over storetest.SeedCharts
// (200k events over 7 days, heartbeat counts of 1,000 hosts × 48 h).
//
//	WARP_TEST_POSTGRES=... go test ./internal/postgres -run '^$' -bench Tallies -benchtime 50x
func BenchmarkTallies(b *testing.B) {
	db := openDB(b, postgres.Options{})
	ctx := context.Background()
	now := time.Date(2026, 5, 6, 12, 30, 0, 0, time.UTC)
	start := time.Now()
	if err := storetest.SeedCharts(ctx, db, now); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded in %s", time.Since(start))
	kinds := []warp.EventKind{warp.EventVerdictChanged, warp.EventLapsed}
	for _, c := range []struct {
		name string
		read func(tx warp.Tx) (int, error)
	}{
		{"EventTallies-24h", func(tx warp.Tx) (int, error) {
			r, err := tx.EventTallies(ctx, kinds, now.Add(-24*time.Hour), warp.MaxTallyRows)
			return len(r), err
		}},
		{"EventTallies-7d", func(tx warp.Tx) (int, error) {
			r, err := tx.EventTallies(ctx, kinds, now.Add(-7*24*time.Hour), warp.MaxTallyRows)
			return len(r), err
		}},
		{"HostsBySchemaPerHour-24h", func(tx warp.Tx) (int, error) {
			r, err := tx.HostsBySchemaPerHour(ctx, now.Add(-24*time.Hour), warp.MaxTallyRows)
			return len(r), err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := db.View(ctx, func(tx warp.Tx) error {
					n, err := c.read(tx)
					if err == nil && n < 24 {
						b.Fatalf("%d rows", n)
					}
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
