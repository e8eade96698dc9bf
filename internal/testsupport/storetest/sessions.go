package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Dashboard sessions: stored by the hash of their id, read back whole,
// refused twice, deleted, and pruned once expired (in expiry order, within
// the limit), on both stores.
func testSessions(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	now := e.clock.Now()
	mk := func(i int, ttl time.Duration) warp.Session {
		return warp.Session{IDHash: warp.TokenID(fmt.Sprintf("session-%d", i)), TokenID: warp.TokenID("admin"),
			CreatedAt: now, ExpiresAt: now.Add(ttl)}
	}
	update := func(fn func(warp.Tx) error) error { return e.store.Update(e.ctx, fn) }
	read := func(idHash string) (warp.Session, error) {
		var s warp.Session
		err := e.store.View(e.ctx, func(tx warp.Tx) error {
			var err error
			s, err = tx.Session(e.ctx, idHash)
			return err
		})
		return s, err
	}

	s1 := mk(1, time.Hour)
	s1.Name = "jane on the night shift"
	if err := update(func(tx warp.Tx) error { return tx.InsertSession(e.ctx, s1) }); err != nil {
		t.Fatalf("insert session: %v", err)
	}
	got, err := read(s1.IDHash)
	if err != nil {
		t.Fatalf("read session: %v", err)
	}
	if got.IDHash != s1.IDHash || got.TokenID != s1.TokenID || got.Name != s1.Name || !got.CreatedAt.Equal(s1.CreatedAt) || !got.ExpiresAt.Equal(s1.ExpiresAt) {
		t.Errorf("session read back: got %+v, want %+v", got, s1)
	}
	err = update(func(tx warp.Tx) error { return tx.InsertSession(e.ctx, s1) })
	if !errors.Is(err, warp.ErrConflict) {
		t.Errorf("second insert of one id: got %v, want ErrConflict", err)
	}
	if _, err := read(warp.TokenID("no-such-session")); !errors.Is(err, warp.ErrNotFound) {
		t.Errorf("unknown session: got %v, want ErrNotFound", err)
	}

	// Expired ones go, oldest first, at most limit a call; live ones stay.
	for i, ttl := range []time.Duration{-3 * time.Minute, -2 * time.Minute, -time.Minute, 0} {
		s := mk(10+i, ttl)
		if err := update(func(tx warp.Tx) error { return tx.InsertSession(e.ctx, s) }); err != nil {
			t.Fatalf("insert session %d: %v", i, err)
		}
	}
	prune := func(limit int) int {
		var n int
		if err := update(func(tx warp.Tx) error {
			var err error
			n, err = tx.PruneSessions(e.ctx, now, limit)
			return err
		}); err != nil {
			t.Fatalf("prune sessions: %v", err)
		}
		return n
	}
	if n := prune(2); n != 2 {
		t.Errorf("prune with limit 2: removed %d, want 2", n)
	}
	for i, want := range []bool{false, false, true, true} {
		_, err := read(mk(10+i, 0).IDHash)
		if found := err == nil; found != want {
			t.Errorf("session %d after the first prune: found %v (%v), want %v", 10+i, found, err, want)
		}
	}
	if n := prune(10); n != 2 {
		t.Errorf("second prune: removed %d, want 2 (the rest expired at or before now)", n)
	}
	if _, err := read(s1.IDHash); err != nil {
		t.Errorf("a live session was pruned: %v", err)
	}

	if err := update(func(tx warp.Tx) error { return tx.DeleteSession(e.ctx, s1.IDHash) }); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	if _, err := read(s1.IDHash); !errors.Is(err, warp.ErrNotFound) {
		t.Errorf("deleted session: got %v, want ErrNotFound", err)
	}
	if err := update(func(tx warp.Tx) error { return tx.DeleteSession(e.ctx, s1.IDHash) }); err != nil {
		t.Errorf("deleting a session that is gone: %v, want no error", err)
	}
}
