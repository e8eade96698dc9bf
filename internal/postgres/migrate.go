package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gyrum-labs/warp/internal/warp"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A file is
// named NNNN_what.sql.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and _", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// ownMigrations returns the latest version schema_migrations records,
// once it has checked that the table is warp's: another program's (the
// name is common: golang-migrate, hand-written migrators) in the same
// schema would otherwise pass for an up-to-date warp schema. Each
// recorded version warp knows must carry warp's name for it.
func ownMigrations(ctx context.Context, tx pgx.Tx, schema string, ms []migration) (int, error) {
	other := func(why string) error {
		return warp.Errorf(warp.ErrInvalid, "schema %q holds a schema_migrations table that is not warp's (%s): another program uses this schema. "+
			"Give warp a schema of its own (?search_path=warp in the URL, or a database of its own)", schema, why)
	}
	rows, err := tx.Query(ctx, "SELECT version, name FROM schema_migrations ORDER BY version")
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42703" || pgErr.Code == "42804") { // undefined column, wrong type
			return 0, other("its columns are not version and name")
		}
		return 0, err
	}
	byVersion := map[int]string{}
	for _, m := range ms {
		byVersion[m.version] = m.name
	}
	have := 0
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			rows.Close()
			return 0, other(fmt.Sprintf("a row does not read as (version, name): %v", err))
		}
		want, known := byVersion[v]
		if known && want != name {
			rows.Close()
			return 0, other(fmt.Sprintf("version %d is %q, warp's is %q", v, name, want))
		}
		// A later warp's migration is named as warp names them.
		if !known && (!strings.HasPrefix(name, fmt.Sprintf("%04d_", v)) || !strings.HasSuffix(name, ".sql")) {
			rows.Close()
			return 0, other(fmt.Sprintf("version %d is %q, not a warp migration's name", v, name))
		}
		have = max(have, v)
	}
	return have, rows.Err()
}

// migrate applies the missing migrations in one transaction under an
// advisory lock, so replicas starting together apply each one once. It
// returns the schema the tables live in.
func (db *DB) migrate(ctx context.Context, schema string) (string, error) {
	ms, err := migrations()
	if err != nil {
		return "", err
	}
	var current string
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var err error
		if current, err = schemaOf(ctx, tx, schema); err != nil {
			return err
		}
		// Replicas starting together wait here for the one migrating, for
		// as long as its migrations take: no lock bound in this transaction.
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = 0"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey("warp.migrate", current)); err != nil {
			return err
		}
		if schema != "" {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return fmt.Errorf("create schema %s: %w", schema, err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		return db.applyMigrations(ctx, tx, current, ms)
	})
	if err != nil {
		return "", err // Open translates
	}
	return current, nil
}

// schemaOf is the schema warp's tables live in: schema when given, else
// the connection's current schema (an error that says what to do when
// no schema of its search_path exists).
func schemaOf(ctx context.Context, tx pgx.Tx, schema string) (string, error) {
	if schema != "" {
		return schema, nil
	}
	var s *string
	if err := tx.QueryRow(ctx, "SELECT current_schema()").Scan(&s); err != nil {
		return "", err
	}
	if s == nil {
		var path string
		_ = tx.QueryRow(ctx, "SHOW search_path").Scan(&path)
		return "", warp.Errorf(warp.ErrInvalid, "no schema of the search_path (%s) exists: create it (CREATE SCHEMA ...) or fix search_path in the connection string", path)
	}
	return *s, nil
}

// applyMigrations applies, in tx, the migrations of ms above the latest
// schema_migrations records in schema, and records each; a database newer
// than this warp is an error.
func (db *DB) applyMigrations(ctx context.Context, tx pgx.Tx, schema string, ms []migration) error {
	have, err := ownMigrations(ctx, tx, schema, ms)
	if err != nil {
		return err
	}
	if latest := ms[len(ms)-1].version; have > latest {
		return warp.Errorf(warp.ErrInvalid, "the database schema is at version %d, newer than this warp knows (%d): upgrade warp", have, latest)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		db.log.Info("postgres: applying migration", "name", m.name, "schema", schema)
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("record migration %s: %w", m.name, err)
		}
		db.log.Info("postgres: applied migration", "name", m.name, "schema", schema)
	}
	return nil
}
