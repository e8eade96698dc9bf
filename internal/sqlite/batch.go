package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gyrum-labs/warp/internal/warp"
)

// updateChunk is how many rows one multi-row statement of a heartbeat
// batch writes at most. The remainder of a batch's leases goes in one
// statement per binary digit (leaseChunk); that of its adoption counts and
// hosts in statements of smallChunk rows, then one row at a time (chunk).
// Each size is a prepared statement.
const (
	updateChunk = 32
	smallChunk  = 8
)

// argLists holds the argument lists of UpdateLeases' statements (15 an
// updated lease), reused from batch to batch.
var argLists = sync.Pool{New: func() any { a := make([]any, 0, 15*updateChunk); return &a }}

// leaseChunk returns how many of n leases UpdateLeases' next statement
// writes: updateChunk, else the largest power of two at most n, so a batch
// takes one statement per binary digit of its remainder (13: 8, 4, 1) where
// chunk's sizes took six (8 and five of one). Each size has its statement
// prepared (updateLeasesSQL).
func leaseChunk(n int) int {
	c := updateChunk
	for c > n {
		c /= 2
	}
	return c
}

// updateLeasesSQL holds UpdateLeases' statement for each chunk size
// (powers of two up to updateChunk), built once.
var updateLeasesSQL = func() map[int]string {
	m := map[int]string{1: qUpdateLeaseBeat}
	for n := 2; n <= updateChunk; n *= 2 {
		m[n] = qUpdateLeasesBeat(n)
	}
	return m
}()

// chunk returns how many of n rows the next statement writes.
func chunk(n int) int {
	switch {
	case n >= updateChunk:
		return updateChunk
	case n >= smallChunk:
		return smallChunk
	}
	return 1
}

// values returns a VALUES list of n rows of cols placeholders.
func values(n, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// qUpdateLeasesBeat writes the heartbeat columns of n leases in one
// statement: a VALUES list of (ticket, epoch, the columns of
// qUpdateLeaseBeat) joined to leases by its key.
func qUpdateLeasesBeat(n int) string {
	return `UPDATE leases SET last_heartbeat_at = v.column3, last_activity_at = v.column4, progress_at = v.column5,
		schema_version = v.column6, in_flight = v.column7, first_v2_at = v.column8, refreshed_at = v.column9,
		expires_at = v.column10, fallback_extended = v.column11, hook_seen = v.column12, hook_events = v.column13,
		recorded_verdict = v.column14, verdict_due_at = v.column15, last_progress_at = v.column16,
		loop_label = v.column17, loop_count = v.column18, loop_error = v.column19
		FROM (VALUES ` + values(n, 19) + `) AS v
		WHERE leases.ticket = v.column1 AND leases.epoch = v.column2`
}

// qCountHeartbeats adds n heartbeat counts (host, schema, span, bucket,
// count).
func qCountHeartbeats(n int) string {
	return `INSERT INTO heartbeat_counts (host, schema_version, span, bucket, count) VALUES ` + values(n, 5) + `
		ON CONFLICT (host, schema_version, span, bucket) DO UPDATE SET count = count + excluded.count`
}

// appendSum appends the columns of one count row, in qCountHeartbeats'
// order.
func appendSum(args []any, k warp.HeartbeatSum) []any {
	return append(args, k.Host, k.SchemaVersion, k.Span, k.Bucket, k.N)
}

// qRecordHosts updates the rows of n known hosts (host, schema, seen)
// under hostSeenMoved's rule: moved a warp.HostSeenStep, or a new schema
// version; never backwards.
func qRecordHosts(n int) string {
	return `UPDATE hosts SET last_schema_version = v.column2, last_seen = v.column3
		FROM (VALUES ` + values(n, 3) + `) AS v WHERE hosts.host = v.column1 AND
		(hosts.last_seen <= v.column3 - ` + strconv.FormatInt(warp.HostSeenStep.Nanoseconds(), 10) + ` OR
		(hosts.last_schema_version <> v.column2 AND hosts.last_seen <= v.column3))`
}

// hostSeenMoved is qRecordHost's condition (?1 the schema version, ?2 the
// time, ?4 warp.HostSeenStep in nanoseconds): the row is rewritten when
// its last-seen moved by the step, or its schema version changed and its
// time is not older.
const hostSeenMoved = `(last_seen <= ?2 - ?4 OR (last_schema_version <> ?1 AND last_seen <= ?2))`

// ReadBatch is CurrentLeases, then the meta value of key.
func (t *tx) ReadBatch(ctx context.Context, ids []string, key string) (map[string]warp.TicketLease, string, bool, error) {
	cur, err := t.CurrentLeases(ctx, ids)
	if err != nil {
		return nil, "", false, err
	}
	v, err := t.Meta(ctx, key)
	if errors.Is(err, warp.ErrNotFound) {
		return cur, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	return cur, v, true, nil
}

// WriteBatch is UpdateLeases(ls), then RecordHeartbeats(cs).
func (t *tx) WriteBatch(ctx context.Context, ls []warp.Lease, cs []warp.HeartbeatCount) error {
	if err := t.UpdateLeases(ctx, ls); err != nil {
		return err
	}
	return t.RecordHeartbeats(ctx, cs)
}

// CurrentLeases is CurrentLease for each of ids, in one query.
func (t *tx) CurrentLeases(ctx context.Context, ids []string) (map[string]warp.TicketLease, error) {
	arg, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read current leases: %w", err)
	}
	rows, err := t.query(ctx, qCurrentLeases, string(arg))
	if err != nil {
		return nil, translate("read current leases", err)
	}
	defer rows.Close()
	out := make(map[string]warp.TicketLease, len(ids))
	for rows.Next() {
		var tr ticketRow
		var lr leaseRow
		if err := rows.Scan(append(tr.dest(), lr.dest()...)...); err != nil {
			return nil, translate("read current leases", err)
		}
		tk, err := tr.ticket()
		if err != nil {
			return nil, err
		}
		tk.Labels = nil
		out[tk.ID] = warp.TicketLease{Ticket: tk, Lease: lr.lease()}
	}
	if err := rows.Err(); err != nil {
		return nil, translate("read current leases", err)
	}
	return out, nil
}

// UpdateLeases writes the heartbeat columns of ls, in statements of
// leaseChunk's sizes.
func (t *tx) UpdateLeases(ctx context.Context, ls []warp.Lease) error {
	for len(ls) > 0 {
		n := leaseChunk(len(ls))
		part := ls[:n]
		ls = ls[n:]
		q := updateLeasesSQL[n]
		p := argLists.Get().(*[]any)
		args := (*p)[:0]
		if n > 1 {
			for _, l := range part {
				args = append(args, l.Ticket, l.Epoch)
				args = appendBeat(args, l)
			}
		} else {
			args = append(appendBeat(args, part[0]), part[0].Ticket, part[0].Epoch)
		}
		res, err := t.exec(ctx, q, args...)
		clear(args)
		*p = args[:0]
		argLists.Put(p)
		if err == nil {
			if got, _ := res.RowsAffected(); got != int64(n) {
				err = fmt.Errorf("update %d leases: %d found: %w", n, got, warp.ErrNotFound)
			}
		}
		if err != nil {
			return translate("update leases", err)
		}
	}
	return nil
}

// appendBeat appends the heartbeat columns of l, in qUpdateLeaseBeat's order.
func appendBeat(args []any, l warp.Lease) []any {
	return append(args, nanos(l.LastHeartbeatAt), nanos(l.LastActivityAt), nanos(warp.ProgressAt(l)), l.SchemaVersion,
		l.InFlight, nanos(l.FirstV2At), nanos(l.RefreshedAt), nanos(l.ExpiresAt), boolInt(l.FallbackExtended),
		string(l.HookSeen), l.HookEvents, string(l.RecordedVerdict), nanos(l.VerdictDueAt),
		nanos(l.LastProgressAt), l.Loop.Label, l.Loop.Count, l.Loop.Error)
}

// RecordHeartbeats records a batch's counts as RecordHeartbeat would one
// by one, in few statements: the counts summed per count row
// (warp.SumHeartbeats) and added updateChunk rows at a time; a host not
// known to have its row gets it inserted (with the token of its first count), the
// others updated with their last count's schema version and time (under
// the warp.HostSeenStep rule, so a last-seen may differ from the one-by-one
// result by less than the step), also many rows at a time.
func (t *tx) RecordHeartbeats(ctx context.Context, cs []warp.HeartbeatCount) error {
	keys, hosts := warp.SumHeartbeats(cs)
	for len(keys) > 0 {
		n := chunk(len(keys))
		args := make([]any, 0, 5*n)
		for _, k := range keys[:n] {
			args = appendSum(args, k)
		}
		keys = keys[n:]
		q := qCountHeartbeat
		if n > 1 {
			q = qCountHeartbeats(n)
		}
		if _, err := t.exec(ctx, q, args...); err != nil {
			return translate("count heartbeats", err)
		}
	}
	var known []warp.HostSeen
	for _, h := range hosts {
		res, err := t.exec(ctx, qNewHost, h.Host, h.Token, h.SchemaVersion, nanos(h.At))
		if err != nil {
			return translate("record host", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			known = append(known, h) // it was there: update it
		}
	}
	for len(known) > 0 {
		n := chunk(len(known))
		args := make([]any, 0, 3*n)
		for _, h := range known[:n] {
			args = append(args, h.Host, h.SchemaVersion, nanos(h.At))
		}
		known = known[n:]
		q := qRecordHosts(n)
		if n == 1 {
			q, args = qRecordHost, []any{args[1], args[2], args[0], warp.HostSeenStep.Nanoseconds()}
		}
		if _, err := t.exec(ctx, q, args...); err != nil {
			return translate("record hosts", err)
		}
	}
	return nil
}
