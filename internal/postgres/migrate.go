package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

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
		if schema == "" {
			var s *string
			if err := tx.QueryRow(ctx, "SELECT current_schema()").Scan(&s); err != nil {
				return err
			}
			if s == nil {
				var path string
				_ = tx.QueryRow(ctx, "SHOW search_path").Scan(&path)
				return warp.Errorf(warp.ErrInvalid, "no schema of the search_path (%s) exists: create it (CREATE SCHEMA ...) or fix search_path in the connection string", path)
			}
			current = *s
		} else {
			current = schema
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
		var have int
		if err := tx.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return err
		}
		if latest := ms[len(ms)-1].version; have > latest {
			return warp.Errorf(warp.ErrInvalid, "the database schema is at version %d, newer than this warp knows (%d): upgrade warp", have, latest)
		}
		for _, m := range ms {
			if m.version <= have {
				continue
			}
			db.log.Info("postgres: applying migration", "name", m.name, "schema", current)
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			db.log.Info("postgres: applied migration", "name", m.name, "schema", current)
		}
		return nil
	})
	if err != nil {
		return "", err // Open translates
	}
	return current, nil
}
