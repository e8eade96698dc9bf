package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/groupcommit"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// BenchmarkIngestLinger measures warp's SQLite ingest under warpbench's
// generator (64 clients, 1,000 leases over 50 hosts) with the group
// commit's linger off and at its default (-count repeats each in turn;
// heartbeats/s is the figure, ns/op includes the generator's warm-up):
//
//	go test ./internal/tools/bench -run '^$' -bench IngestLinger -benchtime 20000x -count 3
func BenchmarkIngestLinger(b *testing.B) {
	for _, c := range []struct {
		name   string
		linger time.Duration
	}{{"off", -1}, {"default", 0}} {
		b.Run("linger="+c.name, func(b *testing.B) {
			ctx := context.Background()
			cfg := Config{Gyrum: "unused", Requests: b.N, Concurrency: 64}
			if err := cfg.defaults(); err != nil {
				b.Fatal(err)
			}
			db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "warp.db"))
			if err != nil {
				b.Fatal(err)
			}
			ws, err := startWarpOn(ctx, db, warp.Config{}, groupcommit.Config{Linger: c.linger}, cfg.IngestLeases, 50, true, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.close()
			b.ResetTimer()
			r, err := load(ctx, cfg, fmt.Sprintf("warp, linger %s", c.name), ws.url(), "", 50, nil)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if r.Errors > 0 {
				b.Fatalf("%d of %d heartbeats failed", r.Errors, r.Requests+r.Errors)
			}
			b.ReportMetric(r.PerSecond, "heartbeats/s")
			b.ReportMetric(r.P50Ms, "p50-ms")
			b.ReportMetric(r.P99Ms, "p99-ms")
		})
	}
}
