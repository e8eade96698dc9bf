// The Service: warp's use cases over a Store, with its clock and policy.
// Each use case has a file of its own: tickets.go (create, read, list,
// history), ticketops.go (edit, cancel, reopen), claims.go (claim,
// heartbeat, release, complete), batch.go (heartbeats in batches),
// sweep.go (the sweep and every grace rule), verdicts.go (the verdict
// pass), modes.go (modes and adoption), attempts.go, hosts.go. The pure
// rules they apply are in lease.go and policy.go.

package warp

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"time"
)

// addSaturating adds two non-negative counts, stopping at the largest
// int64 instead of wrapping to a negative total.
func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// DatabaseTimeout bounds what warp waits on its database for one piece of
// work: a request's (internal/httpapi's default bound), or one nobody waits
// for (a flush of the adoption counts). A database that does not answer
// then fails the work instead of holding it, and all that queues behind
// it, for as long as the connection takes to break.
const DatabaseTimeout = 10 * time.Second

// Limits of listings.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
	sweepBatch       = 1000
	recomputeBatch   = 1000
)

// Config configures a Service.
type Config struct {
	Policy Policy
	// InitialMode is stored when the database has no mode yet.
	InitialMode Mode
	// ReleaseOnExit ends a lease as soon as its loop sends an exit report,
	// instead of letting it lapse on schedule.
	ReleaseOnExit bool
	// HookAlarm holds the thresholds of the fleet alarm; DefaultHookAlarm
	// when zero.
	HookAlarm HookAlarm
	// MaxHostsPerToken bounds the distinct hosts one agent token may report
	// within the adoption window (a heartbeat naming one more is refused
	// with ErrTooManyHosts); 0: no bound.
	MaxHostsPerToken int
	// RareVerdictList is how many leases a verdict other than active, or
	// a host, may hold (or a sixteenth of the held leases, when more) and
	// still be listed from its candidates rather than by walking the
	// claimed tickets (ListTickets): DefaultRareVerdictList when 0;
	// negative, always walk (tests compare the two).
	RareVerdictList int
	// SweepInterval is the expiry job's interval (warp serve's
	// --sweep-interval), DefaultSweepInterval when 0. Init opens no new
	// startup grace while another instance swept within the last two of
	// them: that replica is serving, so this start is no outage.
	SweepInterval time.Duration
	// Instance names this server among the replicas sharing a database
	// (warp serve: the host name and --addr); the host name when empty.
	// A start of the instance that swept last is a restart, which opens
	// the startup grace.
	Instance string
	// Now is the wall clock; time.Now when nil. On PostgreSQL warp serve
	// gives it the database's clock (internal/postgres), so that replicas
	// agree.
	Now func() time.Time
	// Elapsed is a monotonic clock (the time since any fixed origin) that
	// Now is read against, so that the service keeps its time on the time
	// that elapsed when Now's clock steps back (clock.go). Nil with Now
	// nil: the process's monotonic clock. Nil with Now set: Now is taken
	// as it is (tests that set the time by hand).
	Elapsed func() time.Duration
	// MaxAttempts is the attempt cap (warp serve --max-attempts): a ticket
	// whose lease ends without completing for the MaxAttempts-th time
	// since its last completion or reopen is blocked instead of reopened;
	// 0: no cap.
	MaxAttempts int
	// Logger receives operational messages; discarded when nil.
	Logger *slog.Logger
}

// Service holds every rule of the coordination service on top of a Store.
// It is safe for concurrent use; replicas sharing one database agree
// because mode and grace live in the database.
type Service struct {
	store Store
	cfg   Config
	clock *serviceClock
	now   func() time.Time
	log   *slog.Logger
	// queue, when set, applies heartbeats in batches (UseGroupCommit).
	queue HeartbeatQueue
	// counts buffers the adoption counts of batches (counts.go), hosts
	// the hosts known to be recorded, groupStats what batches did.
	counts     *countBuffer
	hosts      knownHosts
	groupStats *batchStats
}

// NewService returns a Service on store. It validates cfg and fills defaults.
func NewService(store Store, cfg Config) (*Service, error) {
	if cfg.Policy == (Policy{}) {
		cfg.Policy = DefaultPolicy()
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.InitialMode == "" {
		cfg.InitialMode = DefaultMode
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	if cfg.HookAlarm == (HookAlarm{}) {
		cfg.HookAlarm = DefaultHookAlarm()
	}
	if err := cfg.HookAlarm.Validate(); err != nil {
		return nil, err
	}
	if _, err := ParseMode(string(cfg.InitialMode)); err != nil {
		return nil, err
	}
	s := &Service{store: store, cfg: cfg, log: cfg.Logger, counts: newCountBuffer(), groupStats: newBatchStats()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.clock = &serviceClock{wall: cfg.Now, elapsed: cfg.Elapsed, log: s.log}
	if s.clock.wall == nil {
		s.clock.wall = time.Now
		if s.clock.elapsed == nil {
			s.clock.elapsed = MonotonicClock()
		}
	}
	s.now = s.clock.now
	return s, nil
}

// Policy returns the durations the service runs with.
func (s *Service) Policy() Policy { return s.cfg.Policy }

// Now returns the service clock's time.
func (s *Service) Now() time.Time { return s.now() }

// ClockAhead returns how far the service clock runs ahead of the wall
// clock (Config.Now) after a backward step, until it is slewed away.
func (s *Service) ClockAhead() time.Duration { return s.clock.lead() }

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

func (s *Service) view(tl TicketLease, now time.Time) TicketView {
	v := TicketView{Ticket: tl.Ticket, Lease: tl.Lease}
	if tl.Lease != nil {
		v.Verdict = s.cfg.Policy.Verdict(*tl.Lease, now)
	}
	return v
}

// write stores what a transition of the lease core returns, in its order,
// and returns the ids of its events.
func (s *Service) write(ctx context.Context, tx Tx, ch *Change) ([]int64, error) {
	return s.writeCounting(ctx, tx, ch, nil)
}

// hostCounts gathers the count changes (Change.Counts) of the leases one
// transaction writes, to write them once per host at its end, hosts in
// order: every transaction that moves several hosts' counts (a heartbeat
// batch, a sweep, a verdict pass) then locks those rows in one order.
type hostCounts map[string]map[Verdict]int64

func (hc hostCounts) add(host string, d map[Verdict]int64) {
	if len(d) == 0 {
		return
	}
	m := hc[host]
	if m == nil {
		m = make(map[Verdict]int64, len(d))
		hc[host] = m
	}
	for k, n := range d {
		m[k] += n
	}
}

func (hc hostCounts) flush(ctx context.Context, tx Tx) error {
	for _, h := range slices.Sorted(maps.Keys(hc)) {
		if err := tx.AddVerdictCounts(ctx, h, hc[h]); err != nil {
			return fmt.Errorf("count verdicts: %w", err)
		}
	}
	return nil
}

// writeCounting is write with the count changes gathered into hc (when
// not nil) instead of written at once.
//
// A change that ends a lease also records the attempt's end (recordEnd),
// which may block the ticket under the attempt cap: ch's ticket and
// events then say so.
func (s *Service) writeCounting(ctx context.Context, tx Tx, ch *Change, hc hostCounts) ([]int64, error) {
	l := ch.Lease
	switch {
	case ch.InsertLease:
		if err := tx.InsertLease(ctx, l); err != nil {
			return nil, fmt.Errorf("insert lease %s/%d: %w", l.Ticket, l.Epoch, err)
		}
	case ch.LeaseDirty:
		if err := tx.UpdateLease(ctx, l); err != nil {
			return nil, fmt.Errorf("update lease %s/%d: %w", l.Ticket, l.Epoch, err)
		}
	}
	if ch.EndedFrom != nil {
		by := endedBy(ctx)
		if l.EndReason == ReleaseExitReport {
			by = "warp"
		}
		if err := s.recordEnd(ctx, tx, ch, by); err != nil {
			return nil, err
		}
	}
	if hc != nil {
		hc.add(l.Host, ch.Counts)
	} else if len(ch.Counts) > 0 {
		if err := tx.AddVerdictCounts(ctx, l.Host, ch.Counts); err != nil {
			return nil, fmt.Errorf("count verdicts: %w", err)
		}
	}
	if ch.TicketDirty {
		if err := tx.UpdateTicket(ctx, ch.Ticket); err != nil {
			return nil, fmt.Errorf("update ticket %s: %w", ch.Ticket.ID, err)
		}
	}
	ids := make([]int64, len(ch.Events))
	for i, e := range ch.Events {
		id, err := tx.AppendEvent(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("append %s event of %s: %w", e.Kind, e.Ticket, err)
		}
		ids[i] = id
	}
	return ids, nil
}

// Close writes the adoption counts still buffered. A group commit
// composed with the Service stops before it.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), DatabaseTimeout)
	defer cancel()
	if err := s.FlushCounts(ctx); err != nil {
		s.log.Error("write adoption counts at shutdown: lost", "err", err, "rows", s.counts.pending())
		return err
	}
	return nil
}
