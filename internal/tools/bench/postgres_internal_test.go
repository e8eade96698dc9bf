package bench

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// warp on a real PostgreSQL answers the load generator, and the bench
// leaves no schema behind.
func TestIngestPostgres(t *testing.T) {
	url := os.Getenv("WARP_TEST_POSTGRES")
	if url == "" {
		t.Skip("WARP_TEST_POSTGRES is unset: no PostgreSQL to measure (.ci/run sets it)")
	}
	ctx := context.Background()
	cfg := Config{Requests: 200, Concurrency: 4, MaxDuration: 30 * time.Second, IngestLeases: 20, PostgresURL: url,
		IngestPairs: 2, Logger: slog.New(slog.DiscardHandler)}
	ns, err := serve(noop())
	if err != nil {
		t.Fatal(err)
	}
	defer ns.close()
	anchors := 0
	anchor := func() (IngestResult, error) {
		anchors++
		return load(ctx, cfg, "no-op Go handler", ns.url(), benchToken, 1, nil)
	}
	r, err := ingestPostgres(ctx, cfg, anchor)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Postgres || r.Hosts != 20 || r.Requests != 200 || r.Errors != 0 || r.PerSecond <= 0 || !strings.Contains(r.Target, "PostgreSQL") {
		t.Errorf("got %+v, want 200 heartbeats answered by warp on PostgreSQL over 20 hosts", r)
	}
	// Two pairs, each warp run after its own no-op run.
	if anchors != 2 || r.Pairs != 2 || r.Anchor <= 0 || r.RatioMin > r.Ratio() || r.Ratio() > r.RatioMax || r.RatioMin <= 0 {
		t.Errorf("pairs: %d anchors run, got %+v (ratio %v), want 2 pairs with the reported ratio within their spread", anchors, r, r.Ratio())
	}
	// PostgreSQL's server spends CPU the process does not see: no CPU ratio.
	if r.CPUPerRequestUs <= 0 || r.AnchorCPUPerRequestUs <= 0 || r.CPURatio() != 0 {
		t.Errorf("CPU per request %v, anchor's %v, ratio %v: want both and no ratio", r.CPUPerRequestUs, r.AnchorCPUPerRequestUs, r.CPURatio())
	}
	// A server on this machine whose processes /proc shows is measured:
	// its backends do the writes, so they spent CPU.
	if local, err := localPostgres(url); err != nil {
		t.Fatal(err)
	} else if _, err := commandCPU("postgres"); local && err == nil {
		if r.PostgresCPUPerRequestUs <= 0 || r.CPURatioWithPostgres() <= 0 || r.CPURatioWithPostgres() >= r.ProcessCPURatio() {
			t.Errorf("PostgreSQL's CPU %v µs a request, ratios %v with it and %v without: want the server's CPU counted", r.PostgresCPUPerRequestUs, r.CPURatioWithPostgres(), r.ProcessCPURatio())
		}
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'warpbench\_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d warpbench schemas left behind", n)
	}
}
