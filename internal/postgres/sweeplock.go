package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TrySweepLock reports whether this replica may run the expiry sweep now
// (internal/expiry calls it before each sweep, every interval). The lock
// is a session advisory lock (pg_try_advisory_lock) on a connection of its
// own, and the replica that wins it keeps it between sweeps: one replica
// sweeps per interval, always the same one, until it closes the DB or its
// lock connection dies (the process is killed, the network drops, the
// database restarts). PostgreSQL then frees the lock and the next call on
// another replica wins it, so a dead sweeper is replaced within one sweep
// interval.
//
// hold bounds how long the lock outlives the last call: the lock session
// runs with idle_session_timeout = hold, so a sweeper that stops calling
// without dying — frozen (SIGSTOP, a VM suspended), or cut off from the
// database with its TCP session left open — loses the lock to PostgreSQL
// after hold, and another replica takes over. A sweeper that resumes
// finds its session gone and sweeps no more until it wins the lock again;
// a sweep it was in the middle of lapses only leases it locks row by row,
// as any concurrent sweep does. 0: no bound.
//
// ok is false, with a nil error, when another replica holds the lock. release
// ends this sweep; leadership stays until Close. An error means the lock
// could not be checked (a wrapped ErrUnavailable when the database is down):
// the caller skips this sweep.
func (db *DB) TrySweepLock(ctx context.Context, hold time.Duration) (release func(), ok bool, err error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, false, errors.New("sweep lock: postgres store is closed")
	}
	if db.leader != nil {
		err := db.leader.Ping(ctx)
		if err == nil {
			return func() {}, true, nil
		}
		if isIdleSessionTimeout(err) {
			// Not a fault of the database: this replica went longer than
			// hold between two calls (stopped, or starved of CPU), and
			// PostgreSQL ended the lock session as designed.
			db.log.Warn("postgres: lost the sweep lock: this replica made no sweep-lock call for longer than the hold (it stalled), so PostgreSQL ended the lock session and another replica may sweep now; trying to win it again",
				"sweep_lock", "lost", "hold", db.lockHold, "err", err)
		} else {
			db.log.Warn("postgres: lost the connection that held the sweep lock; trying to win it again", "sweep_lock", "lost", "err", err)
		}
		db.leader = nil // the session is gone, and its lock with it
		db.dropLockConnLocked()
	}
	if db.lockConn == nil {
		cfg := db.connCfg.Copy()
		if hold > 0 {
			cfg.RuntimeParams["idle_session_timeout"] = strconv.FormatInt(max(hold.Milliseconds(), 1), 10)
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, false, fmt.Errorf("sweep lock: %w", translate(err))
		}
		db.lockConn, db.lockHold = conn, hold
	}
	var got bool
	if err := db.lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", db.sweepKey).Scan(&got); err != nil {
		db.dropLockConnLocked()
		return nil, false, fmt.Errorf("sweep lock: %w", translate(err))
	}
	if !got {
		return nil, false, nil
	}
	db.leader = db.lockConn
	db.log.Info("postgres: this replica holds the sweep lock and runs the expiry sweep", "sweep_lock", "won", "schema", db.schema)
	return func() {}, true, nil
}

// isIdleSessionTimeout reports an error that says PostgreSQL ended the
// session because it sat idle longer than its idle_session_timeout: for the
// sweep lock's session, that its replica made no call for longer than hold.
func isIdleSessionTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeIdleSessionTimeout
}

// dropLockConnLocked closes the lock connection; PostgreSQL releases the
// session lock with it. db.mu must be held.
func (db *DB) dropLockConnLocked() {
	if db.lockConn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if db.leader != nil {
			// Unlock before closing: the server ends a closed session
			// asynchronously, an unlock frees the lock before Close returns.
			_, _ = db.lockConn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
		}
		_ = db.lockConn.Close(ctx)
		cancel()
	}
	db.lockConn, db.leader = nil, nil
}
