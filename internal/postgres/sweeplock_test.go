package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
//
// The jobs sweep every 10 ms, so the lock's hold is 30 ms (three
// intervals): a holder that goes 30 ms without a sweep-lock call — a sweep
// that ran long, a goroutine not scheduled on a loaded machine — loses its
// lock session to PostgreSQL's idle_session_timeout, and the other replica
// legitimately takes the sweep over (TrySweepLock's hold). So the test does
// not demand that the second replica never sweeps; it follows each
// replica's tenure (its "won" and "lost" logs and its sweeps) and fails on
// what a real double sweep looks like:
//   - a replica sweeps while it has not won the lock;
//   - a replica wins the lock again without having lost it (leadership
//     not sticky);
//   - a holder loses its lock for any cause but the idle-session timeout
//     (nothing else ends a session here);
//   - after another replica won the lock, the old holder sweeps more than
//     once before it finds its session gone: one sweep may have been in
//     flight when the lock changed hands, a second one started after it.
func TestExpiryJobsSweepOnOneReplica(t *testing.T) {
	_, u := newSchema(t)
	ctx := context.Background()
	names := []string{"warp-test-a", "warp-test-b"}
	log := newLockLog()
	jobs, dbs := make([]*expiry.Job, len(names)), make([]*postgres.DB, len(names))
	for i, name := range names {
		db, err := postgres.Open(ctx, u, postgres.Options{ApplicationName: name, MaxConns: 4,
			Logger: slog.New(lockLogHandler{log, i})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc, err := warp.NewService(db, warp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Init(ctx); err != nil {
			t.Fatal(err)
		}
		job, err := expiry.New(svc, expiry.Config{Interval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			OnSweep: func(warp.SweepResult) { log.add(lockEvent{replica: i, kind: "swept"}) }, Locker: db})
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { job.Close() })
		jobs[i], dbs[i] = job, db
	}
	// Until one replica swept 20 times and every holder the lock was taken
	// from has found out (it does at its next sweep-lock call).
	var ten tenures
	log.await(t, "one replica to sweep 20 times, with no holder left unaware that the lock changed hands", func(events []lockEvent) bool {
		ten = replay(names, events)
		if len(ten.problems) > 0 {
			t.Fatalf("two sweepers: %s\nsweep-lock events (replica:event, the last %d): %v", strings.Join(ten.problems, "; "), min(len(events), 60), events[max(0, len(events)-60):])
		}
		return slices.Max(ten.sweeps) >= 20 && len(ten.unaware) == 0
	})
	leader := 0
	if ten.sweeps[1] > ten.sweeps[0] {
		leader = 1
	}
	other := 1 - leader
	if ten.handovers > 0 {
		t.Logf("the sweep lock changed hands %d times (sweeps: %s %d, %s %d), each after the holder stalled past the 30 ms hold and PostgreSQL ended its lock session",
			ten.handovers, names[0], ten.sweeps[0], names[1], ten.sweeps[1])
	}
	jobs[leader].Close()
	dbs[leader].Close()
	n := ten.sweeps[other]
	log.await(t, "the other replica to take over the sweep", func(events []lockEvent) bool {
		k := 0
		for _, e := range events {
			if e.replica == other && e.kind == "swept" {
				k++
			}
		}
		return k >= n+3
	})
}

// lockEvent is a step of one replica's sweep-lock tenure: "won" and "lost"
// as the store logs them (err: why the lock session ended), "swept" as the
// job reports a sweep.
type lockEvent struct {
	replica int
	kind    string
	err     error
}

func (e lockEvent) String() string {
	if e.err != nil {
		return fmt.Sprintf("%d:%s(%v)", e.replica, e.kind, e.err)
	}
	return fmt.Sprintf("%d:%s", e.replica, e.kind)
}

// lockLog is the replicas' lockEvents in the order they happened.
type lockLog struct {
	mu     sync.Mutex
	events []lockEvent
	wake   chan struct{} // closed at the next event
}

func newLockLog() *lockLog { return &lockLog{wake: make(chan struct{})} }

func (l *lockLog) add(e lockEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	close(l.wake)
	l.wake = make(chan struct{})
}

// await returns once cond holds for the events so far, checking it at each
// new event. The minute only bounds a hang: on a loaded machine the waits
// here take seconds.
func (l *lockLog) await(t *testing.T, what string, cond func([]lockEvent) bool) {
	t.Helper()
	hang := time.After(time.Minute)
	for {
		l.mu.Lock()
		events, wake := slices.Clone(l.events), l.wake
		l.mu.Unlock()
		if cond(events) {
			return
		}
		select {
		case <-wake:
		case <-hang:
			t.Fatalf("still waiting after a minute for %s; the last %d sweep-lock events: %v", what, min(len(events), 60), events[max(0, len(events)-60):])
		}
	}
}

// lockLogHandler turns a store's sweep-lock log records into lockEvents of
// its replica.
type lockLogHandler struct {
	log     *lockLog
	replica int
}

func (h lockLogHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h lockLogHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lockLogHandler) WithGroup(string) slog.Handler            { return h }

func (h lockLogHandler) Handle(_ context.Context, r slog.Record) error {
	e := lockEvent{replica: h.replica}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "sweep_lock":
			e.kind = a.Value.String()
		case "err":
			e.err, _ = a.Value.Any().(error)
		}
		return true
	})
	if e.kind != "" {
		h.log.add(e)
	}
	return nil
}

// tenures is what replay makes of a sequence of lockEvents.
type tenures struct {
	sweeps    []int // per replica
	handovers int   // wins by a replica other than the last winner
	unaware   []int // holders the lock was taken from that have not yet found out
	problems  []string
}

// replay follows each replica's tenure through events and reports what
// shows two sweepers rather than a legitimate handover.
func replay(names []string, events []lockEvent) tenures {
	var ten tenures
	ten.sweeps = make([]int, len(names))
	holds := make([]bool, len(names))
	// taken[r] >= 0: another replica won the lock while r believed it
	// held it; the count of r's sweeps since.
	taken := make([]int, len(names))
	for i := range taken {
		taken[i] = -1
	}
	last := -1
	for _, e := range events {
		r, name := e.replica, names[e.replica]
		switch e.kind {
		case "won":
			if holds[r] {
				ten.problems = append(ten.problems, name+" won the sweep lock again without having lost it")
			}
			for q := range holds {
				if q != r && holds[q] && taken[q] < 0 {
					taken[q] = 0
				}
			}
			if last >= 0 && last != r {
				ten.handovers++
			}
			holds[r], last = true, r
		case "lost":
			var pe *pgconn.PgError
			if !holds[r] {
				ten.problems = append(ten.problems, name+" lost a sweep lock it did not hold")
			} else if !errors.As(e.err, &pe) || pe.Code != "57P05" {
				ten.problems = append(ten.problems, fmt.Sprintf("%s lost the sweep lock for another cause than stalling past the hold: %v", name, e.err))
			}
			holds[r], taken[r] = false, -1
		case "swept":
			ten.sweeps[r]++
			switch {
			case !holds[r]:
				ten.problems = append(ten.problems, name+" swept without holding the sweep lock")
			case taken[r] >= 0:
				if taken[r]++; taken[r] > 1 {
					ten.problems = append(ten.problems, fmt.Sprintf("%s swept %d times after another replica won the sweep lock, without finding its own session gone", name, taken[r]))
				}
			}
		}
	}
	for r, n := range taken {
		if n >= 0 {
			ten.unaware = append(ten.unaware, r)
		}
	}
	return ten
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
