package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// attemptCols lists the attempt record's columns in the order
// attemptRow scans them; a LEFT JOIN that found no record scans NULLs.
const attemptCols = `a.note, a.note_at, a.end_verdict, a.ended_by, a.snapshot_state, a.snapshot_commit,
	a.snapshot_ref, a.snapshot_base, a.snapshot_branch, a.snapshot_remote, a.snapshot_pushed, a.snapshot_host,
	a.snapshot_detail, a.snapshot_at, a.cap_reset`

type attemptRow struct {
	note, verdict, by, state, commit, ref, base, branch, remote, host, detail sql.Null[string]
	noteAt, pushed, at, capReset                                              sql.Null[int64]
}

func (r *attemptRow) dest() []any {
	return []any{&r.note, &r.noteAt, &r.verdict, &r.by, &r.state, &r.commit, &r.ref, &r.base, &r.branch,
		&r.remote, &r.pushed, &r.host, &r.detail, &r.at, &r.capReset}
}

func (r *attemptRow) record(ticket string, epoch int64) warp.AttemptRecord {
	return warp.AttemptRecord{Ticket: ticket, Epoch: epoch, Note: r.note.V, NoteAt: fromNanos(r.noteAt.V),
		EndVerdict: r.verdict.V, EndedBy: r.by.V, CapReset: r.capReset.V != 0,
		Snapshot: warp.Snapshot{State: r.state.V, Commit: r.commit.V, Ref: r.ref.V, Base: r.base.V, Branch: r.branch.V,
			Remote: r.remote.V, Pushed: r.pushed.V != 0, Host: r.host.V, Detail: r.detail.V, At: fromNanos(r.at.V)}}
}

const (
	qAttempts = `SELECT ` + leaseCols + `, ` + attemptCols + ` FROM leases l
		LEFT JOIN attempts a ON a.ticket = l.ticket AND a.epoch = l.epoch
		WHERE l.ticket = ? ORDER BY l.epoch DESC LIMIT ?`
	qAttemptRecord = `SELECT ` + attemptCols + ` FROM attempts a WHERE a.ticket = ? AND a.epoch = ?`
	qAttemptNote   = `INSERT INTO attempts (ticket, epoch, note, note_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (ticket, epoch) DO UPDATE SET note = excluded.note, note_at = excluded.note_at`
	qAttemptEnd = `INSERT INTO attempts (ticket, epoch, end_verdict, ended_by) VALUES (?, ?, ?, ?)
		ON CONFLICT (ticket, epoch) DO UPDATE SET end_verdict = excluded.end_verdict, ended_by = excluded.ended_by`
	qAttemptCapReset = `INSERT INTO attempts (ticket, epoch, cap_reset) VALUES (?, ?, 1)
		ON CONFLICT (ticket, epoch) DO UPDATE SET cap_reset = 1`
	qAttemptSnapshot = `INSERT INTO attempts (ticket, epoch, snapshot_state, snapshot_commit, snapshot_ref, snapshot_base,
			snapshot_branch, snapshot_remote, snapshot_pushed, snapshot_host, snapshot_detail, snapshot_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (ticket, epoch) DO UPDATE SET snapshot_state = excluded.snapshot_state,
			snapshot_commit = excluded.snapshot_commit, snapshot_ref = excluded.snapshot_ref,
			snapshot_base = excluded.snapshot_base, snapshot_branch = excluded.snapshot_branch,
			snapshot_remote = excluded.snapshot_remote, snapshot_pushed = excluded.snapshot_pushed,
			snapshot_host = excluded.snapshot_host, snapshot_detail = excluded.snapshot_detail,
			snapshot_at = excluded.snapshot_at
		WHERE attempts.snapshot_state = ''`
)

func (t *tx) Attempts(ctx context.Context, ticket string, limit int) ([]warp.Attempt, error) {
	rows, err := t.query(ctx, qAttempts, ticket, limitArg(limit))
	if err != nil {
		return nil, translate("read attempts", err)
	}
	defer rows.Close()
	var out []warp.Attempt
	for rows.Next() {
		var lr leaseRow
		var ar attemptRow
		if err := rows.Scan(append(lr.dest(), ar.dest()...)...); err != nil {
			return nil, translate("read attempts", err)
		}
		l := lr.lease()
		out = append(out, warp.Attempt{Lease: *l, Record: ar.record(l.Ticket, l.Epoch)})
	}
	if err := rows.Err(); err != nil {
		return nil, translate("read attempts", err)
	}
	return out, nil
}

func (t *tx) AttemptRecord(ctx context.Context, ticket string, epoch int64) (warp.AttemptRecord, error) {
	var ar attemptRow
	err := t.queryRow(ctx, qAttemptRecord, ticket, epoch).Scan(ar.dest()...)
	if err == sql.ErrNoRows {
		return warp.AttemptRecord{Ticket: ticket, Epoch: epoch}, nil
	}
	if err != nil {
		return warp.AttemptRecord{}, translate(fmt.Sprintf("read attempt %s/%d", ticket, epoch), err)
	}
	return ar.record(ticket, epoch), nil
}

func (t *tx) SetAttemptNote(ctx context.Context, ticket string, epoch int64, note string, at time.Time) error {
	_, err := t.exec(ctx, qAttemptNote, ticket, epoch, note, nanos(at))
	return translateErr(fmt.Sprintf("write the note of %s/%d", ticket, epoch), err)
}

func (t *tx) SetAttemptEnd(ctx context.Context, ticket string, epoch int64, verdict, by string) error {
	_, err := t.exec(ctx, qAttemptEnd, ticket, epoch, verdict, by)
	return translateErr(fmt.Sprintf("write the end of %s/%d", ticket, epoch), err)
}

func (t *tx) SetAttemptCapReset(ctx context.Context, ticket string, epoch int64) error {
	_, err := t.exec(ctx, qAttemptCapReset, ticket, epoch)
	return translateErr(fmt.Sprintf("reset the cap at %s/%d", ticket, epoch), err)
}

func (t *tx) SetAttemptSnapshot(ctx context.Context, ticket string, epoch int64, s warp.Snapshot) error {
	op := fmt.Sprintf("write the snapshot of %s/%d", ticket, epoch)
	res, err := t.exec(ctx, qAttemptSnapshot, ticket, epoch, s.State, s.Commit, s.Ref, s.Base, s.Branch, s.Remote,
		boolInt(s.Pushed), s.Host, s.Detail, nanos(s.At))
	if err != nil {
		return translate(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return translate(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, warp.ErrConflict)
	}
	return nil
}

func translateErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return translate(op, err)
}
