package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gyrum-labs/warp/internal/warp"
)

// currentLeasesSQL reads (and locks, in byte order of the ids — the order
// every multi-ticket transaction locks in) the current leases of the ids
// in $1 in one statement.
func (t *tx) currentLeasesSQL() string {
	return "SELECT t.seq, t.id, t.title, NULL::text[], t.state, t.epoch, t.created_at, t.updated_at, " + leaseCols +
		` FROM tickets t JOIN leases l ON l.ticket = t.id AND l.epoch = t.epoch WHERE t.id = ANY($1) ORDER BY t.id COLLATE "C"` +
		t.forUpdate("FOR UPDATE OF t, l")
}

// scanTicketLeases reads the rows of currentLeasesSQL and closes them.
func scanTicketLeases(rows pgx.Rows, n int) (map[string]warp.TicketLease, error) {
	defer rows.Close()
	out := make(map[string]warp.TicketLease, n)
	// One pair of rows and one list of destinations for every row, the
	// leases in one array: a batch reads a few dozen rows a transaction.
	var tr ticketRow
	var lr leaseRow
	dest := append(tr.dest(), lr.dest()...)
	ls := make([]warp.Lease, 0, n)
	for rows.Next() {
		tr, lr = ticketRow{}, leaseRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, translate(err)
		}
		tk := tr.ticket()
		tk.Labels = nil
		ls = append(ls, lr.lease())
		out[tk.ID] = warp.TicketLease{Ticket: tk, Lease: &ls[len(ls)-1]}
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// batchPlanSQL steers the plans of the rest of a heartbeat batch's
// transaction to the keys. A batch reads and updates a few dozen leases by
// (ticket, epoch); on a table of a few thousand leases the planner chose
// sequential scans of tickets and leases joined by hash for both (the
// rows of a lease updated at every heartbeat cost each scan again until
// vacuum); with index lookups the same ingest answered 10 % more
// heartbeats a second (warpbench runs in the history of docs/BENCHMARKS.md). The settings are the transaction's own
// (set_config's is_local) and off only penalises a sequential scan or a
// hash join: a statement with no other way still has it. The batch's
// statements run only here, so the plans PostgreSQL caches for them are
// made under these settings.
const batchPlanSQL = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true)`

// ReadBatch sends the batch's plan settings, lease read and meta read
// together: one round trip. PostgreSQL runs them in order, so the meta
// value is read after the leases are locked.
func (t *tx) ReadBatch(ctx context.Context, ids []string, key string) (map[string]warp.TicketLease, string, bool, error) {
	b := &pgx.Batch{}
	b.Queue(batchPlanSQL)
	b.Queue(t.currentLeasesSQL(), ids)
	b.Queue("SELECT value FROM meta WHERE key = $1", key)
	br := t.tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, "", false, translate(err)
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, "", false, translate(err)
	}
	cur, err := scanTicketLeases(rows, len(ids))
	if err != nil {
		br.Close()
		return nil, "", false, err
	}
	var v string
	found := true
	if err := br.QueryRow().Scan(&v); errors.Is(err, pgx.ErrNoRows) {
		found = false
	} else if err != nil {
		br.Close()
		return nil, "", false, translate(err)
	}
	if err := br.Close(); err != nil {
		return nil, "", false, translate(err)
	}
	return cur, v, found, nil
}

// WriteBatch queues the heartbeat columns of ls and the counts of cs to go
// out with the commit (or the transaction's next statement): the commit
// then costs no round trip of its own. updateLeasesSQL fails the
// transaction, in PostgreSQL, when a lease is not found.
func (t *tx) WriteBatch(ctx context.Context, ls []warp.Lease, cs []warp.HeartbeatCount) error {
	b := &pgx.Batch{}
	queueUpdateLeases(b, ls)
	queueRecordHeartbeats(b, cs)
	n, stmts := len(ls), b.Len()
	t.tx.deferWrites(b, func(br pgx.BatchResults) error {
		for i := range stmts {
			if _, err := br.Exec(); err != nil {
				var pe *pgconn.PgError
				if i == 0 && n > 0 && errors.As(err, &pe) && pe.Code == codeDivisionByZero {
					return fmt.Errorf("update %d leases: not all found: %w: %w", n, warp.ErrNotFound, err)
				}
				return translate(err)
			}
		}
		return nil
	})
	return nil
}

// updateLeasesSQL writes the heartbeat columns of leases given as arrays,
// one element a lease ($1 ticket, $2 epoch, then the columns), and fails
// (division by zero: the statement then aborts the transaction, which
// skips the COMMIT sent with it) unless it updated $20 leases.
const updateLeasesSQL = `WITH u AS (UPDATE leases l SET last_heartbeat_at = v.hb, last_activity_at = v.act,
		progress_at = v.prog, schema_version = v.schema, in_flight = v.in_flight, first_v2_at = v.first_v2,
		refreshed_at = v.refreshed, expires_at = v.expires, fallback_extended = v.fallback, hook_seen = v.hook_seen,
		hook_events = v.hook_events, recorded_verdict = v.verdict, verdict_due_at = v.due,
		last_progress_at = v.last_progress, loop_label = v.loop_label, loop_count = v.loop_count, loop_error = v.loop_error
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::integer[], $7::text[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::boolean[], $12::text[], $13::bigint[], $14::text[], $15::bigint[],
			$16::bigint[], $17::text[], $18::integer[], $19::text[])
			AS v(ticket, epoch, hb, act, prog, schema, in_flight, first_v2, refreshed, expires, fallback, hook_seen,
			hook_events, verdict, due, last_progress, loop_label, loop_count, loop_error)
		WHERE l.ticket = v.ticket AND l.epoch = v.epoch
		RETURNING 1)
	SELECT 1 / (count(*) = $20)::integer FROM u`

// queueUpdateLeases queues on b the update of the heartbeat columns of
// ls, in one statement (arrays unnested into rows); nothing for no lease.
func queueUpdateLeases(b *pgx.Batch, ls []warp.Lease) {
	if len(ls) == 0 {
		return
	}
	n := len(ls)
	var (
		tickets, inFlight, hookSeen, verdict                          = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		epoch, hb, act, prog, firstV2, refreshed, expires, hookEvents = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		due, lastProgress                                             = make([]int64, n), make([]int64, n)
		loopLabel, loopError                                          = make([]string, n), make([]string, n)
		schema, loopCount                                             = make([]int32, n), make([]int32, n)
		fallback                                                      = make([]bool, n)
	)
	for i, l := range ls {
		tickets[i], epoch[i] = l.Ticket, l.Epoch
		hb[i], act[i], prog[i] = ts(l.LastHeartbeatAt), ts(l.LastActivityAt), ts(warp.ProgressAt(l))
		schema[i], inFlight[i], firstV2[i], refreshed[i] = int32(l.SchemaVersion), l.InFlight, ts(l.FirstV2At), ts(l.RefreshedAt)
		expires[i], fallback[i], hookSeen[i], hookEvents[i] = ts(l.ExpiresAt), l.FallbackExtended, string(l.HookSeen), l.HookEvents
		verdict[i], due[i] = string(l.RecordedVerdict), ts(l.VerdictDueAt)
		lastProgress[i], loopLabel[i], loopCount[i], loopError[i] = ts(l.LastProgressAt), l.Loop.Label, int32(l.Loop.Count), l.Loop.Error
	}
	b.Queue(updateLeasesSQL, tickets, epoch, hb, act, prog, schema, inFlight, firstV2, refreshed, expires, fallback, hookSeen, hookEvents, verdict, due,
		lastProgress, loopLabel, loopCount, loopError, n)
}

// queueRecordHeartbeats queues on b a batch's heartbeat counts: the
// counts summed per count row (warp.SumHeartbeats) and the hosts' rows
// upserted, each in one statement, in host order. They write what
// RecordHeartbeat would for each of cs in turn: a new host's row takes the
// token of its first count, and its last count's schema version and time
// (a stored row keeps a newer time; under the warp.HostSeenStep rule a
// last-seen may differ from the one-by-one result by less than the step).
// Nothing for no count.
func queueRecordHeartbeats(b *pgx.Batch, cs []warp.HeartbeatCount) {
	if len(cs) == 0 {
		return
	}
	sums, hosts := warp.SumHeartbeats(cs)
	ch, cschema, cspan, cbucket, cn := make([]string, len(sums)), make([]int32, len(sums)), make([]int64, len(sums)), make([]int64, len(sums)), make([]int64, len(sums))
	for i, c := range sums {
		ch[i], cschema[i], cspan[i], cbucket[i], cn[i] = c.Host, int32(c.SchemaVersion), c.Span, c.Bucket, c.N
	}
	hn, htoken, hschema, hat := make([]string, len(hosts)), make([]string, len(hosts)), make([]int32, len(hosts)), make([]int64, len(hosts))
	for i, h := range hosts {
		hn[i], htoken[i], hschema[i], hat[i] = h.Host, h.Token, int32(h.SchemaVersion), ts(h.At)
	}
	b.Queue(`INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count)
		SELECT * FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[], $5::bigint[]) AS v(host, schema_version, span, bucket, count)
		ORDER BY v.host COLLATE "C", v.schema_version, v.span, v.bucket
		ON CONFLICT (host, schema_version, span, bucket) DO UPDATE SET count = heartbeat_counts.count + EXCLUDED.count`,
		ch, cschema, cspan, cbucket, cn)
	b.Queue(`INSERT INTO hosts (host, token, last_schema_version, last_seen)
		SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::bigint[]) AS v(host, token, last_schema_version, last_seen)
		ORDER BY v.host COLLATE "C"
		ON CONFLICT (host) DO UPDATE SET last_schema_version = EXCLUDED.last_schema_version, last_seen = EXCLUDED.last_seen
		WHERE `+hostSeenMoved,
		hn, htoken, hschema, hat, warp.HostSeenStep.Nanoseconds())
}
