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
	for _, grace := range []bool{false, true} {
		args := []any{at.UnixNano(), 1000}
		if grace {
			args = append(args, at.Add(-3600e9).UnixNano())
		}
		text := explain(t, db, postgres.DueLeasesSQL(grace, true), args...)
		t.Logf("grace %v:\n%s", grace, text)
		if !strings.Contains(text, "leases_held_expires") || strings.Contains(text, "Seq Scan on leases") {
			t.Errorf("grace %v: plan does not read leases through leases_held_expires:\n%s", grace, text)
		}
	}
}

// The verdict pass reads due leases through the partial index on
// verdict_due_at: O(leases whose verdict changes), not O(held).
func TestVerdictDueUsesPartialIndex(t *testing.T) {
	db := openDB(t, postgres.Options{})
	at := newClock().Now()
	loadLeases(t, db, 20_000, 50, at)
	text := explain(t, db, postgres.VerdictDueSQL(true), at.UnixNano(), 1000)
	if !strings.Contains(text, "leases_held_verdict_due") || strings.Contains(text, "Seq Scan on leases") {
		t.Errorf("plan does not read leases through leases_held_verdict_due:\n%s", text)
	}
}

// explain returns PostgreSQL's plan of query with args, one line per step.
func explain(t *testing.T, db *postgres.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
