package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gyrum-labs/warp/internal/warp"
)

// DueLeasesSQL exposes the sweep's query to the plan test.
var DueLeasesSQL = dueLeasesSQL

// VerdictDueSQL exposes the verdict pass's query to the plan test.
var VerdictDueSQL = verdictDueSQL

// ExplainBatch returns PostgreSQL's plans of a heartbeat batch's lease
// read (of ids) and lease update (of the same leases, epoch 1), made in a
// write transaction after the batch's plan settings when settings is set,
// without them otherwise. The transaction is rolled back.
func ExplainBatch(ctx context.Context, db *DB, ids []string, settings bool) (read, update string, err error) {
	ptx, err := db.pool.Begin(ctx)
	if err != nil {
		return "", "", err
	}
	defer ptx.Rollback(context.WithoutCancel(ctx))
	if settings {
		if _, err := ptx.Exec(ctx, batchPlanSQL); err != nil {
			return "", "", err
		}
	}
	explain := func(q string, args ...any) (string, error) {
		rows, err := ptx.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			return "", err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		return strings.Join(lines, "\n"), err
	}
	t := &tx{write: true}
	if read, err = explain(t.currentLeasesSQL(), ids); err != nil {
		return "", "", err
	}
	n := len(ids)
	texts, ints, ints32, bools := make([]string, n), make([]int64, n), make([]int32, n), make([]bool, n)
	for i := range ints {
		ints[i] = 1
	}
	update, err = explain(updateLeasesSQL, ids, ints, ints, ints, ints, ints32, texts, ints, ints, ints, bools, texts, ints, texts, ints, ints, texts, ints32, texts, n)
	return read, update, err
}

// AdoptionSQL exposes the adoption query to the plan test.
var AdoptionSQL = adoptionSQL

// TicketsSQL exposes the listing query to the plan test.
func TicketsSQL(f warp.TicketFilter) (string, []any) { return ticketsSQL(f) }

// ReadClock reads the database's clock now, as the readings every
// ClockResample do.
func ReadClock(ctx context.Context, db *DB) error { return db.readClock(ctx) }
