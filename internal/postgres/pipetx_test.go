package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// A View's BEGIN goes out with its first statement, and still carries its
// isolation and access mode: one snapshot for the whole View, no writes.
func TestViewIsOneReadOnlySnapshot(t *testing.T) {
	db := openDB(t, postgres.Options{})
	ctx := context.Background()
	const key = "pipetx-test"
	set := func(v string) {
		t.Helper()
		if err := db.Update(ctx, func(tx warp.Tx) error { return tx.SetMeta(ctx, key, v) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(tx warp.Tx) string {
		t.Helper()
		v, err := tx.Meta(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	set("before")
	if err := db.View(ctx, func(tx warp.Tx) error {
		first := get(tx)
		set("after") // another transaction commits in between
		if second := get(tx); first != "before" || second != "before" {
			t.Errorf("one View read %q then %q, want its snapshot's %q twice", first, second, "before")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(ctx, func(tx warp.Tx) error { return tx.SetMeta(ctx, key, "from a view") }); err == nil {
		t.Error("a write in a View committed, want a read-only transaction's error")
	}
	if err := db.View(ctx, func(tx warp.Tx) error {
		if v := get(tx); v != "after" {
			t.Errorf("after the Views: %q, want %q", v, "after")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A transaction that sends no statement sends no BEGIN nor COMMIT, and
// gives its connection back idle; so does one whose function fails.
func TestEmptyTransactionsLeaveConnectionsIdle(t *testing.T) {
	db := openDB(t, postgres.Options{MaxConns: 2})
	// A leaked connection would leave the next Update waiting for one.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 {
		if err := db.Update(ctx, func(warp.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(ctx, func(warp.Tx) error { return warp.ErrConflict }); err != warp.ErrConflict {
			t.Fatalf("a failing function: %v, want its error", err)
		}
	}
	if n := db.Pool().Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections still acquired, want none", n)
	}
	if err := db.Update(ctx, func(tx warp.Tx) error { return tx.SetMeta(ctx, "pipetx-idle", "ok") }); err != nil {
		t.Fatalf("a write after them: %v", err)
	}
}
