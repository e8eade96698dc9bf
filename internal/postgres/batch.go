package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gyrum-labs/warp/internal/warp"
)

var _ warp.HeartbeatBatchTx = (*tx)(nil)

// CurrentLeases reads (and locks, in byte order of the ids — the order
// every multi-ticket transaction locks in) the current leases of ids in
// one statement: one round trip for a whole heartbeat batch.
func (t *tx) CurrentLeases(ctx context.Context, ids []string) (map[string]warp.TicketLease, error) {
	rows, err := t.tx.Query(ctx, "SELECT t.seq, t.id, t.title, NULL::text[], t.state, t.epoch, t.created_at, t.updated_at, "+leaseCols+
		` FROM tickets t JOIN leases l ON l.ticket = t.id AND l.epoch = t.epoch WHERE t.id = ANY($1) ORDER BY t.id COLLATE "C"`+
		t.forUpdate("FOR UPDATE OF t, l"), ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]warp.TicketLease, len(ids))
	for rows.Next() {
		var tr ticketRow
		var lr leaseRow
		if err := rows.Scan(append(tr.dest(), lr.dest()...)...); err != nil {
			return nil, translate(err)
		}
		tk := tr.ticket()
		tk.Labels = nil
		l := lr.lease()
		out[tk.ID] = warp.TicketLease{Ticket: tk, Lease: &l}
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// UpdateLeases writes the heartbeat columns of many leases in one
// statement (arrays unnested into rows).
func (t *tx) UpdateLeases(ctx context.Context, ls []warp.Lease) error {
	if len(ls) == 0 {
		return nil
	}
	n := len(ls)
	var (
		tickets, inFlight, hookSeen, verdict                          = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		epoch, hb, act, prog, firstV2, refreshed, expires, hookEvents = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		due                                                           = make([]int64, n)
		schema                                                        = make([]int32, n)
		fallback                                                      = make([]bool, n)
	)
	for i, l := range ls {
		tickets[i], epoch[i] = l.Ticket, l.Epoch
		hb[i], act[i], prog[i] = ts(l.LastHeartbeatAt), ts(l.LastActivityAt), ts(warp.ProgressAt(l))
		schema[i], inFlight[i], firstV2[i], refreshed[i] = int32(l.SchemaVersion), l.InFlight, ts(l.FirstV2At), ts(l.RefreshedAt)
		expires[i], fallback[i], hookSeen[i], hookEvents[i] = ts(l.ExpiresAt), l.FallbackExtended, string(l.HookSeen), l.HookEvents
		verdict[i], due[i] = string(l.RecordedVerdict), ts(l.VerdictDueAt)
	}
	tag, err := t.tx.Exec(ctx, `UPDATE leases l SET last_heartbeat_at = v.hb, last_activity_at = v.act,
		progress_at = v.prog, schema_version = v.schema, in_flight = v.in_flight, first_v2_at = v.first_v2,
		refreshed_at = v.refreshed, expires_at = v.expires, fallback_extended = v.fallback, hook_seen = v.hook_seen,
		hook_events = v.hook_events, recorded_verdict = v.verdict, verdict_due_at = v.due
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::integer[], $7::text[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::boolean[], $12::text[], $13::bigint[], $14::text[], $15::bigint[])
			AS v(ticket, epoch, hb, act, prog, schema, in_flight, first_v2, refreshed, expires, fallback, hook_seen,
			hook_events, verdict, due)
		WHERE l.ticket = v.ticket AND l.epoch = v.epoch`,
		tickets, epoch, hb, act, prog, schema, inFlight, firstV2, refreshed, expires, fallback, hookSeen, hookEvents, verdict, due)
	if err != nil {
		return translate(err)
	}
	if got := tag.RowsAffected(); got != int64(n) {
		return fmt.Errorf("update %d leases: %d found: %w", n, got, warp.ErrNotFound)
	}
	return nil
}

// RecordHeartbeats records a batch's heartbeat counts in one round trip:
// the counts summed per (host, schema version, bucket) and the hosts'
// rows upserted, each in one statement, in host order. It writes what
// RecordHeartbeat would for each of cs in turn: a new host's row takes
// the token of its first count, and its last count's schema version and
// time (a stored row keeps a newer time).
func (t *tx) RecordHeartbeats(ctx context.Context, cs []warp.HeartbeatCount) error {
	if len(cs) == 0 {
		return nil
	}
	sums, hosts := warp.SumHeartbeats(cs)
	ch, cschema, cbucket, cn := make([]string, len(sums)), make([]int32, len(sums)), make([]int64, len(sums)), make([]int64, len(sums))
	for i, c := range sums {
		ch[i], cschema[i], cbucket[i], cn[i] = c.Host, int32(c.SchemaVersion), c.Bucket, c.N
	}
	hn, htoken, hschema, hat := make([]string, len(hosts)), make([]string, len(hosts)), make([]int32, len(hosts)), make([]int64, len(hosts))
	for i, h := range hosts {
		hn[i], htoken[i], hschema[i], hat[i] = h.Host, h.Token, int32(h.SchemaVersion), ts(h.At)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO heartbeat_counts (host, schema_version, bucket, count)
		SELECT * FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[]) AS v(host, schema_version, bucket, count)
		ORDER BY v.host COLLATE "C", v.schema_version, v.bucket
		ON CONFLICT (host, schema_version, bucket) DO UPDATE SET count = heartbeat_counts.count + EXCLUDED.count`,
		ch, cschema, cbucket, cn)
	b.Queue(`INSERT INTO hosts (host, token, last_schema_version, last_seen)
		SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::bigint[]) AS v(host, token, last_schema_version, last_seen)
		ORDER BY v.host COLLATE "C"
		ON CONFLICT (host) DO UPDATE SET last_schema_version = EXCLUDED.last_schema_version, last_seen = EXCLUDED.last_seen
		WHERE hosts.last_seen <= EXCLUDED.last_seen`,
		hn, htoken, hschema, hat)
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return translate(err)
	}
	return nil
}
