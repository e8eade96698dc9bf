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
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// Shape of the charts' benchmark database: 200k events over the last 7
// days — 100k the charts count (lapses by 4 reasons, verdict changes to 4
// verdicts) and 100k they skip (created, claimed, completed) — and the
// heartbeat counts of 1,000 hosts over 48 hours, 4 minute rows and an hour
// row a host and hour (v1 hosts moving to v2).
const (
	chartEvents = 100_000
	chartHosts  = 1_000
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
	reasons := []string{"expired", "no-activity", "agent-exited", "no-heartbeat"}
	tos := []string{"stalled", "silent", "active", "exited"}
	skipped := []warp.EventKind{warp.EventCreated, warp.EventClaimed, warp.EventCompleted}
	span := 7 * 24 * time.Hour
	const batch = 20_000
	for start := 0; start < 2*chartEvents; start += batch {
		err := db.Update(ctx, func(tx warp.Tx) error {
			for i := start; i < start+batch; i++ {
				at := now.Add(-span + time.Duration(i)*(span/(2*chartEvents)))
				e := warp.Event{Ticket: fmt.Sprintf("T-%06d", i/4), Epoch: 1, At: at}
				switch i % 4 {
				case 0:
					e.Kind, e.Data = warp.EventLapsed, map[string]any{"reason": reasons[i/4%4], "host": "h"}
				case 1:
					e.Kind, e.Data = warp.EventVerdictChanged, map[string]any{"from": "active", "to": tos[i/4%4], "host": "h"}
				default:
					e.Kind, e.Data = skipped[i%3], map[string]any{"host": "h"}
				}
				if _, err := tx.AppendEvent(ctx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seed events: %v", err)
		}
	}
	err = db.Update(ctx, func(tx warp.Tx) error {
		for h := range chartHosts {
			for hour := range 48 {
				v := 1
				if hour > 48*h/chartHosts {
					v = 2 // host h moves to v2 at its hour
				}
				for m := 0; m < 60; m += 15 { // heartbeats in 4 minutes of each hour
					c := warp.HeartbeatCount{Host: fmt.Sprintf("host-%04d", h), Token: "t", SchemaVersion: v,
						At: now.Add(-time.Duration(48-hour)*time.Hour + time.Duration(m)*time.Minute), N: 4}
					if _, err := tx.RecordHeartbeat(ctx, c); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed heartbeat counts: %v", err)
	}
	return path
}

// BenchmarkCharts100k measures the charts: the two store reads on SQLite,
// and GET /charts over HTTP with the tallies read on every request
// (ChartsTTL -1) and shared (the default 5 s).
//
//	go test ./internal/dashboard -run '^$' -bench Charts100k -benchtime 100x
func BenchmarkCharts100k(b *testing.B) {
	now := time.Date(2026, 5, 6, 12, 30, 0, 0, time.UTC)
	t0 := time.Now()
	path := seedCharts(b, now)
	b.Logf("seeded %d events and %d hosts × 48 h in %s", 2*chartEvents, chartHosts, time.Since(t0))
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
