package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a transaction on a pooled connection that spends fewer round
// trips than pgx.Tx. Its BEGIN is not sent on its own: it goes out in one
// pipeline with the transaction's first statements. Statements queued with
// deferWrites go out in one pipeline with the next statement, or with the
// COMMIT. A heartbeat batch is then two round trips (BEGIN with the lease
// reads, the lease writes with COMMIT) instead of four; on this host a
// round trip costs each side a sleep and a wake (warpbench runs in the history of docs/BENCHMARKS.md).
//
// A deferred statement must not depend on a check made after it runs: a
// pipeline runs through to its COMMIT. A statement that must fail the
// transaction fails in PostgreSQL (see updateLeasesSQL), which skips the
// rest of the pipeline, COMMIT included.
type pipeTx struct {
	conn  *pgxpool.Conn
	begin string // the BEGIN statement, until it was sent
	// deferred statements, and the checks that read their results, in
	// order.
	deferred *pgx.Batch
	checks   []func(pgx.BatchResults) error
}

func newPipeTx(conn *pgxpool.Conn, opts pgx.TxOptions) *pipeTx {
	return &pipeTx{conn: conn, begin: beginSQL(opts)}
}

// beginSQL is the BEGIN statement of opts.
func beginSQL(opts pgx.TxOptions) string {
	s := "BEGIN"
	if opts.IsoLevel != "" {
		s += " ISOLATION LEVEL " + string(opts.IsoLevel)
	}
	if opts.AccessMode != "" {
		s += " " + string(opts.AccessMode)
	}
	return s
}

// began reports whether BEGIN was sent (whatever came of it).
func (t *pipeTx) began() bool { return t.begin == "" }

// pipeline sends the pending BEGIN, the deferred statements and b's (nil:
// none) in one pipeline, reads the BEGIN's and the deferred statements'
// results, and returns the results of b's statements: the caller reads
// them and closes the results.
func (t *pipeTx) pipeline(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	all := &pgx.Batch{}
	withBegin := !t.began()
	if withBegin {
		all.Queue(t.begin)
		t.begin = ""
	}
	checks := t.checks
	if t.deferred != nil {
		all.QueuedQueries = append(all.QueuedQueries, t.deferred.QueuedQueries...)
		t.deferred, t.checks = nil, nil
	}
	if b != nil {
		all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	}
	br := t.conn.SendBatch(ctx, all)
	if withBegin {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	for _, check := range checks {
		if err := check(br); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

// flush sends what is pending (BEGIN, deferred statements) on its own:
// before a statement that cannot join a pipeline.
func (t *pipeTx) flush(ctx context.Context) error {
	if t.began() && t.deferred == nil {
		return nil
	}
	br, err := t.pipeline(ctx, nil)
	if err != nil {
		return err
	}
	return br.Close()
}

// deferWrites queues b's statements to go out with the next statement or
// the commit; check reads their results, in order, when they came back.
func (t *pipeTx) deferWrites(b *pgx.Batch, check func(pgx.BatchResults) error) {
	if b.Len() == 0 {
		return
	}
	if t.deferred == nil {
		t.deferred = &pgx.Batch{}
	}
	t.deferred.QueuedQueries = append(t.deferred.QueuedQueries, b.QueuedQueries...)
	t.checks = append(t.checks, check)
}

func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.flush(ctx); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

// SendBatch sends b in one pipeline with what is pending.
func (t *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := t.pipeline(ctx, b)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// commit sends the deferred statements and COMMIT in one pipeline. before
// reports that the failure came before the COMMIT ran (the transaction is
// then still open and must be rolled back; nothing was committed). A
// transaction that sent nothing commits nothing.
func (t *pipeTx) commit(ctx context.Context) (before bool, err error) {
	if !t.began() && t.deferred == nil {
		return false, nil
	}
	c := &pgx.Batch{}
	c.Queue("COMMIT")
	br, err := t.pipeline(ctx, c)
	if err != nil {
		// An error PostgreSQL answered to BEGIN or a deferred statement
		// made it skip the rest of the pipeline, COMMIT included; any
		// other (the connection broke) leaves the outcome unknown.
		var pe *pgconn.PgError
		return errors.As(err, &pe), err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if tag.String() != "COMMIT" {
		// PostgreSQL answered ROLLBACK: the transaction had failed.
		return false, pgx.ErrTxCommitRollback
	}
	return false, nil
}

// rollback ends a transaction that began; a connection it cannot roll
// back on is closed (the pool then drops it).
func (t *pipeTx) rollback(ctx context.Context) {
	if !t.began() {
		return
	}
	t.deferred, t.checks = nil, nil
	if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = t.conn.Conn().Close(ctx)
	}
}

// errRow is a pgx.Row that fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
