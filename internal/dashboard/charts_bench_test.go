package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

func seedCharts(b *testing.B, now time.Time) string {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "warp.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := storetest.SeedCharts(ctx, db, now); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkCharts100k measures the charts over storetest.SeedCharts: the
// two store reads on SQLite,
// and GET /charts over HTTP with the tallies read on every request
// (ChartsTTL -1) and shared (the default 5 s).
//
//	go test ./internal/dashboard -run '^$' -bench Charts100k -benchtime 100x
func BenchmarkCharts100k(b *testing.B) {
	now := time.Date(2026, 5, 6, 12, 30, 0, 0, time.UTC)
	t0 := time.Now()
	path := seedCharts(b, now)
	b.Logf("seeded %d events and %d hosts × 48 h in %s", 2*storetest.ChartEvents, storetest.ChartHosts, time.Since(t0))
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	kinds := []warp.EventKind{warp.EventVerdictChanged, warp.EventLapsed}
	b.Run("store/EventTallies-24h", func(b *testing.B) {
		for b.Loop() {
			if err := db.View(ctx, func(tx warp.Tx) error {
				rows, err := tx.EventTallies(ctx, kinds, now.Add(-24*time.Hour), warp.MaxTallyRows)
				if err == nil && len(rows) < 24*8 {
					err = fmt.Errorf("%d rows", len(rows))
				}
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store/EventTallies-7d", func(b *testing.B) {
		for b.Loop() {
			if err := db.View(ctx, func(tx warp.Tx) error {
				_, err := tx.EventTallies(ctx, kinds, now.Add(-7*24*time.Hour), warp.MaxTallyRows)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store/HostsBySchemaPerHour-24h", func(b *testing.B) {
		for b.Loop() {
			if err := db.View(ctx, func(tx warp.Tx) error {
				rows, err := tx.HostsBySchemaPerHour(ctx, now.Add(-24*time.Hour), warp.MaxTallyRows)
				if err == nil && len(rows) < 24 {
					err = fmt.Errorf("%d rows", len(rows))
				}
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	serve := func(ttl time.Duration) string {
		s := warpclitest.Start(b, func(c *warpcli.ServeConfig) {
			c.DB = path
			c.Now = func() time.Time { return now }
			c.Dashboard.ChartsTTL = ttl
		})
		return s.URL()
	}
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"http/charts-uncached", -1}, {"http/charts-cached", 0}} {
		url := serve(c.ttl) + "/charts"
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := http.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="chart-lapses" data-empty="false"`) {
					b.Fatalf("GET /charts: %d %v\n%.3000s", resp.StatusCode, err, body)
				}
			}
		})
	}
}
