package sqlite

import (
	"context"
	"fmt"

	"github.com/gyrum-labs/warp/internal/warp"
)

// DueLeasesSQL is the sweep's query, for the plan test.
const DueLeasesSQL = dueLeasesSQL

// TicketsSQL is the listing query of f, for the plan test.
func TicketsSQL(f warp.TicketFilter) (string, []any) { return ticketsSQL(f) }

// QueryPlan returns the EXPLAIN QUERY PLAN details of query.
func (db *DB) QueryPlan(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return nil, err
		}
		out = append(out, detail)
	}
	return out, rows.Err()
}

// Exec runs a raw statement on the writer, for tests that set up states
// the Service cannot reach.
func (db *DB) Exec(ctx context.Context, query string, args ...any) error {
	_, err := db.w.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	return nil
}
