package warp_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gyrum-labs/warp/internal/groupcommit"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// gatedStore is the real SQLite store counting write transactions; while
// hold is set, the next Update waits for release before it begins, so a
// test can make heartbeats queue up behind a transaction deterministically.
type gatedStore struct {
	warp.Store
	gc      *groupcommit.Committer // the Service's group commit, when it has one
	updates atomic.Int64
	fail    atomic.Pointer[error] // non-nil: the next Update fails with it, running nothing
	mu      sync.Mutex
	hold    chan struct{} // non-nil: the next Update blocks on it
	held    chan struct{} // closed when that Update is waiting
	// onRead, when set, runs at the start of every CurrentLease of an
	// Update's Tx (whose batch read is then out of use: the Tx passed on
	// has warp.Tx's methods only).
	onRead atomic.Pointer[func(id string)]
}

// readHookTx is a Tx whose CurrentLease calls on first.
type readHookTx struct {
	warp.Tx
	on func(id string)
}

func (t readHookTx) CurrentLease(ctx context.Context, id string) (warp.Ticket, warp.Lease, error) {
	t.on(id)
	return t.Tx.CurrentLease(ctx, id)
}

func (g *gatedStore) Update(ctx context.Context, fn func(warp.Tx) error) error {
	g.updates.Add(1)
	if err := g.fail.Swap(nil); err != nil {
		return *err
	}
	g.mu.Lock()
	hold, held := g.hold, g.held
	g.hold, g.held = nil, nil
	g.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
	if on := g.onRead.Load(); on != nil {
		return g.Store.Update(ctx, func(tx warp.Tx) error { return fn(readHookTx{tx, *on}) })
	}
	return g.Store.Update(ctx, fn)
}

// gate makes the next Update wait; it returns a channel closed once that
// Update waits, and the function that lets it go.
// A test that fails while the gate is closed must not leave the
// transaction waiting: the Service's Close at cleanup would wait for it.
func (g *gatedStore) gate(t *testing.T) (waiting <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.held = make(chan struct{}), make(chan struct{})
	hold := g.hold
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return g.held, release
}

// holdWriter sends heartbeat h and holds its transaction at g's gate until
// release; done then answers with its error.
func holdWriter(t *testing.T, svc *warp.Service, g *gatedStore, h warp.Heartbeat) (done <-chan error, release func()) {
	t.Helper()
	waiting, release := g.gate(t)
	first := make(chan error, 1)
	go func() {
		_, err := svc.Heartbeat(context.Background(), h)
		first <- err
	}()
	<-waiting
	return first, release
}

// gatedService starts a Service on a gatedStore with a group commit of
// configuration gcc (none when nil).
func gatedService(t *testing.T, cfg warp.Config, gcc *groupcommit.Config) (*warp.Service, *gatedStore, *storetest.Clock) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g := &gatedStore{Store: db}
	clk := storetest.NewClock(t0)
	cfg.Now = clk.Now
	cfg.Policy = warp.DefaultPolicy()
	cfg.Policy.StartupGrace = 0
	svc, err := warp.NewService(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if gcc != nil {
		if gcc.CountFlush == 0 {
			// No flush of adoption counts on its own: its transaction would
			// count in g.updates, or take a gate meant for a heartbeat.
			gcc.CountFlush = 1000 * time.Hour
		}
		g.gc = groupcommit.Start(svc, *gcc)
		svc.UseGroupCommit(g.gc)
		t.Cleanup(func() { g.gc.Close() })
	}
	if err := svc.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return svc, g, clk
}

// waitQueued waits until n heartbeats wait for the next group commit.
func waitQueued(t *testing.T, g *gatedStore, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.gc.Queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d heartbeats queued after 10s, want %d", g.gc.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommit: heartbeats that arrive while a transaction runs are
// applied together in the next one, each answered with its own outcome —
// a stale epoch or an unknown ticket fails alone, the rest commit — and
// the adoption counts are exact.
func TestGroupCommit(t *testing.T) {
	svc, g, clk := gatedService(t, warp.Config{}, &groupcommit.Config{})
	ctx := context.Background()
	const n = 40
	for i := range n {
		mustClaim(t, svc, fmt.Sprintf("T-%d", i))
	}
	// A first heartbeat makes its host known, then holds its transaction.
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-0", Epoch: 1, Host: "h", ActivityAge: 1})
	first, release := holdWriter(t, svc, g, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-0", Epoch: 1, Host: "h", ActivityAge: 1})
	clk.Advance(time.Minute)
	type answer struct {
		res warp.HeartbeatResult
		err error
	}
	answers := make([]chan answer, n+1)
	for i := range n + 1 {
		answers[i] = make(chan answer, 1)
		h := warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: "h", ActivityAge: float64(i)}
		switch i {
		case 7:
			h.Epoch = 2 // stale: the ticket's lease is epoch 1
		case n:
			h.Ticket = "T-nope"
		}
		go func() {
			res, err := svc.Heartbeat(ctx, h)
			answers[i] <- answer{res, err}
		}()
	}
	waitQueued(t, g, n+1)
	before := g.updates.Load()
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := range n + 1 {
		a := <-answers[i]
		switch i {
		case 7:
			if !errors.Is(a.err, warp.ErrStaleEpoch) {
				t.Errorf("stale heartbeat: %v, want a stale epoch", a.err)
			}
		case n:
			if !errors.Is(a.err, warp.ErrNotFound) {
				t.Errorf("unknown ticket: %v, want not found", a.err)
			}
		default:
			if a.err != nil || a.res.Ticket != fmt.Sprintf("T-%d", i) || !a.res.Extended {
				t.Errorf("heartbeat %d: %+v %v", i, a.res, a.err)
			}
			want := t0.Add(time.Minute).Add(-time.Duration(i) * time.Second)
			if v, _ := svc.Ticket(ctx, fmt.Sprintf("T-%d", i)); !v.Lease.LastActivityAt.Equal(want) {
				t.Errorf("T-%d activity %v, want %v", i, v.Lease.LastActivityAt, want)
			}
		}
	}
	if got := g.updates.Load() - before; got != 1 {
		t.Errorf("%d heartbeats queued behind one transaction took %d more transactions, want 1 (one group commit)", n+1, got)
	}
	a, err := svc.Adoption(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// 1 + 1 before the gate, then n-1 of the queued ones succeeded.
	if len(a.Hosts) != 1 || a.Hosts[0].V2Count != int64(2+n-1) {
		t.Errorf("adoption %+v, want host h with %d v2 heartbeats", a.Hosts, 2+n-1)
	}
	// Three transactions: of 1, 1 and n+1 heartbeats (the two refused
	// ones were in it too).
	st := svc.GroupCommitStats()
	if st.Batches != 3 || st.Heartbeats != n+3 || st.Failed != 0 || st.Seconds <= 0 || st.Durations != 3 {
		t.Errorf("stats %+v, want 3 batches of %d heartbeats in all, none failed, their time summed", st, n+3)
	}
	for i, b := range st.SizeBounds {
		want := uint64(2)
		if b >= n+1 {
			want = 3
		}
		if st.SizeCounts[i] != want {
			t.Errorf("batches of at most %v heartbeats: %d, want %d", b, st.SizeCounts[i], want)
		}
	}
	checkCumulative(t, st.DurationCounts, st.Batches)
}

// checkCumulative fails unless counts never decrease and stay within total.
func checkCumulative(t *testing.T, counts []uint64, total uint64) {
	t.Helper()
	for i := range counts {
		if (i > 0 && counts[i] < counts[i-1]) || counts[i] > total {
			t.Errorf("cumulative counts %v (total %d): not cumulative", counts, total)
			return
		}
	}
}

// TestGroupCommitStatsCountFailures: a transaction that fails as a whole
// counts as failed, not as a batch; without a group commit nothing is
// counted.
func TestGroupCommitStatsCountFailures(t *testing.T) {
	svc, g, _ := gatedService(t, warp.Config{}, &groupcommit.Config{})
	mustClaim(t, svc, "T-1")
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h", ActivityAge: 1})
	broken := errors.New("disk full")
	g.fail.Store(&broken)
	if _, err := svc.Heartbeat(context.Background(), warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h", ActivityAge: 1}); !errors.Is(err, broken) {
		t.Fatalf("heartbeat on a failing store: %v, want %v", err, broken)
	}
	st := svc.GroupCommitStats()
	if st.Batches != 1 || st.Heartbeats != 1 || st.Failed != 1 || st.SizeCounts[0] != 1 || st.Durations != 1 {
		t.Errorf("stats %+v, want the one committed batch of one heartbeat and one failure", st)
	}
	checkCumulative(t, st.DurationCounts, 1)

	plain, _, _ := gatedService(t, warp.Config{}, nil)
	mustClaim(t, plain, "T-1")
	mustHeartbeat(t, plain, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h", ActivityAge: 1})
	st = plain.GroupCommitStats()
	if st.Batches != 1 || st.Heartbeats != 1 || len(st.SizeCounts) != len(st.SizeBounds) || len(st.DurationCounts) != len(st.DurationBounds) {
		t.Errorf("without a group commit: %+v, want the heartbeat as a batch of one", st)
	}
}

// TestGroupCommitKeepsTheHostBound: heartbeats of an agent token naming
// hosts this server has not recorded are checked in the batch against the
// database and against the batch's own new hosts, so the per-token bound
// holds however they arrive.
func TestGroupCommitKeepsTheHostBound(t *testing.T) {
	svc, g, _ := gatedService(t, warp.Config{MaxHostsPerToken: 3}, &groupcommit.Config{})
	agent := warp.WithCaller(context.Background(), warp.Caller{Agent: true, Token: "tok"})
	const n = 8
	for i := range n + 1 {
		mustClaimAs(t, svc, agent, fmt.Sprintf("T-%d", i))
	}
	waiting, release := g.gate(t)
	go svc.Heartbeat(agent, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-0", Epoch: 1, Host: "h0"})
	<-waiting
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() {
			_, err := svc.Heartbeat(agent, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: fmt.Sprintf("h%d", i)})
			errs <- err
		}()
	}
	waitQueued(t, g, n)
	release()
	refused := 0
	for range n {
		err := <-errs
		switch {
		case errors.Is(err, warp.ErrTooManyHosts):
			refused++
		case err != nil:
			t.Errorf("heartbeat: %v", err)
		}
	}
	// h0 plus two more fit the bound of 3; the other six are refused.
	if refused != n-2 {
		t.Errorf("%d of %d new hosts refused, want %d (bound 3, h0 already counted)", refused, n, n-2)
	}
	a, err := svc.Adoption(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Hosts) != 3 {
		t.Errorf("%d hosts recorded, want 3: %+v", len(a.Hosts), a.Hosts)
	}
}

// TestGroupCommitForgetsHostsWithinABound: the hosts the group commit
// remembers as recorded stay within their bound however many hosts come
// and go, and forgetting one never loosens the per-token host bound: the
// database still counts it.
func TestGroupCommitForgetsHostsWithinABound(t *testing.T) {
	warp.SetMaxKnownHosts(t, 2)
	svc, _, _ := gatedService(t, warp.Config{MaxHostsPerToken: 3}, &groupcommit.Config{})
	agent := warp.WithCaller(context.Background(), warp.Caller{Agent: true, Token: "tok"})
	for i := range 4 {
		mustClaimAs(t, svc, agent, fmt.Sprintf("T-%d", i))
	}
	beat := func(i int, host string) error {
		_, err := svc.Heartbeat(agent, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: host, ActivityAge: 1})
		return err
	}
	for i, h := range []string{"h1", "h2", "h3", "h1", "h2"} {
		if err := beat(i%3, h); err != nil {
			t.Fatalf("heartbeat %d from %s: %v", i, h, err)
		}
		if n := warp.KnownHosts(svc); n > 2 {
			t.Fatalf("after %s: %d hosts remembered, want at most 2", h, n)
		}
	}
	// h1..h3 are recorded; a fourth host is over the bound of 3 although
	// the group commit has forgotten some of the three.
	if err := beat(3, "h4"); !errors.Is(err, warp.ErrTooManyHosts) {
		t.Errorf("a fourth host: %v, want too many hosts", err)
	}
}

func mustClaimAs(t *testing.T, svc *warp.Service, ctx context.Context, id string) {
	t.Helper()
	if _, err := svc.CreateTicket(context.Background(), warp.NewTicket{ID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
		t.Fatal(err)
	}
}

// TestCloseAnswersQueuedHeartbeats: the group commit's Close applies what is queued, and a
// heartbeat after Close is refused as unavailable, never left hanging.
func TestCloseAnswersQueuedHeartbeats(t *testing.T) {
	svc, g, _ := gatedService(t, warp.Config{}, &groupcommit.Config{})
	ctx := context.Background()
	mustClaim(t, svc, "T-1")
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h"})
	waiting, release := g.gate(t)
	errs := make(chan error, 3)
	send := func() {
		_, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h"})
		errs <- err
	}
	go send()
	<-waiting // the first holds the transaction; two more queue behind it
	go send()
	go send()
	waitQueued(t, g, 2)
	closed := make(chan struct{})
	go func() { g.gc.Close(); close(closed) }()
	release()
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("queued heartbeat: %v", err)
		}
	}
	<-closed
	if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h"}); !errors.Is(err, warp.ErrUnavailable) {
		t.Errorf("heartbeat after Close: %v, want unavailable", err)
	}
}

// TestGroupCommitOutlivesAWaitersCancellation: a client that hangs up
// while the batch's transaction reads its lease (a loop's timeout, or an
// agent doing it on purpose) must not fail the other heartbeats of the
// batch. Its context ends inside the transaction, after the batch's
// check of it; the store's calls for it then ran under that context, and
// the cancellation broke the whole transaction: every heartbeat of the
// batch was answered with it and none was written.
func TestGroupCommitOutlivesAWaitersCancellation(t *testing.T) {
	svc, g, clk := gatedService(t, warp.Config{}, &groupcommit.Config{})
	for _, id := range []string{"T-1", "T-2", "T-3"} {
		mustClaim(t, svc, id)
		mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "h"})
	}
	clk.Advance(time.Minute)
	victim, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	on := func(id string) {
		if id == "T-2" {
			hangUp()
		}
	}
	g.onRead.Store(&on)
	first, release := holdWriter(t, svc, g, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-3", Epoch: 1, Host: "h"})
	errs := make(chan error, 2)
	go func() {
		_, err := svc.Heartbeat(victim, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "h"})
		errs <- err
	}()
	waitQueued(t, g, 1)
	go func() {
		_, err := svc.Heartbeat(context.Background(), warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h"})
		errs <- err
	}()
	waitQueued(t, g, 2)
	release()
	if err := <-first; err != nil {
		t.Fatalf("the heartbeat holding the transaction: %v", err)
	}
	var failed []error
	for range 2 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 1 || (len(failed) == 1 && !errors.Is(failed[0], context.Canceled)) {
		t.Errorf("answers with errors %v: want at most the hung-up client's own cancellation", failed)
	}
	v, err := svc.Ticket(context.Background(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if v.Lease == nil || !v.Lease.LastHeartbeatAt.Equal(clk.Now()) {
		t.Errorf("T-1's heartbeat was not written: lease %+v, want last heartbeat at %v", v.Lease, clk.Now())
	}
}

// TestGroupCommitSameTicketTwice: two heartbeats of one ticket in one
// batch — a plain one then an exit report, and two plain ones — are
// applied in order, the second seeing the first: the exit report is
// written whole (with what the plain one changed), and of two plain ones
// the fresher activity stands.
func TestGroupCommitSameTicketTwice(t *testing.T) {
	svc, g, clk := gatedService(t, warp.Config{}, &groupcommit.Config{})
	ctx := context.Background()
	mustClaim(t, svc, "T-1")
	mustClaim(t, svc, "T-2")
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h", ActivityAge: 1})
	first, release := holdWriter(t, svc, g, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "h", ActivityAge: 1})
	now := clk.Advance(time.Minute)
	hbs := []warp.Heartbeat{
		{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h", ActivityAge: 5},
		{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h", ActivityAge: 20, Exit: warp.ExitParentExited},
		{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "h", ActivityAge: 9},
		{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "h", ActivityAge: 3},
	}
	errs := make([]chan error, len(hbs))
	for i, h := range hbs {
		errs[i] = make(chan error, 1)
		go func() {
			_, err := svc.Heartbeat(ctx, h)
			errs[i] <- err
		}()
		waitQueued(t, g, i+1) // arrival order is batch order for one ticket
	}
	before := g.updates.Load()
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := range hbs {
		if err := <-errs[i]; err != nil {
			t.Errorf("heartbeat %d: %v", i, err)
		}
	}
	if got := g.updates.Load() - before; got != 1 {
		t.Errorf("the batch took %d transactions, want 1", got)
	}
	one, _ := svc.Ticket(ctx, "T-1")
	if one.Lease.Exit != warp.ExitParentExited || !one.Lease.LastActivityAt.Equal(now.Add(-5*time.Second)) {
		t.Errorf("T-1 after a heartbeat then an exit report: exit %q, activity %v; want %q and %v",
			one.Lease.Exit, one.Lease.LastActivityAt, warp.ExitParentExited, now.Add(-5*time.Second))
	}
	two, _ := svc.Ticket(ctx, "T-2")
	if !two.Lease.LastActivityAt.Equal(now.Add(-3*time.Second)) || !two.Lease.LastHeartbeatAt.Equal(now) {
		t.Errorf("T-2 after two heartbeats: activity %v, heartbeat %v; want %v and %v",
			two.Lease.LastActivityAt, two.Lease.LastHeartbeatAt, now.Add(-3*time.Second), now)
	}
}

// TestGroupCommitLingers (in a synctest bubble: its clock moves only when
// every goroutine waits): once heartbeats are seen arriving together, the
// group commit waits Config.BatchLinger before it begins, and what arrives
// meanwhile joins the same transaction; a heartbeat arriving alone, after
// a batch of one, is applied at once.
func TestGroupCommitLingers(t *testing.T) {
	const linger = 10 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		svc, g, _ := gatedService(t, warp.Config{}, &groupcommit.Config{Linger: linger})
		for i := range 6 {
			mustClaim(t, svc, fmt.Sprintf("T-%d", i))
		}
		beat := func(i int) warp.Heartbeat {
			return warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: "h", ActivityAge: 1}
		}
		timed := func(i int) time.Duration {
			start := time.Now()
			mustHeartbeat(t, svc, beat(i))
			return time.Since(start)
		}
		if d := timed(0); d != 0 {
			t.Fatalf("a heartbeat alone waited %v, want no wait", d)
		}
		first, release := holdWriter(t, svc, g, beat(0))
		answers := make(chan error, 3)
		send := func(i int) {
			go func() {
				_, err := svc.Heartbeat(context.Background(), beat(i))
				answers <- err
			}()
		}
		send(1)
		send(2)
		synctest.Wait() // both queued behind the held transaction
		before := g.updates.Load()
		start := time.Now()
		release()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the batch of two lingers
		if len(answers) != 0 || g.updates.Load() != before {
			t.Fatalf("%d answered, %d transactions begun during the linger, want none", len(answers), g.updates.Load()-before)
		}
		send(3) // arrives during the linger: joins the batch
		synctest.Wait()
		for range 3 {
			if err := <-answers; err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != linger {
			t.Errorf("the batch was answered %v after the writer was free, want the linger, %v", d, linger)
		}
		if got := g.updates.Load() - before; got != 1 {
			t.Errorf("three heartbeats arriving within the linger took %d transactions, want 1", got)
		}
		// After a batch of three, one more lingers (heartbeats were
		// arriving together); after that batch of one, the next does not.
		if d := timed(4); d != linger {
			t.Errorf("a heartbeat after a batch of three waited %v, want the linger, %v", d, linger)
		}
		if d := timed(5); d != 0 {
			t.Errorf("a heartbeat after a batch of one waited %v, want no wait", d)
		}
	})
}

// TestGroupCommitWithoutLinger: a negative Config.BatchLinger applies a
// batch as soon as the writer is free.
func TestGroupCommitWithoutLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, g, _ := gatedService(t, warp.Config{}, &groupcommit.Config{Linger: -1})
		for i := range 3 {
			mustClaim(t, svc, fmt.Sprintf("T-%d", i))
		}
		first, release := holdWriter(t, svc, g, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-0", Epoch: 1, Host: "h", ActivityAge: 1})
		answers := make(chan error, 2)
		for i := 1; i <= 2; i++ {
			go func() {
				_, err := svc.Heartbeat(context.Background(), warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: "h", ActivityAge: 1})
				answers <- err
			}()
		}
		synctest.Wait()
		start := time.Now()
		release()
		for _, c := range []<-chan error{first, answers, answers} {
			if err := <-c; err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("without a linger the batch waited %v", d)
		}
	})
}
