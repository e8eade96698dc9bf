package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The sweep reads due leases through the partial index on expires_at, so
// it costs O(due leases), not O(all leases), with and without the grace
// bound and with the row locks.
func TestDueLeasesUsesPartialIndex(t *testing.T) {
	db := openDB(t, postgres.Options{})
	at := newClock().Now()
	loadLeases(t, db, 20_000, 50, at)
	for graces := range 3 {
		args := []any{at.UnixNano(), 1000}
		for range graces {
			args = append(args, at.Add(-3600e9).UnixNano(), at.Add(-7200e9).UnixNano())
		}
		text := explain(t, db, postgres.DueLeasesSQL(graces, true), args...)
		t.Logf("%d graces:\n%s", graces, text)
		if !strings.Contains(text, "leases_held_expires") || strings.Contains(text, "Seq Scan on leases") {
			t.Errorf("%d graces: plan does not read leases through leases_held_expires:\n%s", graces, text)
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

// A heartbeat batch reads and updates its leases through the keys of
// tickets and leases, not by scanning either table: on a small table (a
// thousand leases here) the planner would otherwise scan both and join
// them by hash, for a few dozen rows.
func TestHeartbeatBatchUsesKeys(t *testing.T) {
	db := openDB(t, postgres.Options{})
	loadLeases(t, db, 1000, 0, newClock().Now())
	var ids []string
	for i := 1; i <= 16; i++ {
		ids = append(ids, fmt.Sprintf("B-%07d", i*37))
	}
	read, update, err := postgres.ExplainBatch(context.Background(), db, ids, true)
	if err != nil {
		t.Fatal(err)
	}
	for what, plan := range map[string]string{"lease read": read, "lease update": update} {
		if strings.Contains(plan, "Seq Scan on leases") || strings.Contains(plan, "Seq Scan on tickets") || strings.Contains(plan, "Hash Join") {
			t.Errorf("%s scans a table or joins by hash:\n%s", what, plan)
		}
	}
	// Without the batch's settings the same statements scan: what the
	// settings are for (if a PostgreSQL chose the keys anyway, this says
	// the settings may go).
	read, update, err = postgres.ExplainBatch(context.Background(), db, ids, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read+update, "Seq Scan") {
		t.Logf("without the settings PostgreSQL chose no sequential scan either:\n%s\n%s", read, update)
	}
}

// A rare verdict's listing reads its candidates through the partial index
// of recorded verdicts and the due leases' index, a small host's through
// its held leases' index: neither walks the tickets.
func TestListingFromCandidatesUsesIndexes(t *testing.T) {
	db := openDB(t, postgres.Options{})
	at := newClock().Now()
	loadLeases(t, db, 20_000, 50, at)
	if _, err := db.Pool().Exec(context.Background(), `UPDATE leases SET recorded_verdict = 'stalled' WHERE ticket <= 'B-0000020'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(context.Background(), "ANALYZE leases"); err != nil {
		t.Fatal(err)
	}
	b := warp.DefaultPolicy().Bounds(warp.VerdictStalled, at)
	q, args := postgres.TicketsSQL(warp.TicketFilter{State: warp.TicketClaimed, Verdict: &b, Limit: 100, RareVerdict: warp.VerdictStalled, DueBy: at})
	text := explain(t, db, q, args...)
	if !strings.Contains(text, "leases_held_rare_verdict") || !strings.Contains(text, "leases_held_verdict_due") ||
		strings.Contains(text, "Seq Scan on tickets") || strings.Contains(text, "Seq Scan on leases") {
		t.Errorf("plan does not start from the rare verdict's candidates:\n%s", text)
	}
	// A small host's listing starts from its held leases.
	if _, err := db.Pool().Exec(context.Background(), `UPDATE leases SET host = 'small' WHERE ticket <= 'B-0000010'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(context.Background(), "ANALYZE leases"); err != nil {
		t.Fatal(err)
	}
	q, args = postgres.TicketsSQL(warp.TicketFilter{Host: "small", Limit: 100, HostFirst: true})
	text = explain(t, db, q, args...)
	if !strings.Contains(text, "leases_held_host") || strings.Contains(text, "Seq Scan on tickets") || strings.Contains(text, "Seq Scan on leases") {
		t.Errorf("plan does not start from the host's leases:\n%s", text)
	}
}
