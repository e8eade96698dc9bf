package postgres_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

var _ expiry.SweepLocker = (*postgres.DB)(nil)

func openNamed(t *testing.T, u, name string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), u, postgres.Options{ApplicationName: name, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tryLock(t *testing.T, db *postgres.DB) bool {
	t.Helper()
	release, ok, err := db.TrySweepLock(context.Background(), 0)
	if err != nil {
		t.Fatalf("TrySweepLock: %v", err)
	}
	if ok {
		release()
	}
	return ok
}

func TestSweepLockHasOneHolder(t *testing.T) {
	_, u := newSchema(t)
	a, b := openNamed(t, u, "warp-test-a"), openNamed(t, u, "warp-test-b")
	if !tryLock(t, a) {
		t.Fatal("first replica did not get the free sweep lock")
	}
	if tryLock(t, b) {
		t.Fatal("second replica got the sweep lock the first one holds")
	}
	if !tryLock(t, a) {
		t.Fatal("the holder lost the sweep lock between sweeps: leadership must stick")
	}
	if tryLock(t, b) {
		t.Fatal("second replica got the lock after the holder's second sweep")
	}
	a.Close()
	if !tryLock(t, b) {
		t.Fatal("the lock was not free after the holder closed")
	}
	if _, _, err := a.TrySweepLock(context.Background(), 0); err == nil {
		t.Error("TrySweepLock on a closed store: want an error")
	}
}

func TestSweepLockIsPerSchema(t *testing.T) {
	_, u1 := newSchema(t)
	_, u2 := newSchema(t)
	a, b := openNamed(t, u1, "warp-test-a"), openNamed(t, u2, "warp-test-b")
	if !tryLock(t, a) || !tryLock(t, b) {
		t.Fatal("deployments in two schemas must not share the sweep lock")
	}
}

// sweepLockHolder returns the application_name of the session holding an
// advisory lock taken by TrySweepLock, "" when none.
func sweepLockHolder(t *testing.T, names ...string) string {
	t.Helper()
	var holder string
	err := adminPool(t).QueryRow(context.Background(), `SELECT a.application_name FROM pg_locks l
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = ANY($1)`, names).Scan(&holder)
	if err != nil {
		return ""
	}
	return holder
}

// A holder whose session dies (here: terminated by the server, as when the
// process is killed or the network drops) frees the lock at once; the other
// replica's next try wins it, and the old holder learns it lost.
func TestSweepLockTakenOverWhenHolderSessionDies(t *testing.T) {
	_, u := newSchema(t)
	a, b := openNamed(t, u, "warp-test-a"), openNamed(t, u, "warp-test-b")
	if !tryLock(t, a) {
		t.Fatal("a did not get the free lock")
	}
	if h := sweepLockHolder(t, "warp-test-a", "warp-test-b"); h != "warp-test-a" {
		t.Fatalf("pg_locks shows holder %q, want warp-test-a", h)
	}
	var killed int
	if err := b.Pool().QueryRow(context.Background(), `SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND a.application_name = 'warp-test-a'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the holder's session: killed %d, err %v", killed, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !tryLock(t, b) {
		if time.Now().After(deadline) {
			t.Fatal("b never won the lock after a's session died")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tryLock(t, a) {
		t.Error("a still believes it holds the lock after its session died")
	}
}

// Two expiry jobs on two stores of one schema: only the lock holder sweeps;
// when it stops, the other takes over.
func TestExpiryJobsSweepOnOneReplica(t *testing.T) {
	_, u := newSchema(t)
	ctx := context.Background()
	type replica struct {
		db     *postgres.DB
		job    *expiry.Job
		sweeps atomic.Int64
	}
	rs := []*replica{{}, {}}
	for i, r := range rs {
		r.db = openNamed(t, u, []string{"warp-test-a", "warp-test-b"}[i])
		svc, err := warp.NewService(r.db, warp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Init(ctx); err != nil {
			t.Fatal(err)
		}
		r.job, err = expiry.New(svc, expiry.Config{Interval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			OnSweep: func(warp.SweepResult) { r.sweeps.Add(1) }, Locker: r.db})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.job.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.job.Close() })
	}
	waitFor(t, 10*time.Second, "one replica to sweep 20 times", func() bool {
		return rs[0].sweeps.Load() >= 20 || rs[1].sweeps.Load() >= 20
	})
	leader, other := rs[0], rs[1]
	if rs[1].sweeps.Load() >= 20 {
		leader, other = rs[1], rs[0]
	}
	if n := other.sweeps.Load(); n != 0 {
		t.Fatalf("both replicas swept (%d and %d times): want one sweeper", leader.sweeps.Load(), n)
	}
	leader.job.Close()
	leader.db.Close()
	waitFor(t, 10*time.Second, "the other replica to take over the sweep", func() bool { return other.sweeps.Load() >= 3 })
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
