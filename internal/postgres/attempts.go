package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gyrum-labs/warp/internal/warp"
)

// attemptCols lists the attempt record's columns in the order attemptRow
// scans them; a LEFT JOIN that found no record scans NULLs.
const attemptCols = "a.note, a.note_at, a.end_verdict, a.ended_by, a.snapshot_state, a.snapshot_commit, " +
	"a.snapshot_ref, a.snapshot_base, a.snapshot_branch, a.snapshot_remote, a.snapshot_pushed, a.snapshot_host, " +
	"a.snapshot_detail, a.snapshot_at, a.cap_reset"

type attemptRow struct {
	note, verdict, by, state, commit, ref, base, branch, remote, host, detail pgtype.Text
	noteAt, at                                                                pgtype.Int8
	pushed, capReset                                                          pgtype.Bool
}

func (r *attemptRow) dest() []any {
	return []any{&r.note, &r.noteAt, &r.verdict, &r.by, &r.state, &r.commit, &r.ref, &r.base, &r.branch,
		&r.remote, &r.pushed, &r.host, &r.detail, &r.at, &r.capReset}
}

func (r *attemptRow) record(ticket string, epoch int64) warp.AttemptRecord {
	return warp.AttemptRecord{Ticket: ticket, Epoch: epoch, Note: r.note.String, NoteAt: fromTS(r.noteAt),
		EndVerdict: r.verdict.String, EndedBy: r.by.String, CapReset: r.capReset.Bool,
		Snapshot: warp.Snapshot{State: r.state.String, Commit: r.commit.String, Ref: r.ref.String, Base: r.base.String,
			Branch: r.branch.String, Remote: r.remote.String, Pushed: r.pushed.Bool, Host: r.host.String,
			Detail: r.detail.String, At: fromTS(r.at)}}
}

func (t *tx) Attempts(ctx context.Context, ticket string, limit int) ([]warp.Attempt, error) {
	rows, err := t.tx.Query(ctx, "SELECT "+leaseCols+", "+attemptCols+" FROM leases l "+
		"LEFT JOIN attempts a ON a.ticket = l.ticket AND a.epoch = l.epoch "+
		"WHERE l.ticket = $1 ORDER BY l.epoch DESC LIMIT $2", ticket, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", translate(err))
	}
	defer rows.Close()
	var out []warp.Attempt
	for rows.Next() {
		var lr leaseRow
		var ar attemptRow
		if err := rows.Scan(append(lr.dest(), ar.dest()...)...); err != nil {
			return nil, fmt.Errorf("read attempts: %w", translate(err))
		}
		l := lr.lease()
		out = append(out, warp.Attempt{Lease: l, Record: ar.record(l.Ticket, l.Epoch)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read attempts: %w", translate(err))
	}
	return out, nil
}

func (t *tx) AttemptRecord(ctx context.Context, ticket string, epoch int64) (warp.AttemptRecord, error) {
	var ar attemptRow
	err := t.tx.QueryRow(ctx, "SELECT "+attemptCols+" FROM attempts a WHERE a.ticket = $1 AND a.epoch = $2", ticket, epoch).Scan(ar.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return warp.AttemptRecord{Ticket: ticket, Epoch: epoch}, nil
	}
	if err != nil {
		return warp.AttemptRecord{}, fmt.Errorf("read attempt %s/%d: %w", ticket, epoch, translate(err))
	}
	return ar.record(ticket, epoch), nil
}

func (t *tx) SetAttemptNote(ctx context.Context, ticket string, epoch int64, note string, at time.Time) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO attempts (ticket, epoch, note, note_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (ticket, epoch) DO UPDATE SET note = excluded.note, note_at = excluded.note_at`, ticket, epoch, note, ts(at))
	if err != nil {
		return fmt.Errorf("write the note of %s/%d: %w", ticket, epoch, translate(err))
	}
	return nil
}

func (t *tx) SetAttemptEnd(ctx context.Context, ticket string, epoch int64, verdict, by string) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO attempts (ticket, epoch, end_verdict, ended_by) VALUES ($1, $2, $3, $4)
		ON CONFLICT (ticket, epoch) DO UPDATE SET end_verdict = excluded.end_verdict, ended_by = excluded.ended_by`, ticket, epoch, verdict, by)
	if err != nil {
		return fmt.Errorf("write the end of %s/%d: %w", ticket, epoch, translate(err))
	}
	return nil
}

func (t *tx) SetAttemptCapReset(ctx context.Context, ticket string, epoch int64) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO attempts (ticket, epoch, cap_reset) VALUES ($1, $2, true)
		ON CONFLICT (ticket, epoch) DO UPDATE SET cap_reset = true`, ticket, epoch)
	if err != nil {
		return fmt.Errorf("reset the cap at %s/%d: %w", ticket, epoch, translate(err))
	}
	return nil
}

func (t *tx) SetAttemptSnapshot(ctx context.Context, ticket string, epoch int64, s warp.Snapshot) error {
	tag, err := t.tx.Exec(ctx, `INSERT INTO attempts (ticket, epoch, snapshot_state, snapshot_commit, snapshot_ref, snapshot_base,
			snapshot_branch, snapshot_remote, snapshot_pushed, snapshot_host, snapshot_detail, snapshot_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (ticket, epoch) DO UPDATE SET snapshot_state = excluded.snapshot_state,
			snapshot_commit = excluded.snapshot_commit, snapshot_ref = excluded.snapshot_ref,
			snapshot_base = excluded.snapshot_base, snapshot_branch = excluded.snapshot_branch,
			snapshot_remote = excluded.snapshot_remote, snapshot_pushed = excluded.snapshot_pushed,
			snapshot_host = excluded.snapshot_host, snapshot_detail = excluded.snapshot_detail,
			snapshot_at = excluded.snapshot_at
		WHERE attempts.snapshot_state = ''`,
		ticket, epoch, s.State, s.Commit, s.Ref, s.Base, s.Branch, s.Remote, s.Pushed, s.Host, s.Detail, ts(s.At))
	if err != nil {
		return fmt.Errorf("write the snapshot of %s/%d: %w", ticket, epoch, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("write the snapshot of %s/%d: %w", ticket, epoch, warp.ErrConflict)
	}
	return nil
}
