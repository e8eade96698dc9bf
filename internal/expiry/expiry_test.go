package expiry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// outage is the real SQLite store with a switch that makes it unreachable:
// while down, every transaction fails with warp.ErrUnavailable the way a
// store reports a database it cannot reach. It stands for "the database is
// briefly down", which a real SQLite file cannot be made to do on demand.
type outage struct {
	warp.Store
	down atomic.Bool
	// failMeta, when set, is a meta key whose writes fail (and so their
	// transactions): a sweep's bookkeeping after its batches committed.
	failMeta atomic.Pointer[string]
}

func (o *outage) Update(ctx context.Context, fn func(warp.Tx) error) error {
	if o.down.Load() {
		return fmt.Errorf("begin: %w: connection refused", warp.ErrUnavailable)
	}
	if k := o.failMeta.Load(); k != nil {
		return o.Store.Update(ctx, func(tx warp.Tx) error { return fn(failingMeta{tx, *k}) })
	}
	return o.Store.Update(ctx, fn)
}

type failingMeta struct {
	warp.Tx
	key string
}

func (t failingMeta) SetMeta(ctx context.Context, k, v string) error {
	if k == t.key {
		return fmt.Errorf("set %s: %w: connection reset", k, warp.ErrUnavailable)
	}
	return t.Tx.SetMeta(ctx, k, v)
}

func (o *outage) View(ctx context.Context, fn func(warp.Tx) error) error {
	if o.down.Load() {
		return fmt.Errorf("begin: %w: connection refused", warp.ErrUnavailable)
	}
	return o.Store.View(ctx, fn)
}

type fixture struct {
	clock *storetest.Clock
	store *outage
	svc   *warp.Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{clock: storetest.NewClock(time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)), store: &outage{Store: db}}
	f.svc, err = warp.NewService(f.store, warp.Config{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) claim(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Claim(ctx, id, warp.ClaimRequest{Agent: "O", Host: "h1"}); err != nil {
		t.Fatal(err)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	f := newFixture(t)
	if _, err := expiry.New(f.svc, expiry.Config{Interval: -time.Second}); !errors.Is(err, warp.ErrInvalid) {
		t.Errorf("negative interval: got %v, want ErrInvalid", err)
	}
	if _, err := expiry.New(nil, expiry.Config{}); err == nil {
		t.Error("nil service accepted")
	}
	j, err := expiry.New(f.svc, expiry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Interval() != warp.DefaultSweepInterval {
		t.Errorf("default interval %s, want %s", j.Interval(), warp.DefaultSweepInterval)
	}
}

func TestRunOnceLapsesExactlyTheDueLeases(t *testing.T) {
	f := newFixture(t)
	var logs bytes.Buffer
	j, err := expiry.New(f.svc, expiry.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.claim(t, "OLD")
	f.clock.Advance(10 * time.Minute)
	f.claim(t, "NEW")
	f.clock.Advance(warp.DefaultLeaseWindow - 10*time.Minute + time.Second) // OLD is due, NEW is not
	res, err := j.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lapsed) != 1 || res.Lapsed[0].Ticket != "OLD" {
		t.Fatalf("lapsed %+v, want OLD only", res.Lapsed)
	}
	if !strings.Contains(logs.String(), "lease lapsed") || !strings.Contains(logs.String(), "ticket=OLD") || !strings.Contains(logs.String(), "reason=no-activity") {
		t.Errorf("log does not record the lapse: %s", logs.String())
	}
	res, err = j.RunOnce(ctx)
	if err != nil || len(res.Lapsed) != 0 {
		t.Fatalf("second sweep: %v, lapsed %d, want none", err, len(res.Lapsed))
	}
}

func waitSweep(t *testing.T, c <-chan warp.SweepResult) warp.SweepResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep within 10s")
	}
	return warp.SweepResult{}
}

// TestKeepsRunningThroughAnOutage: sweeps failing because the database is
// unreachable are logged and reported, the job keeps ticking, and the
// first sweep after the database is back lapses what came due meanwhile.
func TestKeepsRunningThroughAnOutage(t *testing.T) {
	f := newFixture(t)
	var logs syncBuffer
	sweeps := make(chan warp.SweepResult, 100)
	failures := make(chan error, 100)
	j, err := expiry.New(f.svc, expiry.Config{
		Interval: 5 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		OnSweep:  func(r warp.SweepResult) { sweeps <- r },
		OnError:  func(err error) { failures <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.claim(t, "T-1")
	f.store.down.Store(true)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for range 3 {
		select {
		case err := <-failures:
			if !errors.Is(err, warp.ErrUnavailable) {
				t.Fatalf("failure %v, want ErrUnavailable", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no failing sweep within 10s")
		}
	}
	if !strings.Contains(logs.String(), "lease sweep failed") {
		t.Errorf("failures not logged: %s", logs.String())
	}
	f.clock.Advance(warp.DefaultLeaseWindow + time.Second)
	f.store.down.Store(false)
	for {
		r := waitSweep(t, sweeps)
		if len(r.Lapsed) == 1 {
			break
		}
	}
	v, err := f.svc.Ticket(context.Background(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if v.Ticket.State != warp.TicketOpen || v.Lease.State != warp.LeaseLapsed {
		t.Fatalf("after the outage: ticket %s lease %s", v.Ticket.State, v.Lease.State)
	}
}

// TestCloseWaitsForTheGoroutine: Close returns only once the loop has
// exited (a leaked goroutine would hang here or trip -race), whether the
// caller's context ended first or not, and a second Close is harmless.
func TestCloseWaitsForTheGoroutine(t *testing.T) {
	f := newFixture(t)
	for _, cancelFirst := range []bool{true, false} {
		started := make(chan struct{}, 1)
		j, err := expiry.New(f.svc, expiry.Config{Interval: time.Millisecond, OnSweep: func(warp.SweepResult) {
			select {
			case started <- struct{}{}:
			default:
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := j.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-started
		if cancelFirst {
			cancel()
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		cancel()
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSweepsOnTheIntervalInABubble runs the job on its real default
// interval inside a testing/synctest bubble, where time.Now and the
// job's ticker run on the bubble's fake clock: the first sweep comes at
// Start, the next exactly one interval later and none in between, and a
// lease claimed at the start lapses at the first tick that finds its
// expiry passed.
func TestSweepsOnTheIntervalInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		svc, err := warp.NewService(db, warp.Config{}) // time.Now: the bubble's clock
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Init(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, "T-1", warp.ClaimRequest{Agent: "O", Host: "h1"}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var at []time.Duration
		lapsedAt := time.Duration(-1)
		j, err := expiry.New(svc, expiry.Config{OnSweep: func(r warp.SweepResult) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			if len(r.Lapsed) > 0 {
				lapsedAt = time.Since(start)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := j.Start(ctx); err == nil {
			t.Error("second Start accepted")
		}
		sweeps := func() []time.Duration {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Duration(nil), at...)
		}
		if got := sweeps(); len(got) != 1 || got[0] != 0 {
			t.Fatalf("sweeps after Start at %v, want one at once", got)
		}
		time.Sleep(warp.DefaultSweepInterval - time.Nanosecond)
		if got := sweeps(); len(got) != 1 {
			t.Fatalf("sweeps %v before one interval passed, want only the first", got)
		}
		time.Sleep(time.Nanosecond)
		if got := sweeps(); len(got) != 2 || got[1] != warp.DefaultSweepInterval {
			t.Fatalf("sweeps %v, want the second exactly one interval after Start", got)
		}
		time.Sleep(warp.DefaultLeaseWindow)
		synctest.Wait()
		mu.Lock()
		got := lapsedAt
		mu.Unlock()
		if got != warp.DefaultLeaseWindow {
			t.Errorf("T-1 lapsed at %v, want at the tick of its expiry %v", got, warp.DefaultLeaseWindow)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A sweep that fails after its batches committed (here in its own
// bookkeeping) still reports the leases it lapsed and runs the verdict
// pass: no later sweep would report them, and a failure that repeats must
// not stop verdicts.
func TestSweepFailingAfterItsLapsesReportsThem(t *testing.T) {
	f := newFixture(t)
	f.claim(t, "T-1")
	f.claim(t, "T-2")
	ctx := context.Background()
	yes := true
	f.clock.Advance(20 * time.Minute)
	if _, err := f.svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "h1", ActivityAge: 0, HookSeen: &yes}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(20 * time.Minute) // T-1 due; T-2 silent, not due
	key := warp.MetaLastSweep
	f.store.failMeta.Store(&key)
	var mu sync.Mutex
	var swept []warp.SweepResult
	var failed []error
	j, err := expiry.New(f.svc, expiry.Config{Interval: time.Hour,
		OnSweep: func(r warp.SweepResult) { mu.Lock(); swept = append(swept, r); mu.Unlock() },
		OnError: func(err error) { mu.Lock(); failed = append(failed, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-j.FirstSweep()
	j.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || !errors.Is(failed[0], warp.ErrUnavailable) {
		t.Fatalf("OnError got %v, want the one failure", failed)
	}
	if len(swept) != 1 || len(swept[0].Lapsed) != 1 || swept[0].Lapsed[0].Ticket != "T-1" {
		t.Fatalf("OnSweep got %+v, want T-1's lapse", swept)
	}
	if ch := swept[0].VerdictChanges; len(ch) != 1 || ch[0].Ticket != "T-2" || ch[0].To != warp.VerdictSilent {
		t.Errorf("verdict changes %+v, want T-2 silent", ch)
	}
}

// FirstSweep closes once the sweep at start has run.
func TestFirstSweep(t *testing.T) {
	svc := newFixture(t).svc
	swept := make(chan struct{}, 1)
	j, err := expiry.New(svc, expiry.Config{Interval: time.Hour, OnSweep: func(warp.SweepResult) { swept <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-j.FirstSweep():
		t.Fatal("FirstSweep closed before Start")
	default:
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	<-j.FirstSweep()
	select {
	case <-swept:
	default:
		t.Fatal("FirstSweep closed before the first sweep ran")
	}
}
