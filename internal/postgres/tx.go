package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gyrum-labs/warp/internal/leasesql"
	"github.com/gyrum-labs/warp/internal/warp"
)

// tx is one transaction. write is true inside Update: row reads then lock.
type tx struct {
	tx    *pipeTx
	write bool
}

var _ warp.Tx = (*tx)(nil)

// forUpdate returns the locking clause of a row read: FOR UPDATE inside
// Update, nothing inside View (a read-only transaction cannot lock).
func (t *tx) forUpdate(clause string) string {
	if t.write {
		return " " + clause
	}
	return ""
}

// limitArg turns a non-positive limit into "no limit" (LIMIT NULL).
func limitArg(n int) *int64 {
	if n <= 0 {
		return nil
	}
	v := int64(n)
	return &v
}

// ts converts a domain time to a column value (leasesql.Nanos).
func ts(t time.Time) int64 { return leasesql.Nanos(t) }

// fromTS converts a column value back, in UTC; 0 and NULL (a LEFT JOIN
// that found no row) are the zero time.
func fromTS(v pgtype.Int8) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return leasesql.FromNanos(v.Int64)
}

// stored returns t as the database gives it back: UTC, without a
// monotonic reading.
func stored(t time.Time) time.Time { return fromTS(pgtype.Int8{Int64: ts(t), Valid: true}) }

const ticketCols = "t.seq, t.id, t.title, t.labels, t.state, t.epoch, t.created_at, t.updated_at"

type ticketRow struct {
	seq                  int64
	id, title, state     string
	labels               []string
	epoch                int64
	createdAt, updatedAt pgtype.Int8
}

func (r *ticketRow) dest() []any {
	return []any{&r.seq, &r.id, &r.title, &r.labels, &r.state, &r.epoch, &r.createdAt, &r.updatedAt}
}

func (r *ticketRow) ticket() warp.Ticket {
	labels := r.labels
	if labels == nil {
		labels = []string{}
	}
	return warp.Ticket{
		ID: r.id, Seq: r.seq, Title: r.title, Labels: labels, State: warp.TicketState(r.state),
		Epoch: r.epoch, CreatedAt: fromTS(r.createdAt), UpdatedAt: fromTS(r.updatedAt),
	}
}

const leaseCols = "l.ticket, l.epoch, l.agent, l.host, l.state, l.claimed_at, l.last_heartbeat_at, l.last_activity_at, " +
	"l.schema_version, l.in_flight, l.first_v2_at, l.refreshed_at, l.expires_at, l.exit, l.exited_at, " +
	"l.ended_at, l.end_reason, l.fallback_extended, l.pr_url, l.hook_seen, l.hook_events, l.recorded_verdict, " +
	"l.claimant, l.secret_hash, l.verdict_due_at, l.last_progress_at, l.loop_label, l.loop_count, l.loop_error"

// leaseRow scans leaseCols; every field tolerates NULL so a LEFT JOIN that
// found no lease scans too (Epoch.Valid is then false).
type leaseRow struct {
	ticket, agent, host, state, inFlight, exit, endReason, prURL pgtype.Text
	hookSeen, recordedVerdict, claimant, secretHash              pgtype.Text
	loopLabel, loopError                                         pgtype.Text
	lastProgressAt                                               pgtype.Int8
	loopCount                                                    pgtype.Int4
	epoch, hookEvents                                            pgtype.Int8
	schemaVersion                                                pgtype.Int4
	claimedAt, lastHeartbeatAt, lastActivityAt, firstV2At        pgtype.Int8
	refreshedAt, expiresAt, exitedAt, endedAt, verdictDueAt      pgtype.Int8
	fallbackExtended                                             pgtype.Bool
}

func (r *leaseRow) dest() []any {
	return []any{&r.ticket, &r.epoch, &r.agent, &r.host, &r.state, &r.claimedAt, &r.lastHeartbeatAt, &r.lastActivityAt,
		&r.schemaVersion, &r.inFlight, &r.firstV2At, &r.refreshedAt, &r.expiresAt, &r.exit, &r.exitedAt,
		&r.endedAt, &r.endReason, &r.fallbackExtended, &r.prURL, &r.hookSeen, &r.hookEvents, &r.recordedVerdict,
		&r.claimant, &r.secretHash, &r.verdictDueAt, &r.lastProgressAt, &r.loopLabel, &r.loopCount, &r.loopError}
}

func (r *leaseRow) lease() warp.Lease {
	return warp.Lease{
		Ticket: r.ticket.String, Epoch: r.epoch.Int64, Agent: r.agent.String, Host: r.host.String,
		State:     warp.LeaseState(r.state.String),
		ClaimedAt: fromTS(r.claimedAt), LastHeartbeatAt: fromTS(r.lastHeartbeatAt), LastActivityAt: fromTS(r.lastActivityAt),
		SchemaVersion: int(r.schemaVersion.Int32), InFlight: r.inFlight.String, FirstV2At: fromTS(r.firstV2At),
		RefreshedAt: fromTS(r.refreshedAt), ExpiresAt: fromTS(r.expiresAt),
		Exit: r.exit.String, ExitedAt: fromTS(r.exitedAt),
		EndedAt: fromTS(r.endedAt), EndReason: r.endReason.String, FallbackExtended: r.fallbackExtended.Bool,
		PRURL: r.prURL.String, HookSeen: warp.HookSeen(r.hookSeen.String), HookEvents: r.hookEvents.Int64,
		RecordedVerdict: warp.Verdict(r.recordedVerdict.String),
		Claimant:        r.claimant.String, SecretHash: r.secretHash.String, VerdictDueAt: fromTS(r.verdictDueAt),
		LastProgressAt: fromTS(r.lastProgressAt),
		Loop:           warp.Loop{Label: r.loopLabel.String, Count: int(r.loopCount.Int32), Error: r.loopError.String},
	}
}

func (t *tx) CreateTicket(ctx context.Context, tk warp.Ticket) (warp.Ticket, error) {
	labels := tk.Labels
	if labels == nil {
		labels = []string{}
	}
	err := t.tx.QueryRow(ctx, `INSERT INTO tickets (id, title, labels, state, epoch, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq`,
		tk.ID, tk.Title, labels, string(tk.State), tk.Epoch, ts(tk.CreatedAt), ts(tk.UpdatedAt)).Scan(&tk.Seq)
	if err != nil {
		return warp.Ticket{}, translate(err)
	}
	tk.Labels = labels
	tk.CreatedAt, tk.UpdatedAt = stored(tk.CreatedAt), stored(tk.UpdatedAt)
	return tk, nil
}

func (t *tx) Ticket(ctx context.Context, id string) (warp.Ticket, error) {
	var r ticketRow
	err := t.tx.QueryRow(ctx, "SELECT "+ticketCols+" FROM tickets t WHERE t.id = $1"+t.forUpdate("FOR UPDATE"), id).Scan(r.dest()...)
	if err != nil {
		return warp.Ticket{}, translate(err)
	}
	return r.ticket(), nil
}

func (t *tx) UpdateTicket(ctx context.Context, tk warp.Ticket) error {
	tag, err := t.tx.Exec(ctx, "UPDATE tickets SET state = $2, epoch = $3, updated_at = $4 WHERE id = $1",
		tk.ID, string(tk.State), tk.Epoch, ts(tk.UpdatedAt))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("ticket %s: %w", tk.ID, warp.ErrNotFound)
	}
	return nil
}

// EditTicket implements warp.Tx.
func (t *tx) EditTicket(ctx context.Context, tk warp.Ticket) error {
	labels := tk.Labels
	if labels == nil {
		labels = []string{}
	}
	tag, err := t.tx.Exec(ctx, "UPDATE tickets SET title = $2, labels = $3, updated_at = $4 WHERE id = $1",
		tk.ID, tk.Title, labels, ts(tk.UpdatedAt))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("ticket %s: %w", tk.ID, warp.ErrNotFound)
	}
	return nil
}

func (t *tx) NextOpenTicket(ctx context.Context, labels []string) (warp.Ticket, error) {
	q := "SELECT " + ticketCols + " FROM tickets t WHERE t.state = 'open'"
	args := []any{}
	if len(labels) > 0 {
		q += " AND t.labels @> $1"
		args = append(args, labels)
	}
	q += " ORDER BY t.seq LIMIT 1" + t.forUpdate("FOR UPDATE SKIP LOCKED")
	var r ticketRow
	if err := t.tx.QueryRow(ctx, q, args...).Scan(r.dest()...); err != nil {
		return warp.Ticket{}, translate(err)
	}
	return r.ticket(), nil
}

// ticketsSQL builds the listing query of f (leasesql.TicketsQuery).
func ticketsSQL(f warp.TicketFilter) (string, []any) {
	return leasesql.TicketsQuery(f, ticketCols+", "+leaseCols, true, false, limitArg(f.Limit))
}

func (t *tx) Tickets(ctx context.Context, f warp.TicketFilter) ([]warp.TicketLease, error) {
	q, args := ticketsSQL(f)
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []warp.TicketLease{}
	for rows.Next() {
		var tr ticketRow
		var lr leaseRow
		if err := rows.Scan(append(tr.dest(), lr.dest()...)...); err != nil {
			return nil, translate(err)
		}
		tl := warp.TicketLease{Ticket: tr.ticket()}
		if lr.epoch.Valid {
			l := lr.lease()
			tl.Lease = &l
		}
		out = append(out, tl)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

func (t *tx) CountTickets(ctx context.Context) (map[warp.TicketState]int64, error) {
	rows, err := t.tx.Query(ctx, "SELECT state, count(*) FROM tickets GROUP BY state")
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[warp.TicketState]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, translate(err)
		}
		out[warp.TicketState(s)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

func (t *tx) CurrentLease(ctx context.Context, id string) (warp.Ticket, warp.Lease, error) {
	var tr ticketRow
	var lr leaseRow
	err := t.tx.QueryRow(ctx, "SELECT t.seq, t.id, t.title, NULL::text[], t.state, t.epoch, t.created_at, t.updated_at, "+leaseCols+
		" FROM tickets t JOIN leases l ON l.ticket = t.id AND l.epoch = t.epoch WHERE t.id = $1"+t.forUpdate("FOR UPDATE OF t, l"), id).
		Scan(append(tr.dest(), lr.dest()...)...)
	if err != nil {
		return warp.Ticket{}, warp.Lease{}, translate(err)
	}
	tk := tr.ticket()
	tk.Labels = nil
	return tk, lr.lease(), nil
}

func (t *tx) Lease(ctx context.Context, ticket string, epoch int64) (warp.Lease, error) {
	var r leaseRow
	err := t.tx.QueryRow(ctx, "SELECT "+leaseCols+" FROM leases l WHERE l.ticket = $1 AND l.epoch = $2"+t.forUpdate("FOR UPDATE"),
		ticket, epoch).Scan(r.dest()...)
	if err != nil {
		return warp.Lease{}, translate(err)
	}
	return r.lease(), nil
}

func (t *tx) InsertLease(ctx context.Context, l warp.Lease) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO leases (ticket, epoch, agent, host, state, claimed_at, last_heartbeat_at,
		last_activity_at, progress_at, schema_version, in_flight, first_v2_at, refreshed_at, expires_at, exit, exited_at,
		ended_at, end_reason, fallback_extended, pr_url, hook_seen, hook_events, recorded_verdict, claimant, secret_hash,
		verdict_due_at, last_progress_at, loop_label, loop_count, loop_error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26,
			$27, $28, $29, $30)`,
		l.Ticket, l.Epoch, l.Agent, l.Host, string(l.State), ts(l.ClaimedAt), ts(l.LastHeartbeatAt),
		ts(l.LastActivityAt), ts(warp.ProgressAt(l)), l.SchemaVersion, l.InFlight, ts(l.FirstV2At), ts(l.RefreshedAt),
		ts(l.ExpiresAt), l.Exit, ts(l.ExitedAt), ts(l.EndedAt), l.EndReason, l.FallbackExtended, l.PRURL,
		string(l.HookSeen), l.HookEvents, string(l.RecordedVerdict), l.Claimant, l.SecretHash, ts(l.VerdictDueAt),
		ts(l.LastProgressAt), l.Loop.Label, l.Loop.Count, l.Loop.Error)
	return translate(err)
}

func (t *tx) UpdateLease(ctx context.Context, l warp.Lease) error {
	tag, err := t.tx.Exec(ctx, `UPDATE leases SET agent = $3, host = $4, state = $5, claimed_at = $6,
		last_heartbeat_at = $7, last_activity_at = $8, progress_at = $9, schema_version = $10, in_flight = $11,
		first_v2_at = $12, refreshed_at = $13, expires_at = $14, exit = $15, exited_at = $16, ended_at = $17,
		end_reason = $18, fallback_extended = $19, pr_url = $20, hook_seen = $21, hook_events = $22,
		recorded_verdict = $23, verdict_due_at = $24, last_progress_at = $25, loop_label = $26, loop_count = $27,
		loop_error = $28
		WHERE ticket = $1 AND epoch = $2`,
		l.Ticket, l.Epoch, l.Agent, l.Host, string(l.State), ts(l.ClaimedAt), ts(l.LastHeartbeatAt),
		ts(l.LastActivityAt), ts(warp.ProgressAt(l)), l.SchemaVersion, l.InFlight, ts(l.FirstV2At), ts(l.RefreshedAt),
		ts(l.ExpiresAt), l.Exit, ts(l.ExitedAt), ts(l.EndedAt), l.EndReason, l.FallbackExtended, l.PRURL,
		string(l.HookSeen), l.HookEvents, string(l.RecordedVerdict), ts(l.VerdictDueAt),
		ts(l.LastProgressAt), l.Loop.Label, l.Loop.Count, l.Loop.Error)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("lease %s/%d: %w", l.Ticket, l.Epoch, warp.ErrNotFound)
	}
	return nil
}

func (t *tx) scanLeases(ctx context.Context, q string, args ...any) ([]warp.Lease, error) {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []warp.Lease{}
	for rows.Next() {
		var r leaseRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, translate(err)
		}
		out = append(out, r.lease())
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// dueLeasesSQL is the sweep's query: $1 now, $2 limit, then a pair of
// arguments (refreshed before, expires after) for each of the n graces in
// force. The partial index leases_held_expires answers it in O(due);
// inside Update it locks what it returns and skips leases a heartbeat
// holds. Tests check its plan.
func dueLeasesSQL(n int, lock bool) string {
	q := "SELECT " + leaseCols + " FROM leases l JOIN tickets t ON t.id = l.ticket" +
		" WHERE l.state = 'held' AND l.expires_at <= $1"
	for i := range n {
		q += fmt.Sprintf(" AND NOT (l.refreshed_at < $%d AND l.expires_at > $%d)", 3+2*i, 4+2*i)
	}
	q += " ORDER BY l.expires_at LIMIT $2"
	if lock {
		q += " FOR UPDATE OF l, t SKIP LOCKED"
	}
	return q
}

func (t *tx) DueLeases(ctx context.Context, f warp.DueFilter, limit int) ([]warp.Lease, error) {
	args := []any{ts(f.Now), limitArg(limit)}
	for _, p := range f.Protect {
		after := int64(math.MinInt64) // any expiry
		if !p.ExpiresAfter.IsZero() {
			after = ts(p.ExpiresAfter)
		}
		args = append(args, ts(p.RefreshedBefore), after)
	}
	return t.scanLeases(ctx, dueLeasesSQL(len(f.Protect), t.write), args...)
}

// verdictDueSQL is the verdict pass's query: $1 now, $2 limit. The partial
// index leases_held_verdict_due answers it in O(due); inside Update it
// locks the leases it returns and skips those a heartbeat holds (a skipped
// lease stays due for the next pass). Tests check its plan.
func verdictDueSQL(lock bool) string {
	q := "SELECT " + leaseCols + " FROM leases l WHERE l.state = 'held' AND l.verdict_due_at > 0 AND l.verdict_due_at <= $1" +
		" ORDER BY l.verdict_due_at LIMIT $2"
	if lock {
		q += " FOR UPDATE OF l SKIP LOCKED"
	}
	return q
}

func (t *tx) VerdictDueLeases(ctx context.Context, now time.Time, limit int) ([]warp.Lease, error) {
	return t.scanLeases(ctx, verdictDueSQL(t.write), ts(now), limitArg(limit))
}

func (t *tx) AddVerdictCounts(ctx context.Context, host string, delta map[warp.Verdict]int64) error {
	b := &pgx.Batch{}
	// In key order: two transactions that move the same host's counts
	// (a claim adds to its verdict and to its hook health) lock the rows
	// in one order and cannot deadlock.
	for _, v := range slices.Sorted(maps.Keys(delta)) {
		if n := delta[v]; n != 0 {
			b.Queue(`INSERT INTO verdict_counts (host, verdict, n) VALUES ($1, $2, $3)
				ON CONFLICT (host, verdict) DO UPDATE SET n = verdict_counts.n + EXCLUDED.n`, host, string(v), n)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return translate(t.tx.SendBatch(ctx, b).Close())
}

// PruneVerdictCounts implements warp.Tx. The rows at 0 are locked in key
// order and those another transaction holds are skipped (it may be moving
// them off 0), so the prune neither waits for a batch nor deadlocks with
// one; a row that left 0 before its lock was taken is not deleted (the
// lock re-checks it).
func (t *tx) PruneVerdictCounts(ctx context.Context, limit int) error {
	_, err := t.tx.Exec(ctx, `DELETE FROM verdict_counts WHERE (host, verdict) IN
		(SELECT host, verdict FROM verdict_counts WHERE n = 0 ORDER BY host, verdict LIMIT $1 FOR UPDATE SKIP LOCKED)`, limitArg(limit))
	return translate(err)
}

func (t *tx) VerdictCounts(ctx context.Context) ([]warp.HostVerdictCount, error) {
	rows, err := t.tx.Query(ctx, "SELECT host, verdict, n FROM verdict_counts WHERE n <> 0")
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []warp.HostVerdictCount
	for rows.Next() {
		var c warp.HostVerdictCount
		var v string
		if err := rows.Scan(&c.Host, &v, &c.N); err != nil {
			return nil, translate(err)
		}
		c.Verdict = warp.Verdict(v)
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

func (t *tx) EndedHosts(ctx context.Context, since time.Time) ([]string, error) {
	rows, err := t.tx.Query(ctx, "SELECT DISTINCT host FROM leases WHERE state <> 'held' AND ended_at >= $1", ts(since))
	if err != nil {
		return nil, translate(err)
	}
	hosts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return hosts, translate(err)
}

func (t *tx) HeldLeases(ctx context.Context, host, after string, limit int) ([]warp.Lease, error) {
	if host != "" {
		return t.scanLeases(ctx, "SELECT "+leaseCols+" FROM leases l WHERE l.state = 'held' AND l.host = $1 AND l.ticket > $2 ORDER BY l.ticket LIMIT $3",
			host, after, limitArg(limit))
	}
	// Locked as it walks: in byte order, the order heartbeat batches lock
	// in (currentLeasesSQL), whatever the database's collation.
	return t.scanLeases(ctx, "SELECT "+leaseCols+` FROM leases l WHERE l.state = 'held' AND l.ticket COLLATE "C" > $1 ORDER BY l.ticket COLLATE "C" LIMIT $2`+
		t.forUpdate("FOR UPDATE"), after, limitArg(limit))
}

func (t *tx) CountHeld(ctx context.Context, b warp.VerdictBounds) (int64, error) {
	w := leasesql.Where{Dollar: true}
	w.Add("l.state = 'held'")
	w.Bounds(b)
	var n int64
	if err := t.tx.QueryRow(ctx, "SELECT count(*) FROM leases l"+w.SQL(), w.Args...).Scan(&n); err != nil {
		return 0, translate(err)
	}
	return n, nil
}

func (t *tx) AppendEvent(ctx context.Context, e warp.Event) (int64, error) {
	b, err := warp.EncodeEventData(e)
	if err != nil {
		return 0, fmt.Errorf("append event: %w", err)
	}
	var id int64
	err = t.tx.QueryRow(ctx, "INSERT INTO events (ticket, epoch, kind, at, data) VALUES ($1, $2, $3, $4, $5) RETURNING id",
		e.Ticket, e.Epoch, string(e.Kind), ts(e.At), string(b)).Scan(&id)
	if err != nil {
		return 0, translate(err)
	}
	return id, nil
}

func (t *tx) scanEvents(ctx context.Context, q string, args ...any) ([]warp.Event, error) {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []warp.Event{}
	for rows.Next() {
		var e warp.Event
		var kind string
		var at pgtype.Int8
		var data []byte
		if err := rows.Scan(&e.ID, &e.Ticket, &e.Epoch, &kind, &at, &data); err != nil {
			return nil, translate(err)
		}
		e.Kind, e.At = warp.EventKind(kind), fromTS(at)
		if e.Data, err = warp.DecodeEventData(e.Kind, data); err != nil {
			return nil, fmt.Errorf("event %d: %w", e.ID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

func (t *tx) Events(ctx context.Context, ticket string, afterID int64, limit int) ([]warp.Event, error) {
	return t.scanEvents(ctx, "SELECT id, ticket, epoch, kind, at, data::text FROM events WHERE ticket = $1 AND id > $2 ORDER BY id LIMIT $3",
		ticket, afterID, limitArg(limit))
}

func (t *tx) RecentEvents(ctx context.Context, kinds []warp.EventKind, limit int) ([]warp.Event, error) {
	if len(kinds) == 0 {
		return t.scanEvents(ctx, "SELECT id, ticket, epoch, kind, at, data::text FROM events ORDER BY id DESC LIMIT $1", limitArg(limit))
	}
	ks := make([]string, len(kinds))
	for i, k := range kinds {
		ks[i] = string(k)
	}
	return t.scanEvents(ctx, "SELECT id, ticket, epoch, kind, at, data::text FROM events WHERE kind = ANY($1) ORDER BY id DESC LIMIT $2", ks, limitArg(limit))
}

// hostSeenMoved is the condition under which an upsert of hosts rewrites
// the stored row (EXCLUDED, the step in nanoseconds as $5): its last-seen
// moved by warp.HostSeenStep, or its schema version changed and its time
// is not older.
const hostSeenMoved = `(hosts.last_seen <= EXCLUDED.last_seen - $5 OR
	(hosts.last_schema_version <> EXCLUDED.last_schema_version AND hosts.last_seen <= EXCLUDED.last_seen))`

// RecordHeartbeat counts the heartbeats in their minute and hour buckets
// (warp.CountRows) and moves the host's last-seen forward, in one round
// trip.
func (t *tx) RecordHeartbeat(ctx context.Context, c warp.HeartbeatCount) (bool, error) {
	b := &pgx.Batch{}
	r := warp.CountRows(c)
	b.Queue(`INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count) VALUES ($1, $2, $3, $4, $5), ($1, $2, $6, $7, $5)
		ON CONFLICT (host, schema_version, span, bucket) DO UPDATE SET count = heartbeat_counts.count + EXCLUDED.count`,
		c.Host, c.SchemaVersion, r[0].Span, r[0].Bucket, c.N, r[1].Span, r[1].Bucket)
	// xmax = 0 on the returned row: it was inserted, not updated.
	created := false
	b.Queue(`INSERT INTO hosts (host, token, last_schema_version, last_seen) VALUES ($1, $2, $3, $4)
		ON CONFLICT (host) DO UPDATE SET last_schema_version = EXCLUDED.last_schema_version, last_seen = EXCLUDED.last_seen
		WHERE `+hostSeenMoved+`
		RETURNING xmax = 0`,
		c.Host, c.Token, c.SchemaVersion, ts(c.At), warp.HostSeenStep.Nanoseconds()).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // an older heartbeat than the stored one: not new
		}
		return err
	})
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return false, translate(err)
	}
	return created, nil
}

// HostRecorded implements warp.Tx.
func (t *tx) HostRecorded(ctx context.Context, host string) (bool, error) {
	var ok bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hosts WHERE host = $1)`, host).Scan(&ok)
	return ok, translate(err)
}

func (t *tx) HostsOfToken(ctx context.Context, token string, since time.Time) (int, error) {
	var n int
	err := t.tx.QueryRow(ctx, `SELECT count(*) FROM hosts WHERE token = $1 AND last_seen >= $2`, token, ts(since)).Scan(&n)
	return n, translate(err)
}

// HostsBySchema implements warp.Tx.
func (t *tx) HostsBySchema(ctx context.Context, since time.Time) (map[int]int, error) {
	rows, err := t.tx.Query(ctx, `SELECT last_schema_version, count(*) FROM hosts WHERE last_seen >= $1 GROUP BY last_schema_version`, ts(since))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var v, n int
		if err := rows.Scan(&v, &n); err != nil {
			return nil, translate(err)
		}
		out[v] = n
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// adoptionSQL sums each host's counts over the rows warp.CountWindow names
// ($2 minute rows from, $3 hour rows from; $1 the window's start in ns, $4
// and $5 the spans): four range reads of the key a host.
var adoptionSQL = `SELECT h.host, h.last_schema_version, h.last_seen, ` + adoptionSum(1) + `, ` + adoptionSum(2) + `
	FROM hosts h WHERE h.last_seen >= $1 ORDER BY h.host`

// adoptionSum is adoptionSQL's sum of one schema version's counts.
func adoptionSum(schema int) string {
	v := strconv.Itoa(schema)
	return `(SELECT COALESCE(sum(count), 0) FROM heartbeat_counts c
			WHERE c.host = h.host AND c.schema_version = ` + v + ` AND c.span = $4 AND c.bucket >= $2 AND c.bucket < $3)::bigint +
		(SELECT COALESCE(sum(count), 0) FROM heartbeat_counts c
			WHERE c.host = h.host AND c.schema_version = ` + v + ` AND c.span = $5 AND c.bucket >= $3)::bigint`
}

func (t *tx) Adoption(ctx context.Context, since time.Time) ([]warp.HostAdoption, error) {
	// The rows warp.CountWindow names: minute rows from $2 to $3, hour
	// rows from $3.
	minutes, hours := warp.CountWindow(since)
	rows, err := t.tx.Query(ctx, adoptionSQL, ts(since), minutes, hours, warp.MinuteSpan, warp.HourSpan)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []warp.HostAdoption{}
	for rows.Next() {
		var a warp.HostAdoption
		var seen pgtype.Int8
		if err := rows.Scan(&a.Host, &a.LastSchemaVersion, &seen, &a.V1Count, &a.V2Count); err != nil {
			return nil, translate(err)
		}
		a.LastSeen = fromTS(seen)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

func (t *tx) PruneHeartbeats(ctx context.Context, before time.Time) error {
	b := &pgx.Batch{}
	b.Queue("DELETE FROM heartbeat_counts WHERE bucket < $1 AND bucket + span <= $1", before.Unix())
	b.Queue("DELETE FROM hosts WHERE last_seen < $1", ts(before))
	return translate(t.tx.SendBatch(ctx, b).Close())
}

func (t *tx) Meta(ctx context.Context, key string) (string, error) {
	var v string
	if err := t.tx.QueryRow(ctx, "SELECT value FROM meta WHERE key = $1", key).Scan(&v); err != nil {
		return "", translate(err)
	}
	return v, nil
}

func (t *tx) SetMeta(ctx context.Context, key, value string) error {
	_, err := t.tx.Exec(ctx, "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
		key, value)
	return translate(err)
}

// InsertSession implements warp.Tx.
func (t *tx) InsertSession(ctx context.Context, s warp.Session) error {
	_, err := t.tx.Exec(ctx, "INSERT INTO sessions (id_hash, token_id, name, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
		s.IDHash, s.TokenID, s.Name, ts(s.CreatedAt), ts(s.ExpiresAt))
	return translate(err)
}

// Session implements warp.Tx.
func (t *tx) Session(ctx context.Context, idHash string) (warp.Session, error) {
	s := warp.Session{IDHash: idHash}
	var created, expires pgtype.Int8
	if err := t.tx.QueryRow(ctx, "SELECT token_id, name, created_at, expires_at FROM sessions WHERE id_hash = $1", idHash).
		Scan(&s.TokenID, &s.Name, &created, &expires); err != nil {
		return warp.Session{}, translate(err)
	}
	s.CreatedAt, s.ExpiresAt = fromTS(created), fromTS(expires)
	return s, nil
}

// DeleteSession implements warp.Tx.
func (t *tx) DeleteSession(ctx context.Context, idHash string) error {
	_, err := t.tx.Exec(ctx, "DELETE FROM sessions WHERE id_hash = $1", idHash)
	return translate(err)
}

// PruneSessions implements warp.Tx. Rows another transaction holds are
// left for the next prune.
func (t *tx) PruneSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := t.tx.Exec(ctx, `DELETE FROM sessions WHERE id_hash IN
		(SELECT id_hash FROM sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, ts(now), limitArg(limit))
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}
