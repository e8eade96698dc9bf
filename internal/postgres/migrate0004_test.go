package postgres_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// A schema from before migration 0004 (one-second count buckets) gets its
// counts folded into minute and hour rows: every window counts what it
// counted before, from the window's minute on.
func TestMigration0004FoldsCounts(t *testing.T) {
	ctx := context.Background()
	schema, u := newSchema(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, u, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	open().Close()
	stmts := []string{
		"DROP TABLE " + schema + ".heartbeat_counts",
		`CREATE TABLE ` + schema + `.heartbeat_counts (host text NOT NULL, schema_version integer NOT NULL, bucket bigint NOT NULL,
			count bigint NOT NULL, PRIMARY KEY (host, schema_version, bucket))`,
		"CREATE INDEX heartbeat_counts_bucket ON " + schema + ".heartbeat_counts (bucket)",
		"DELETE FROM " + schema + ".schema_migrations WHERE version >= 4",
	}
	stmts = append(stmts, storetest.SecondCountsSQL(schema+".heartbeat_counts", schema+".hosts")...)
	for _, q := range stmts {
		if _, err := adminPool(t).Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db := open()
	defer db.Close()
	storetest.SameFoldedCounts(t, db)
}

// The adoption query reads each host's counts through the key, per schema
// version and span: what a window holds, not every row kept for 48 h.
func TestAdoptionUsesCountKey(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, postgres.Options{})
	// 100 hosts, each with a minute row for two days and an hour row an hour.
	for _, q := range []string{
		`INSERT INTO hosts (host, token, last_schema_version, last_seen)
			SELECT 'h' || i, '', 2, 0 FROM generate_series(1, 100) i`,
		`INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count)
			SELECT 'h' || i, 2, 60, m * 60, 1 FROM generate_series(1, 100) i, generate_series(1, 2880) m`,
		`INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count)
			SELECT 'h' || i, 2, 3600, m * 3600, 60 FROM generate_series(1, 100) i, generate_series(1, 48) m`,
		`ANALYZE hosts`, `ANALYZE heartbeat_counts`,
	} {
		if _, err := db.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	text := explain(t, db, postgres.AdoptionSQL, int64(0), int64(47*3600+60), int64(48*3600), warp.MinuteSpan, warp.HourSpan)
	t.Logf("%s", text)
	if !strings.Contains(text, "heartbeat_counts_pkey") || strings.Contains(text, "Seq Scan on heartbeat_counts") {
		t.Errorf("plan does not read the counts through their key:\n%s", text)
	}
}
