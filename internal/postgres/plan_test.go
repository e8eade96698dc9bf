package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
)

// The sweep reads due leases through the partial index on expires_at, so
// it costs O(due leases), not O(all leases), with and without the grace
// bound and with the row locks.
func TestDueLeasesUsesPartialIndex(t *testing.T) {
	db := openDB(t, postgres.Options{})
	at := newClock().Now()
	loadLeases(t, db, 20_000, 50, at)
	ctx := context.Background()
	for _, grace := range []bool{false, true} {
		args := []any{at.UnixNano(), 1000}
		if grace {
			args = append(args, at.Add(-3600e9).UnixNano())
		}
		rows, err := db.Pool().Query(ctx, "EXPLAIN "+postgres.DueLeasesSQL(grace, true), args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		t.Logf("grace %v:\n%s", grace, text)
		if !strings.Contains(text, "leases_held_expires") || strings.Contains(text, "Seq Scan on leases") {
			t.Errorf("grace %v: plan does not read leases through leases_held_expires:\n%s", grace, text)
		}
	}
}
