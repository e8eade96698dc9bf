package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/groupcommit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Policy is the policy the suite runs the Service with: the documented
// defaults, with a silent threshold of 9 minutes (2 × 240 s + 60 s).
func Policy() warp.Policy {
	return warp.Policy{
		LeaseWindow:  30 * time.Minute,
		StallAfter:   15 * time.Minute,
		SilentAfter:  9 * time.Minute,
		StartupGrace: 10 * time.Minute,
		SpinAfter:    warp.DefaultSpinAfter,
	}
}

// Run runs the conformance suite. open must return a fresh, empty store
// for each call and close it when t ends; every subtest calls it once.
func Run(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("Tickets", func(t *testing.T) { testTickets(t, open) })
	t.Run("Claims", func(t *testing.T) { testClaims(t, open) })
	t.Run("Heartbeats", func(t *testing.T) { testHeartbeats(t, open) })
	t.Run("BatchLeases", func(t *testing.T) { testBatchLeases(t, open) })
	t.Run("HostSeenStep", func(t *testing.T) { testHostSeenStep(t, open) })
	t.Run("Texts", func(t *testing.T) { testTexts(t, open) })
	t.Run("Binding", func(t *testing.T) { testBinding(t, open) })
	t.Run("HostBound", func(t *testing.T) { testHostBound(t, open) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, open) })
	t.Run("Sweep", func(t *testing.T) { testSweep(t, open) })
	t.Run("Modes", func(t *testing.T) { testModes(t, open) })
	t.Run("Verdicts", func(t *testing.T) { testVerdicts(t, open) })
	t.Run("HostAlarms", func(t *testing.T) { testHostAlarms(t, open) })
	t.Run("HostCounts", func(t *testing.T) { testHostCounts(t, open) })
	t.Run("Listing", func(t *testing.T) { testListing(t, open) })
	t.Run("TicketOps", func(t *testing.T) { testTicketOps(t, open) })
	t.Run("Attempts", func(t *testing.T) { testAttempts(t, open) })
	t.Run("Adoption", func(t *testing.T) { testAdoption(t, open) })
	t.Run("Events", func(t *testing.T) { testEvents(t, open) })
	t.Run("LeaseHistory", func(t *testing.T) { testLeaseHistory(t, open) })
	t.Run("Tallies", func(t *testing.T) { testTallies(t, open) })
	t.Run("Store", func(t *testing.T) { testStore(t, open) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, open) })
	t.Run("ClockStep", func(t *testing.T) { testClockStep(t, open) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, open) })
}

// env is one fresh store with a Service on a fake clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	store warp.Store
	clock *Clock
	svc   *warp.Service
	gc    *groupcommit.Committer // svc's group commit
	cfg   warp.Config
}

// newEnv opens a fresh store, starts a Service on it at T0 and runs Init
// (so the startup grace opens at T0: leases claimed from then on are not
// protected by it).
func newEnv(t *testing.T, open func(t *testing.T) warp.Store, opts ...func(*warp.Config)) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), store: open(t), clock: NewClock(T0())}
	e.cfg = warp.Config{Policy: Policy(), Now: e.clock.Now}
	for _, o := range opts {
		o(&e.cfg)
	}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// stop stops the running Service as a server stops: its group commit
// first (answering what is queued), then the Service (its buffered
// adoption counts written).
func (e *env) stop() {
	e.t.Helper()
	if err := errors.Join(e.gc.Close(), e.svc.Close()); err != nil {
		e.t.Fatalf("close the running service: %v", err)
	}
}

// start builds the Service from e.cfg and runs Init, as a server start;
// a running one is closed first, as a server that stops (its buffered
// adoption counts written).
func (e *env) start() {
	e.t.Helper()
	if e.svc != nil {
		e.stop()
	}
	svc, err := warp.NewService(e.store, e.cfg)
	if err != nil {
		e.t.Fatalf("new service: %v", err)
	}
	e.gc = groupcommit.Start(svc, groupcommit.Config{Workers: groupcommit.Writers(e.store)})
	svc.UseGroupCommit(e.gc)
	if err := svc.Init(e.ctx); err != nil {
		e.t.Fatalf("init: %v", err)
	}
	e.svc = svc
}

// walker returns a Service on e's store that lists by walking every
// claimed ticket (Config.RareVerdictList < 0), to compare with e.svc's
// listings from candidates; closed when the test ends.
func (e *env) walker() *warp.Service {
	e.t.Helper()
	cfg := e.cfg
	cfg.RareVerdictList = -1
	walk, err := warp.NewService(e.store, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { walk.Close() })
	return walk
}

func withMode(m warp.Mode) func(*warp.Config) {
	return func(c *warp.Config) { c.InitialMode = m }
}

func (e *env) create(id string, labels ...string) warp.Ticket {
	e.t.Helper()
	tk, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: id, Title: "title of " + id, Labels: labels})
	if err != nil {
		e.t.Fatalf("create %s: %v", id, err)
	}
	return tk
}

// claim claims id for agent "agent-"+host on host and returns the lease.
func (e *env) claim(id, host string) warp.Lease {
	e.t.Helper()
	v, err := e.svc.Claim(e.ctx, id, warp.ClaimRequest{Agent: "agent-" + host, Host: host})
	if err != nil {
		e.t.Fatalf("claim %s: %v", id, err)
	}
	if v.Lease == nil {
		e.t.Fatalf("claim %s: no lease in the answer", id)
	}
	return *v.Lease
}

// createClaim creates and claims id on host.
func (e *env) createClaim(id, host string) warp.Lease {
	e.t.Helper()
	e.create(id)
	return e.claim(id, host)
}

func (e *env) v2(id string, epoch int64, age float64) warp.HeartbeatResult {
	e.t.Helper()
	res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: epoch, Host: "h2", Agent: "a", ActivityAge: age})
	if err != nil {
		e.t.Fatalf("v2 heartbeat %s/%d: %v", id, epoch, err)
	}
	return res
}

// v2hook sends a v2 heartbeat with the hook fields: seen is the
// loop's hook_seen, events its hook_events.
func (e *env) v2hook(id string, epoch int64, age float64, seen bool, events int64) warp.HeartbeatResult {
	e.t.Helper()
	res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: epoch, Host: "h2", Agent: "a",
		ActivityAge: age, HookSeen: &seen, HookEvents: events})
	if err != nil {
		e.t.Fatalf("v2 heartbeat %s/%d: %v", id, epoch, err)
	}
	return res
}

func (e *env) v1(id, host string) warp.HeartbeatResult {
	e.t.Helper()
	res, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: id, Host: host})
	if err != nil {
		e.t.Fatalf("v1 heartbeat %s: %v", id, err)
	}
	return res
}

func (e *env) view(id string) warp.TicketView {
	e.t.Helper()
	v, err := e.svc.Ticket(e.ctx, id)
	if err != nil {
		e.t.Fatalf("ticket %s: %v", id, err)
	}
	return v
}

// lease returns the current lease of id; the ticket must have one.
func (e *env) lease(id string) warp.Lease {
	e.t.Helper()
	v := e.view(id)
	if v.Lease == nil {
		e.t.Fatalf("ticket %s: no lease", id)
	}
	return *v.Lease
}

func (e *env) events(id string) []warp.Event {
	e.t.Helper()
	evs, err := e.svc.Events(e.ctx, id, 0, 0)
	if err != nil {
		e.t.Fatalf("events of %s: %v", id, err)
	}
	return evs
}

func (e *env) kinds(id string) []warp.EventKind {
	e.t.Helper()
	var out []warp.EventKind
	for _, ev := range e.events(id) {
		out = append(out, ev.Kind)
	}
	return out
}

// lastEvent returns the newest event of id with kind.
func (e *env) lastEvent(id string, kind warp.EventKind) warp.Event {
	e.t.Helper()
	evs := e.events(id)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i]
		}
	}
	e.t.Fatalf("ticket %s has no %s event: got %v", id, kind, e.kinds(id))
	return warp.Event{}
}

func (e *env) sweep() []warp.Lease {
	e.t.Helper()
	res, err := e.svc.Sweep(e.ctx)
	if err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	return res.Lapsed
}

// sweptTickets returns the sorted ticket ids a sweep lapsed.
func (e *env) sweptTickets() []string {
	e.t.Helper()
	var ids []string
	for _, l := range e.sweep() {
		ids = append(ids, l.Ticket)
	}
	slices.Sort(ids)
	return ids
}

func (e *env) update(fn func(tx warp.Tx) error) {
	e.t.Helper()
	if err := e.store.Update(e.ctx, fn); err != nil {
		e.t.Fatalf("update: %v", err)
	}
}

func (e *env) read(fn func(tx warp.Tx) error) {
	e.t.Helper()
	if err := e.store.View(e.ctx, fn); err != nil {
		e.t.Fatalf("view: %v", err)
	}
}

// wantErr fails unless err is want (errors.Is).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// wantTime fails unless got equals want to the nanosecond.
func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s: got %s, want %s (off by %s)", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano), got.Sub(want))
	}
}

func secs(d time.Duration) float64 { return d.Seconds() }
