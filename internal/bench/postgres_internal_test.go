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
		Logger: slog.New(slog.DiscardHandler)}
	r, err := ingestPostgres(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Postgres || r.Hosts != 20 || r.Requests != 200 || r.Errors != 0 || r.PerSecond <= 0 || !strings.Contains(r.Target, "PostgreSQL") {
		t.Errorf("got %+v, want 200 heartbeats answered by warp on PostgreSQL over 20 hosts", r)
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
