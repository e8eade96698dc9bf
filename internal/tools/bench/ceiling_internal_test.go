package bench

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// BenchmarkIngestCeiling measures, under warpbench's generator (64
// clients, 1,000 leases over 50 hosts, b.N requests a run), the no-op
// handler, warp on SQLite as `warp serve` composes it, and the same warp
// whose group commit writes no lease: each batch still begins, reads its
// leases and commits, but the heartbeat columns are never written, so an
// answered heartbeat is not durable. The last is not a product: it is the
// ceiling that a heartbeat which must be on disk when answered stays
// under. Three rounds, each the no-op then the two warps; reported are
// the median rate ratio and CPU ratio (this process's CPU per request,
// the generator's included) of each warp against its round's no-op:
//
//	go test ./internal/tools/bench -run '^$' -bench IngestCeiling -benchtime 40000x
func BenchmarkIngestCeiling(b *testing.B) {
	ctx := context.Background()
	cfg := Config{Gyrum: "unused", Requests: b.N, Concurrency: 64}
	if err := cfg.defaults(); err != nil {
		b.Fatal(err)
	}
	ns, err := serve(noop())
	if err != nil {
		b.Fatal(err)
	}
	defer ns.close()
	urls := map[string]string{"noop": ns.url()}
	for _, target := range []string{"warp", "nowrite"} {
		db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "warp.db"))
		if err != nil {
			b.Fatal(err)
		}
		var store warp.Store = db
		if target == "nowrite" {
			store = noLeaseWrites{db}
		}
		ws, err := startServe(ctx, store, cfg.IngestLeases, 50)
		if err != nil {
			b.Fatal(err)
		}
		defer ws.close()
		urls[target] = ws.url()
	}
	ratios := map[string][]float64{}
	b.ResetTimer()
	for range 3 {
		var anchor IngestResult
		for _, target := range []string{"noop", "warp", "nowrite"} {
			r, err := load(ctx, cfg, target, urls[target], benchToken, 50, nil)
			if err != nil {
				b.Fatal(err)
			}
			if r.Errors > 0 {
				b.Fatalf("%s: %d of %d heartbeats failed", target, r.Errors, r.Requests+r.Errors)
			}
			if target == "noop" {
				anchor = r
				continue
			}
			ratios[target] = append(ratios[target], r.PerSecond/anchor.PerSecond)
			ratios[target+"-cpu"] = append(ratios[target+"-cpu"], anchor.CPUPerRequestUs/r.CPUPerRequestUs)
		}
	}
	b.StopTimer()
	for k, v := range ratios {
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], "ratio-"+k)
	}
}

// noLeaseWrites is a store whose heartbeat batches write no lease (see
// BenchmarkIngestCeiling); everything else goes to the store beneath.
type noLeaseWrites struct{ *sqlite.DB }

func (s noLeaseWrites) Update(ctx context.Context, fn func(warp.Tx) error) error {
	return s.DB.Update(ctx, func(tx warp.Tx) error { return fn(noLeaseWriteTx{tx}) })
}

type noLeaseWriteTx struct{ warp.Tx }

func (t noLeaseWriteTx) WriteBatch(ctx context.Context, _ []warp.Lease, cs []warp.HeartbeatCount) error {
	return t.Tx.WriteBatch(ctx, nil, cs)
}
