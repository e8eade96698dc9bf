package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The static statements, prepared once per connection pool at Open.
const (
	qInsertTicket = `INSERT INTO tickets (id, title, state, epoch, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq`
	qInsertLabel  = `INSERT INTO ticket_labels (ticket, label) VALUES (?, ?)`
	qTicket       = `SELECT ` + ticketCols + ` FROM tickets t WHERE t.id = ?`
	qUpdateTicket = `UPDATE tickets SET state = ?, epoch = ?, updated_at = ? WHERE id = ?`
	qCountTickets = `SELECT state, count(*) FROM tickets GROUP BY state`
	qLease        = `SELECT ` + leaseCols + ` FROM leases l WHERE l.ticket = ? AND l.epoch = ?`
	// qCurrentLease skips the labels subquery: '[]' stands for them.
	qCurrentLease = `SELECT t.seq, t.id, t.title, t.state, t.epoch, t.created_at, t.updated_at, '[]', ` + leaseCols + `
		FROM tickets t JOIN leases l ON l.ticket = t.id AND l.epoch = t.epoch WHERE t.id = ?`
	// qCurrentLeases is qCurrentLease for the ids of a JSON array.
	qCurrentLeases = `SELECT t.seq, t.id, t.title, t.state, t.epoch, t.created_at, t.updated_at, '[]', ` + leaseCols + `
		FROM tickets t JOIN leases l ON l.ticket = t.id AND l.epoch = t.epoch WHERE t.id IN (SELECT value FROM json_each(?))`
	qInsertLease = `INSERT INTO leases (ticket, epoch, agent, host, state, claimed_at,
		last_heartbeat_at, last_activity_at, progress_at, schema_version, in_flight, first_v2_at, refreshed_at,
		expires_at, exit, exited_at, ended_at, end_reason, fallback_extended, pr_url,
		hook_seen, hook_events, recorded_verdict, claimant, secret_hash, verdict_due_at,
		last_progress_at, loop_label, loop_count, loop_error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// qUpdateLeaseBeat writes what a heartbeat changes, nothing else.
	qUpdateLeaseBeat = `UPDATE leases SET last_heartbeat_at = ?, last_activity_at = ?, progress_at = ?,
		schema_version = ?, in_flight = ?, first_v2_at = ?, refreshed_at = ?, expires_at = ?, fallback_extended = ?,
		hook_seen = ?, hook_events = ?, recorded_verdict = ?, verdict_due_at = ?,
		last_progress_at = ?, loop_label = ?, loop_count = ?, loop_error = ?
		WHERE ticket = ? AND epoch = ?`
	qUpdateLease = `UPDATE leases SET agent = ?, host = ?, state = ?, claimed_at = ?,
		last_heartbeat_at = ?, last_activity_at = ?, progress_at = ?, schema_version = ?, in_flight = ?,
		first_v2_at = ?, refreshed_at = ?, expires_at = ?, exit = ?, exited_at = ?, ended_at = ?, end_reason = ?,
		fallback_extended = ?, pr_url = ?, hook_seen = ?, hook_events = ?, recorded_verdict = ?,
		verdict_due_at = ?, last_progress_at = ?, loop_label = ?, loop_count = ?, loop_error = ?
		WHERE ticket = ? AND epoch = ?`
	// verdictDueSQL is the verdict pass's query; the partial index
	// leases_held_verdict_due answers it in O(due). Tests check its plan.
	verdictDueSQL = `SELECT ` + leaseCols + ` FROM leases l
		WHERE l.state = 'held' AND l.verdict_due_at > 0 AND l.verdict_due_at <= ?
		ORDER BY l.verdict_due_at LIMIT ?`
	qHeldLeases = `SELECT ` + leaseCols + ` FROM leases l
		WHERE l.state = 'held' AND l.ticket > ? ORDER BY l.ticket LIMIT ?`
	qAddVerdictCount = `INSERT INTO verdict_counts (host, verdict, n) VALUES (?, ?, ?)
		ON CONFLICT (host, verdict) DO UPDATE SET n = n + excluded.n`
	qVerdictCounts  = `SELECT host, verdict, n FROM verdict_counts WHERE n <> 0`
	qPruneVerdicts  = `DELETE FROM verdict_counts WHERE rowid IN (SELECT rowid FROM verdict_counts WHERE n = 0 LIMIT ?)`
	qEndedHosts     = `SELECT host FROM leases WHERE state <> 'held' AND ended_at >= ?`
	qHostHeldLeases = `SELECT ` + leaseCols + ` FROM leases l
		WHERE l.state = 'held' AND l.host = ? AND l.ticket > ? ORDER BY l.ticket LIMIT ?`
	qAppendEvent  = `INSERT INTO events (ticket, epoch, kind, at, data) VALUES (?, ?, ?, ?, ?) RETURNING id`
	eventCols     = `id, ticket, epoch, kind, at, data`
	qEvents       = `SELECT ` + eventCols + ` FROM events WHERE ticket = ? AND id > ? ORDER BY id LIMIT ?`
	qRecentEvents = `SELECT ` + eventCols + ` FROM events ORDER BY id DESC LIMIT ?`
	// INDEXED BY: the planner would take events_kind_at and sort.
	qRecentEventsOfKind = `SELECT ` + eventCols + ` FROM events INDEXED BY events_kind WHERE kind = ? ORDER BY id DESC LIMIT ?`
	qCountHeartbeat     = `INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (host, schema_version, span, bucket) DO UPDATE SET count = count + excluded.count`
	qNewHost       = `INSERT INTO hosts (host, token, last_schema_version, last_seen) VALUES (?, ?, ?, ?) ON CONFLICT (host) DO NOTHING`
	qRecordHost    = `UPDATE hosts SET last_schema_version = ?1, last_seen = ?2 WHERE host = ?3 AND ` + hostSeenMoved
	qHostRecorded  = `SELECT EXISTS (SELECT 1 FROM hosts WHERE host = ?)`
	qHostsOfToken  = `SELECT count(*) FROM hosts WHERE token = ? AND last_seen >= ?`
	qHostsBySchema = `SELECT last_schema_version, count(*) FROM hosts WHERE last_seen >= ? GROUP BY last_schema_version`
	qPruneCounts   = `DELETE FROM heartbeat_counts WHERE bucket < ?1 AND bucket + span <= ?1`
	qPruneHosts    = `DELETE FROM hosts WHERE last_seen < ?`
	qMeta          = `SELECT value FROM meta WHERE key = ?`
	qSetMeta       = `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`
)

// qAdoption sums each host's counts over the rows warp.CountWindow
// names (?1 minute rows from, ?2 hour rows from; ?3 the window's start
// in ns, ?4 and ?5 the spans): four range reads of the key a host.
var qAdoption = `SELECT h.host, h.last_schema_version, h.last_seen,
	` + adoptionSum("1") + `,
	` + adoptionSum("2") + `
	FROM hosts h WHERE h.last_seen >= ?3 ORDER BY h.host`

// adoptionSum is qAdoption's sum of one schema version's counts.
func adoptionSum(schema string) string {
	return `coalesce((SELECT sum(count) FROM heartbeat_counts c
			WHERE c.host = h.host AND c.schema_version = ` + schema + ` AND c.span = ?4 AND c.bucket >= ?1 AND c.bucket < ?2), 0) +
		coalesce((SELECT sum(count) FROM heartbeat_counts c
			WHERE c.host = h.host AND c.schema_version = ` + schema + ` AND c.span = ?5 AND c.bucket >= ?2), 0)`
}

// nextOpenSQL is claim-next's query for n labels: the open tickets in seq
// order (tickets_state_seq), each label checked by primary key.
func nextOpenSQL(n int) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + ticketCols + ` FROM tickets t WHERE t.state = 'open'`)
	for range n {
		b.WriteString(` AND EXISTS (SELECT 1 FROM ticket_labels x WHERE x.ticket = t.id AND x.label = ?)`)
	}
	b.WriteString(` ORDER BY t.seq LIMIT 1`)
	return b.String()
}

// dueLeasesSQL is the sweep's query with n graces in force, each a
// NOT (refreshed before, expires after) pair of arguments between now and
// the limit; the partial index leases_held_expires answers it in O(due).
// Tests check its plan.
func dueLeasesSQL(n int) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + leaseCols + ` FROM leases l WHERE l.state = 'held' AND l.expires_at <= ?`)
	for range n {
		b.WriteString(` AND NOT (l.refreshed_at < ? AND l.expires_at > ?)`)
	}
	b.WriteString(` ORDER BY l.expires_at LIMIT ?`)
	return b.String()
}

// preparedQueries lists what Open prepares.
func preparedQueries() []string {
	qs := []string{qInsertTicket, qInsertLabel, qTicket, qUpdateTicket, qCountTickets, qLease, qCurrentLease, qCurrentLeases, qInsertLease,
		qUpdateLease,
		qCountHeartbeats(updateChunk), qCountHeartbeats(smallChunk), qCountHeartbeatRows, qRecordHosts(updateChunk), qRecordHosts(smallChunk), dueLeasesSQL(0), dueLeasesSQL(1), dueLeasesSQL(2), verdictDueSQL, qHeldLeases, qHostHeldLeases, qEndedHosts, qAddVerdictCount, qVerdictCounts, qPruneVerdicts, qAppendEvent, qEvents, qRecentEvents, qCountHeartbeat, qRecordHost,
		qAdoption, qHostsBySchema, qPruneCounts, qPruneHosts, qMeta, qSetMeta, qNewHost, qHostRecorded, qHostsOfToken,
		nextOpenSQL(0), nextOpenSQL(1), nextOpenSQL(2), nextOpenSQL(3)}
	for _, q := range updateLeasesSQL {
		qs = append(qs, q)
	}
	return qs
}

// stmtCache holds one pool's prepared statements. It is filled at Open,
// before any transaction (the writer pool has a single connection, which a
// transaction holds), and only read after: no lock.
type stmtCache map[string]*sql.Stmt

func prepareAll(ctx context.Context, pool *sql.DB) (stmtCache, error) {
	c := stmtCache{}
	for _, q := range preparedQueries() {
		s, err := pool.PrepareContext(ctx, q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("prepare %.60q: %w", q, err)
		}
		c[q] = s
	}
	return c, nil
}

func (c stmtCache) close() {
	for _, s := range c {
		s.Close()
	}
}

// stmt returns the transaction's handle of a prepared query, nil when the
// query is not a prepared one (it then runs as plain text).
func (t *tx) stmt(ctx context.Context, query string) *sql.Stmt {
	s, ok := t.stmts[query]
	if !ok {
		return nil
	}
	return t.tx.StmtContext(ctx, s)
}

func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
