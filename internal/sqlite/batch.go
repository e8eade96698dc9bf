package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gyrum-labs/warp/internal/warp"
)

var _ warp.HeartbeatBatchTx = (*tx)(nil)

// updateChunk is how many leases one multi-row heartbeat update writes;
// a remainder is written a lease at a time.
const updateChunk = 32

// qUpdateLeasesBeat writes the heartbeat columns of n leases in one
// statement: a VALUES list of (ticket, epoch, the columns of
// qUpdateLeaseBeat) joined to leases by its key.
func qUpdateLeasesBeat(n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", 15), ", ") + ")"
	return `UPDATE leases SET last_heartbeat_at = v.column3, last_activity_at = v.column4, progress_at = v.column5,
		schema_version = v.column6, in_flight = v.column7, first_v2_at = v.column8, refreshed_at = v.column9,
		expires_at = v.column10, fallback_extended = v.column11, hook_seen = v.column12, hook_events = v.column13,
		recorded_verdict = v.column14, verdict_due_at = v.column15
		FROM (VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + `) AS v
		WHERE leases.ticket = v.column1 AND leases.epoch = v.column2`
}

// CurrentLeases reads the leases one by one: the writer's lease cache
// answers most of them without a statement.
func (t *tx) CurrentLeases(ctx context.Context, ids []string) (map[string]warp.TicketLease, error) {
	out := make(map[string]warp.TicketLease, len(ids))
	for _, id := range ids {
		tk, l, err := t.CurrentLease(ctx, id)
		if errors.Is(err, warp.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = warp.TicketLease{Ticket: tk, Lease: &l}
	}
	return out, nil
}

// UpdateLeases writes the heartbeat columns of ls, updateChunk leases per
// statement.
func (t *tx) UpdateLeases(ctx context.Context, ls []warp.Lease) error {
	for len(ls) > 0 {
		n := min(len(ls), updateChunk)
		if n < updateChunk {
			n = 1
		}
		chunk := ls[:n]
		ls = ls[n:]
		q := qUpdateLeaseBeat
		args := make([]any, 0, 15*n)
		if n > 1 {
			q = qUpdateLeasesBeat(n)
			for _, l := range chunk {
				args = append(args, l.Ticket, l.Epoch)
				args = appendBeat(args, l)
			}
		} else {
			args = append(appendBeat(args, chunk[0]), chunk[0].Ticket, chunk[0].Epoch)
		}
		res, err := t.exec(ctx, q, args...)
		if err == nil {
			if got, _ := res.RowsAffected(); got != int64(n) {
				err = fmt.Errorf("update %d leases: %d found: %w", n, got, warp.ErrNotFound)
			}
		}
		for _, l := range chunk {
			if e, ok := t.cachedLease(l.Ticket); err == nil && ok && e.l.Epoch == l.Epoch {
				t.cacheLease(l.Ticket, e.t, stored(l))
			} else {
				t.uncache(l.Ticket)
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
		string(l.HookSeen), l.HookEvents, string(l.RecordedVerdict), nanos(l.VerdictDueAt))
}

// RecordHeartbeats records each count in turn.
func (t *tx) RecordHeartbeats(ctx context.Context, cs []warp.HeartbeatCount) error {
	for _, c := range cs {
		if _, err := t.RecordHeartbeat(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
