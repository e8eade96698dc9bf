// Package postgres is the warp.Store on PostgreSQL (pgx v5), for running
// several warp replicas on one database.
//
// Update runs READ COMMITTED with explicit row locks: reads of tickets and
// leases inside Update take FOR UPDATE, claim-next and the sweep take
// FOR UPDATE SKIP LOCKED, so concurrent replicas never hand out one ticket
// twice nor lapse one lease twice. Transactions that fail with a
// serialization failure or a deadlock, or on a connection that broke before
// commit, are re-run a few times. View runs REPEATABLE READ READ ONLY, one
// consistent snapshot.
//
// Migrations are embedded and applied at Open under an advisory lock, so
// replicas starting together do not race. The DB also implements the sweep
// lock of internal/expiry (TrySweepLock): a session advisory lock held on a
// connection of its own, so one replica sweeps at a time and another takes
// over when it dies.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultRetries        = 5
)

// Options tunes Open. The zero value is usable.
type Options struct {
	// MaxConns bounds the connection pool of this process. 0: the URL's
	// pool_max_conns, else pgx's default (4 or the number of CPUs, whichever
	// is larger). The sweep lock uses one more connection of its own.
	MaxConns int32
	// MinConns keeps that many connections open. 0: the URL's
	// pool_min_conns, else none.
	MinConns int32
	// Schema is the schema that holds warp's tables; it is created when
	// missing and put first on the search_path. Empty: the first schema of
	// the connection's search_path (public unless the URL says otherwise).
	Schema string
	// ConnectTimeout bounds one connection attempt. 0: the URL's
	// connect_timeout, else DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Retries is how many times Update re-runs a transaction that failed with
	// a serialization failure, a deadlock or a connection broken before
	// commit. 0: DefaultRetries; negative: none.
	Retries int
	// ApplicationName shows in pg_stat_activity. Empty: the URL's
	// application_name, else "warp pid N".
	ApplicationName string
	// Logger receives operational messages; discarded when nil.
	Logger *slog.Logger
}

// DB is a warp.Store on a PostgreSQL connection pool. It is safe for
// concurrent use.
type DB struct {
	pool     *pgxpool.Pool
	connCfg  *pgx.ConnConfig
	schema   string
	sweepKey int64
	retries  int
	log      *slog.Logger

	deadlocks, serialization, reconnects atomic.Int64

	clock dbClock // the database's clock (clock.go)

	mu       sync.Mutex
	lockConn *pgx.Conn     // the connection the sweep lock is tried on
	leader   *pgx.Conn     // lockConn while it holds the sweep lock, else nil
	lockHold time.Duration // lockConn's idle_session_timeout (TrySweepLock's hold)
	closed   bool
}

var _ warp.Store = (*DB)(nil)

// Open connects to the database at url (postgres:// or postgresql://, or a
// key=value DSN), applies the embedded migrations and returns the store.
// A url pgx cannot parse is an ErrInvalid error; a database that cannot be
// reached, a wrapped ErrUnavailable.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := poolConfig(url, opts)
	if err != nil {
		return nil, err
	}
	cc := cfg.ConnConfig
	db := &DB{connCfg: cc.Copy(), retries: opts.Retries, log: opts.Logger}
	if db.retries == 0 {
		db.retries = DefaultRetries
	}
	if db.log == nil {
		db.log = slog.New(slog.DiscardHandler)
	}
	db.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres pool: %w", translate(err))
	}
	schema, err := db.migrate(ctx, opts.Schema)
	if err != nil {
		db.pool.Close()
		var we *warp.Error
		switch {
		case errors.As(err, &we):
			return nil, err
		case isUnavailable(err):
			// The cause is quoted, not wrapped: this is about the database,
			// callers must not mistake it for a failure to reach warp.
			return nil, warp.Errorf(warp.ErrUnavailable, "cannot reach PostgreSQL at %s:%d (database %q): %v", cc.Host, cc.Port, cc.Database, err)
		}
		return nil, fmt.Errorf("migrate postgres schema: %w", translate(err))
	}
	db.schema = schema
	db.sweepKey = lockKey("warp.sweep", schema)
	if err := db.readClock(ctx); err != nil {
		db.pool.Close()
		return nil, err
	}
	return db, nil
}

// poolConfig is the pool's configuration: the connection string with
// opts' pool sizes, connect timeout, application name, schema and the
// server-side bounds (ServerTimeouts) the string does not set.
func poolConfig(url string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, warp.Errorf(warp.ErrInvalid, "invalid PostgreSQL connection string: %v", err)
	}
	if opts.MaxConns < 0 || opts.MinConns < 0 {
		return nil, warp.Errorf(warp.ErrInvalid, "postgres pool sizes must not be negative, got max %d min %d", opts.MaxConns, opts.MinConns)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MinConns > 0 {
		cfg.MinConns = opts.MinConns
	}
	if cfg.MinConns > cfg.MaxConns {
		return nil, warp.Errorf(warp.ErrInvalid, "postgres pool_min_conns %d is larger than pool_max_conns %d", cfg.MinConns, cfg.MaxConns)
	}
	cc := cfg.ConnConfig
	if opts.ConnectTimeout > 0 {
		cc.ConnectTimeout = opts.ConnectTimeout
	} else if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.ApplicationName != "" {
		cc.RuntimeParams["application_name"] = opts.ApplicationName
	} else if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = fmt.Sprintf("warp pid %d", os.Getpid())
	}
	if stmt := serverBounds(cc.RuntimeParams); stmt != "" {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, stmt)
			return err
		}
	}
	if opts.Schema != "" {
		if len(opts.Schema) > 63 {
			return nil, warp.Errorf(warp.ErrInvalid, "postgres schema name %q is longer than 63 bytes", opts.Schema)
		}
		cc.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	return cfg, nil
}

// serverBounds is the statement that sets the server-side bounds the
// connection's parameters do not set themselves, "" when they set all. A
// replica that freezes inside a transaction (a paused VM, a stopped
// process) would otherwise hold its row locks for good, and every other
// replica's batches, sweeps and claims would queue behind them. Its
// session ends after the idle bound; a transaction that waits on a lock
// longer than the lock bound fails as unavailable (503). They are SET once
// a connection is up, not sent as startup parameters, which PgBouncer
// refuses.
func serverBounds(given map[string]string) string {
	var set []string
	for _, k := range slices.Sorted(maps.Keys(ServerTimeouts)) {
		if _, ok := given[k]; !ok {
			set = append(set, "SET "+k+" = '"+ServerTimeouts[k]+"'")
		}
	}
	return strings.Join(set, "; ")
}

// ServerTimeouts are the session settings Open gives every connection
// unless the connection string sets them.
var ServerTimeouts = map[string]string{
	"idle_in_transaction_session_timeout": "60s",
	"lock_timeout":                        "30s",
}

// Schema returns the schema that holds warp's tables.
func (db *DB) Schema() string { return db.schema }

// Pool returns the connection pool, for operational queries and tests.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// lockKey derives an advisory lock key from a purpose and a schema, so
// deployments in different schemas of one database do not share locks.
func lockKey(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(schema))
	return int64(h.Sum64())
}

// Update runs fn in a READ COMMITTED read-write transaction and commits when
// fn returns nil. Reads of tickets and leases inside fn lock their rows.
// A serialization failure, a deadlock or a connection that broke before
// commit re-runs fn (at most Options.Retries times), so fn must not keep
// effects outside the transaction except through its final result.
func (db *DB) Update(ctx context.Context, fn func(warp.Tx) error) error {
	return db.run(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadWrite}, true, fn)
}

// View runs fn in a REPEATABLE READ read-only transaction: one snapshot.
func (db *DB) View(ctx context.Context, fn func(warp.Tx) error) error {
	return db.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, false, fn)
}

func (db *DB) run(ctx context.Context, opts pgx.TxOptions, write bool, fn func(warp.Tx) error) error {
	for attempt := 0; ; attempt++ {
		retry, err := db.runOnce(ctx, opts, write, fn)
		if err == nil {
			return nil
		}
		if !retry || attempt >= db.retries || ctx.Err() != nil {
			return err
		}
		db.count(err)
		// Jittered backoff, a few milliseconds growing per attempt.
		d := time.Duration(1+rand.IntN(5*(attempt+1))) * time.Millisecond
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		db.log.Debug("postgres: retrying transaction", "attempt", attempt+1, "err", err)
	}
}

// runOnce runs one attempt and reports whether a failure may be retried:
// only failures before commit, where PostgreSQL rolled everything back.
func (db *DB) runOnce(ctx context.Context, opts pgx.TxOptions, write bool, fn func(warp.Tx) error) (retry bool, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		err = translate(err)
		return errors.Is(err, warp.ErrUnavailable) || retryable(err), fmt.Errorf("begin: %w", err)
	}
	defer conn.Release()
	ptx := newPipeTx(conn, opts)
	// failed rolls back after an error before commit, which may be re-run.
	failed := func(err error) (bool, error) {
		broken := conn.Conn().IsClosed()
		ptx.rollback(context.WithoutCancel(ctx))
		if broken && !errors.Is(err, warp.ErrUnavailable) {
			err = unavailable(err)
		}
		// A lock or statement bound already waited its whole length: at
		// once again would wait as long, Retries times over.
		if timedOut(err) {
			return false, err
		}
		return retryable(err) || errors.Is(err, warp.ErrUnavailable), err
	}
	if err := fn(&tx{tx: ptx, write: write}); err != nil {
		return failed(err)
	}
	before, err := ptx.commit(ctx)
	if err != nil && before {
		return failed(translate(err))
	}
	if err != nil {
		// The outcome of a commit that got no answer is unknown: never re-run.
		if isUnavailable(err) || conn.Conn().IsClosed() {
			return false, fmt.Errorf("commit: %w", unavailableAtCommit(err))
		}
		return false, fmt.Errorf("commit: %w", translate(err))
	}
	return false, nil
}

// Stats counts the transactions Update and View re-ran, by cause.
type Stats struct {
	Deadlocks             int64 // 40P01: PostgreSQL broke a lock cycle
	SerializationFailures int64 // 40001
	Reconnects            int64 // the connection broke before commit
}

// Stats returns the retry counters since Open.
func (db *DB) Stats() Stats {
	return Stats{Deadlocks: db.deadlocks.Load(), SerializationFailures: db.serialization.Load(), Reconnects: db.reconnects.Load()}
}

func (db *DB) count(err error) {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == codeDeadlockDetected:
		db.deadlocks.Add(1)
	case errors.As(err, &pe) && pe.Code == codeSerializationFailure:
		db.serialization.Add(1)
	default:
		db.reconnects.Add(1)
	}
}

// Ping reports whether the database is reachable: a wrapped ErrUnavailable
// when it is not.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return translate(err)
	}
	return nil
}

// Close releases the sweep lock and closes the pool.
func (db *DB) Close() error {
	db.mu.Lock()
	db.closed = true
	db.dropLockConnLocked()
	db.mu.Unlock()
	db.stopClock()
	db.pool.Close()
	return nil
}

// MaxBatchWorkers bounds ConcurrentWriters: two batches at once let one
// read while the other commits; more split the same heartbeats into
// smaller batches, each paying its own commit (paired runs on the bench
// host: two workers 0.328 of the no-op handler, three 0.301, with
// PostgreSQL spending a fifth less CPU a heartbeat; warpbench runs in the history of docs/BENCHMARKS.md).
const MaxBatchWorkers = 2

// ConcurrentWriters tells the Service's heartbeat group commit how many
// batches to apply at once: MaxBatchWorkers, fewer when the pool is
// smaller, so one pooled connection stays free for claims, reads and the
// sweep.
func (db *DB) ConcurrentWriters() int {
	return max(1, min(MaxBatchWorkers, int(db.pool.Config().MaxConns)-1))
}

var _ warp.ConcurrentWriter = (*DB)(nil)
