package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// DueLeasesSQL is the sweep's query, for the plan test.
var DueLeasesSQL = dueLeasesSQL

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

// BulkInsertLeases inserts n claimed tickets "B-0000001"... with a held
// lease each, in one statement per table (a recursive CTE, so a million
// rows take seconds): the first due leases expired at now - i ms, the rest
// expire from now + 1h on. Every other time is now. For benchmarks only:
// it bypasses the Service.
func (db *DB) BulkInsertLeases(ctx context.Context, n, due int, now time.Time) error {
	ns := now.UnixNano()
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	const series = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?1) `
	if _, err := tx.ExecContext(ctx, series+`INSERT INTO tickets (id, title, state, epoch, created_at, updated_at)
		SELECT printf('B-%07d', x), '', 'claimed', 1, ?2, ?2 FROM c`, n, ns); err != nil {
		return fmt.Errorf("bulk tickets: %w", err)
	}
	// The CTE's bound is ?1; the times are ?2, the due count ?3.
	if _, err := tx.ExecContext(ctx, series+`INSERT INTO leases (ticket, epoch, agent, host, state, claimed_at,
		last_heartbeat_at, last_activity_at, progress_at, schema_version, first_v2_at, refreshed_at, expires_at,
		verdict_due_at)
		SELECT printf('B-%07d', x), 1, 'bench', 'bench-host', 'held', ?2, ?2, ?2, ?2, 2, ?2, ?2,
			CASE WHEN x <= ?3 THEN ?2 - x * 1000000 ELSE ?2 + 3600000000000 + x * 1000000 END, ?4
		FROM c`, n, ns, due, ns+int64(warp.DefaultSilentAfter)+1); err != nil {
		return fmt.Errorf("bulk leases: %w", err)
	}
	return tx.Commit()
}

// ReviveBulkLeases puts the first due bulk leases back to held and their
// tickets to claimed, so a sweep benchmark finds them due again.
func (db *DB) ReviveBulkLeases(ctx context.Context, due int) error {
	last := fmt.Sprintf("B-%07d", due)
	if _, err := db.w.ExecContext(ctx, `UPDATE leases SET state = 'held', ended_at = 0, end_reason = '', fallback_extended = 0
		WHERE ticket >= 'B-0000001' AND ticket <= ? AND epoch = 1`, last); err != nil {
		return err
	}
	_, err := db.w.ExecContext(ctx, `UPDATE tickets SET state = 'claimed' WHERE id >= 'B-0000001' AND id <= ?`, last)
	return err
}

// SetSynchronous sets PRAGMA synchronous on the writer connection, for
// the benchmark that compares NORMAL with FULL.
func (db *DB) SetSynchronous(ctx context.Context, mode string) error {
	_, err := db.w.ExecContext(ctx, "PRAGMA synchronous = "+mode)
	return err
}

// Queries the plan test checks besides DueLeasesSQL and TicketsSQL.
const (
	HeldLeasesSQL  = qHeldLeases
	HostHeldSQL    = qHostHeldLeases
	VerdictDueSQL  = verdictDueSQL
	EndedHostsSQL  = qEndedHosts
	EventsSQL      = qEvents
	PruneCountsSQL = qPruneCounts
	LeaseSQL       = qLease
)

// AdoptionSQL is the adoption query (built from its sums).
var AdoptionSQL = qAdoption

// NextOpenSQL is claim-next's query with n labels.
func NextOpenSQL(n int) string { return nextOpenSQL(n) }

// IntegrityCheck runs PRAGMA integrity_check (tables against their
// indexes) and returns its lines: "ok" when sound.
func (db *DB) IntegrityCheck(ctx context.Context) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// UpdateLeasesBeatSQL is the multi-row heartbeat update of n leases.
func UpdateLeasesBeatSQL(n int) string { return qUpdateLeasesBeat(n) }

// UpdateChunk is how many leases one multi-row update writes.
const UpdateChunk = updateChunk

// Checkpoints reports how many checkpoints the store's checkpointer
// completed and its last failure.
func (db *DB) Checkpoints() (int64, string) {
	db.ckpt.mu.Lock()
	defer db.ckpt.mu.Unlock()
	return db.ckpt.runs.Load(), db.ckpt.lastErr
}

// WALRestarts reports how many times the checkpointer held the writer
// for a restart's last pass, and how many of those passes copied every
// frame.
func (db *DB) WALRestarts() (held, restarted int64) {
	return db.ckpt.holds.Load(), db.ckpt.restarts.Load()
}

// VerdictCountRows counts verdict_counts' rows, those at 0 included.
func (db *DB) VerdictCountRows(ctx context.Context) (int, error) {
	var n int
	err := db.r.QueryRowContext(ctx, "SELECT count(*) FROM verdict_counts").Scan(&n)
	return n, err
}

// ConnsInUse is how many connections the writer and the readers lend out.
func (db *DB) ConnsInUse() (writer, readers int) {
	return db.w.Stats().InUse, db.r.Stats().InUse
}
