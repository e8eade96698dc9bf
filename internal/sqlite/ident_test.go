package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// A database file deleted or replaced under a running warp: every later
// write is refused as unavailable, and Ping (/readyz) says so, instead of
// acknowledging writes into a file that a restart cannot find.
func TestDatabaseFileGoneUnderWarp(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "warp.db")
			db, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			write := func() error {
				return db.Update(ctx, func(tx warp.Tx) error { return tx.SetMeta(ctx, "probe", how) })
			}
			if err := write(); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "deleted":
				for _, suffix := range []string{"", "-wal", "-shm"} {
					os.Remove(path + suffix)
				}
			case "replaced":
				other := filepath.Join(dir, "other.db")
				odb, err := sqlite.Open(ctx, other)
				if err != nil {
					t.Fatal(err)
				}
				odb.Close()
				if err := os.Rename(other, path); err != nil {
					t.Fatal(err)
				}
			}
			err = write()
			if !errors.Is(err, warp.ErrUnavailable) || !strings.Contains(err.Error(), "deleted or replaced") {
				t.Fatalf("write after the file was %s: %v, want unavailable, deleted or replaced", how, err)
			}
			if err := db.Ping(ctx); !errors.Is(err, warp.ErrUnavailable) {
				t.Fatalf("ping after the file was %s: %v, want unavailable", how, err)
			}
			if err := write(); err == nil {
				t.Fatal("a later write was accepted")
			}
		})
	}
}
