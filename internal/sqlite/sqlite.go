// Package sqlite is the embedded warp.Store: one SQLite file, opened with
// the pure-Go driver modernc.org/sqlite (no cgo), in WAL mode, with the
// schema kept by numbered migrations embedded in the binary.
//
// Writers are serialised: Update runs on a single dedicated connection that
// begins every transaction with BEGIN IMMEDIATE, so a read followed by a
// write inside one Update is atomic, also against another process on the
// same file (busy_timeout makes that process wait). View runs on a pool of
// read-only connections that WAL lets proceed alongside the writer, each on
// a consistent snapshot.
//
// Durability: synchronous=NORMAL. In WAL mode a commit is in the WAL file
// (the operating system's page cache) when Update returns, so an
// acknowledged write survives a crash or SIGKILL of the process. Only an
// operating-system crash or power loss can roll back the last commits (the
// file stays consistent). FULL would fsync every commit and cost
// heartbeat throughput for a case a process kill does not hit.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gyrum-labs/warp/internal/warp"
)

//go:embed migrations/*.sql
var migrations embed.FS

// ApplicationID marks a SQLite file as a warp database (PRAGMA
// application_id, "warp" in ASCII).
const ApplicationID = 0x77617270

// BusyTimeout is how long a statement waits for a lock another process
// holds before it fails with ErrUnavailable.
const BusyTimeout = 5 * time.Second

// Errors of Open.
var (
	// ErrNewerSchema reports a database written by a newer warp: it records
	// a migration this build does not know.
	ErrNewerSchema = errors.New("database schema is newer than this warp")
	// ErrNotDatabase reports a file that is not a warp SQLite database (not
	// SQLite at all, corrupt, or another program's database).
	ErrNotDatabase = errors.New("not a warp database")
)

// DB is a warp.Store on one SQLite file. It is safe for concurrent use.
type DB struct {
	path   string
	w      *sql.DB // one connection: the writer
	r      *sql.DB // read-only pool
	wStmts stmtCache
	rStmts stmtCache
	ckpt   *checkpointer // see checkpoint.go
	log    *slog.Logger

	// ident is the database file's identity when it was opened (see
	// checkFile); lost is set once it no longer names that file.
	ident fileIdent
	lost  atomic.Bool
	// writeErr holds the error of the last write transaction when it
	// failed for want of the database (full, unwritable), nil once one
	// succeeds: Ping then reports not ready.
	writeErr atomic.Pointer[error]
}

// Options tunes OpenWith.
type Options struct {
	// Logger receives a line before and after each migration applied to
	// a file that had a warp schema already (an upgrade's migration over
	// a large file may take minutes); none when nil.
	Logger *slog.Logger
}

var _ warp.Store = (*DB)(nil)

// Open opens (creating when missing) the SQLite database at path, applies
// pending migrations and returns the store. It refuses a database with a
// migration it does not know (ErrNewerSchema) and a file that is not a warp
// database (ErrNotDatabase).
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("open sqlite database: %w: no path given", warp.ErrInvalid)
	}
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open sqlite database %q: want a plain file path (an in-memory database cannot be shared by the read and write connections)", path)
	}
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db := &DB{path: path, w: w, log: log}
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if db.ident, err = statIdent(path); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.r = r
	ck, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
	}
	ck.SetMaxOpenConns(1)
	ck.SetMaxIdleConns(1)
	db.ckpt = newCheckpointer(ck, w, CheckpointCommits, CheckpointInterval)
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if db.wStmts, err = prepareAll(ctx, w); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if db.rStmts, err = prepareAll(ctx, r); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// dsn builds the driver's connection string. Every connection gets the
// busy timeout, synchronous=NORMAL and foreign keys; the writer begins
// IMMEDIATE, readers are query-only. WAL is not in it: journal_mode is
// persistent in the file, and migrate sets it only once the file is known
// to be warp's, so a refused open leaves another program's file untouched.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(BusyTimeout.Milliseconds(), 10))
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "1")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		q.Set("_txlock", "immediate")
		// The store's checkpointer does it, off the writer's path; the
		// writer only past WriterCheckpointPages (checkpoint.go).
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(WriterCheckpointPages)+")")
	}
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the file the store was opened on.
func (db *DB) Path() string { return db.path }

// Update runs fn in a write transaction (BEGIN IMMEDIATE on the single
// writer connection) and commits when fn returns nil.
func (db *DB) Update(ctx context.Context, fn func(warp.Tx) error) error {
	if err := db.checkFile(); err != nil {
		return err
	}
	err := db.run(ctx, db.w, db.wStmts, true, nil, fn)
	switch {
	case err == nil:
		db.writeErr.Store(nil)
	case errors.Is(err, warp.ErrUnavailable) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		// The database refused (full, locked past the busy timeout by
		// another process, gone), whether or not the caller still waits:
		// /readyz says so until a write succeeds.
		db.writeErr.Store(&err)
	}
	return err
}

// View runs fn in a read-only transaction on a consistent snapshot.
func (db *DB) View(ctx context.Context, fn func(warp.Tx) error) error {
	return db.run(ctx, db.r, db.rStmts, false, &sql.TxOptions{ReadOnly: true}, fn)
}

func (db *DB) run(ctx context.Context, pool *sql.DB, stmts stmtCache, write bool, opts *sql.TxOptions, fn func(warp.Tx) error) (err error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return translate("begin transaction", err)
	}
	defer conn.Close()
	stx, err := begin(ctx, conn, opts)
	if err != nil {
		return translate("begin transaction", err)
	}
	t := &tx{tx: stx, stmts: stmts}
	defer func() {
		if p := recover(); p != nil {
			stx.Rollback()
			panic(p)
		}
	}()
	if err := fn(t); err != nil {
		stx.Rollback()
		return err
	}
	if err := stx.Commit(); err != nil {
		return translate("commit", err)
	}
	if write && db.ckpt != nil {
		db.ckpt.committed()
	}
	return nil
}

// begin begins a transaction on conn (taken under ctx) that only its
// caller ends. database/sql rolls back a transaction whose context ends on
// a goroutine of its own and hands the connection back from there, after
// the call that ran it returned: a Close right after such a call missed
// that connection, which closed later, alone, and checkpointed a file that
// was closed. Without ctx's cancellation the caller's Rollback or Commit
// ends it; its statements still run under ctx.
func begin(ctx context.Context, conn *sql.Conn, opts *sql.TxOptions) (*sql.Tx, error) {
	return conn.BeginTx(context.WithoutCancel(ctx), opts)
}

// Ping reports whether the database answers, as ErrUnavailable when not.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.checkFile(); err != nil {
		return err
	}
	if p := db.writeErr.Load(); p != nil {
		return fmt.Errorf("the last write to %s failed: %w", db.path, *p)
	}
	var one int
	if err := db.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping %s: %w: %w", db.path, warp.ErrUnavailable, err)
	}
	return nil
}

// Close closes every connection. The WAL is checkpointed by the last
// connection to close.
func (db *DB) Close() error {
	var errs []error
	if db.ckpt != nil {
		errs = append(errs, db.ckpt.close())
	}
	db.rStmts.close()
	db.wStmts.close()
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	return errors.Join(errs...)
}

// migration is one embedded numbered SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in version order. Files
// are named NNNN_description.sql.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int]string{}
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: want NNNN_description.sql", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration files %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := migrations.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate checks the file is a warp database (or empty) and applies the
// pending migrations in one immediate transaction, so two processes
// opening a fresh file at once do not both apply them.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	// One connection: the checks below, WAL and the migrations.
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return db.openError(err)
	}
	defer conn.Close()
	tables, err := db.checkHeader(ctx, conn)
	if err != nil {
		return err
	}
	// Foreign keys are off while migrations run (a pragma a transaction
	// cannot change): a migration that builds a table again drops the old
	// one, whose drop would otherwise delete the rows that refer to it.
	// PRAGMA foreign_key_check runs before the commit instead.
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return db.openError(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON")
	stx, err := begin(ctx, conn, nil)
	if err != nil {
		return db.openError(err)
	}
	defer stx.Rollback()
	// Between the check and this transaction another process may have
	// migrated the file; the versions are read again under the lock.
	applied, err := db.appliedVersions(ctx, stx)
	if err != nil {
		return err
	}
	if err := db.checkKnown(ms, applied); err != nil {
		return err
	}
	// A new file's schema is created silently; an upgrade's migrations
	// are logged.
	if err := db.apply(ctx, stx, ms, applied, tables == 0); err != nil {
		return err
	}
	if err := foreignKeyCheck(ctx, stx); err != nil {
		return fmt.Errorf("open %s: after the migrations: %w", db.path, err)
	}
	if err := stx.Commit(); err != nil {
		return db.openError(err)
	}
	return nil
}

// checkHeader checks that the file is a warp database or a new one, and
// puts it in WAL mode; it returns how many tables it holds.
func (db *DB) checkHeader(ctx context.Context, conn *sql.Conn) (tables int, err error) {
	var appID int
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, db.openError(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").Scan(&tables); err != nil {
		return 0, db.openError(err)
	}
	switch {
	case appID == ApplicationID:
	case appID == 0 && tables == 0: // a new file
	default:
		return 0, fmt.Errorf("open %s: %w: it is a SQLite database of another program (application_id %#x, %d tables); point --db at a new or a warp file", db.path, ErrNotDatabase, appID, tables)
	}
	var journal string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&journal); err != nil {
		return 0, db.openError(err)
	}
	if !strings.EqualFold(journal, "wal") {
		return 0, fmt.Errorf("open %s: cannot switch to WAL journal mode (got %q): put the database on a local file system", db.path, journal)
	}
	return tables, nil
}

// appliedVersions creates the migrations' table when missing, marks the
// file as warp's, and returns the versions applied.
func (db *DB) appliedVersions(ctx context.Context, stx *sql.Tx) (map[int]bool, error) {
	if _, err := stx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return nil, db.openError(err)
	}
	if _, err := stx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
		return nil, db.openError(err)
	}
	applied := map[int]bool{}
	rows, err := stx.QueryContext(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, db.openError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, db.openError(err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.openError(err)
	}
	return applied, nil
}

// checkKnown refuses a file that records a migration this build does not
// know: a newer warp wrote it.
func (db *DB) checkKnown(ms []migration, applied map[int]bool) error {
	known := map[int]bool{}
	latest := 0
	for _, m := range ms {
		known[m.version] = true
		latest = max(latest, m.version)
	}
	var unknown []int
	for v := range applied {
		if !known[v] {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) > 0 {
		sort.Ints(unknown)
		return fmt.Errorf("open %s: %w: it records migration %d, this build knows migrations up to %d; run a newer warp on it", db.path, ErrNewerSchema, unknown[len(unknown)-1], latest)
	}
	return nil
}

// apply runs the migrations not applied yet, in order, and records each;
// fresh (a new file) keeps them out of the log.
func (db *DB) apply(ctx context.Context, stx *sql.Tx, ms []migration, applied map[int]bool, fresh bool) error {
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if !fresh {
			db.log.Info("sqlite: applying migration", "name", m.name, "path", db.path)
		}
		start := time.Now()
		if _, err := stx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("open %s: apply migration %s: %w", db.path, m.name, err)
		}
		if _, err := stx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("open %s: record migration %s: %w", db.path, m.name, err)
		}
		if !fresh {
			db.log.Info("sqlite: applied migration", "name", m.name, "seconds", time.Since(start).Seconds())
		}
	}
	return nil
}

// foreignKeyCheck fails when a row refers to a row that is not there
// (PRAGMA foreign_key_check): what the migrations, run with foreign keys
// off, must never leave.
func foreignKeyCheck(ctx context.Context, stx *sql.Tx) error {
	rows, err := stx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("a row of %s (rowid %v) refers to a missing row of %s", table, rowid.Int64, parent)
	}
	return rows.Err()
}

// openError explains a failure to read the file at open.
func (db *DB) openError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("open %s: %w: the file is not a SQLite database or is corrupt (%w)", db.path, ErrNotDatabase, err)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("open %s: %w: cannot open or create the file: check that its directory exists and is writable and that the path is not a directory (%w)", db.path, warp.ErrUnavailable, err)
		}
	}
	return translate("open "+db.path, err)
}

// translate maps a driver error to the domain's sentinels: no rows →
// warp.ErrNotFound, unique or primary key violation → warp.ErrConflict, a
// missing referenced row → warp.ErrNotFound, locks held too long and I/O
// failures → warp.ErrUnavailable. The driver error stays in the chain.
func translate(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, warp.ErrNotFound)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w: %w", op, warp.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%s: %w: %w", op, warp.ErrNotFound, err)
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%s: %w: no space left on the database's file system: free some and retry (%w)", op, warp.ErrUnavailable, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR:
			return fmt.Errorf("%s: %w: %w", op, warp.ErrUnavailable, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}
