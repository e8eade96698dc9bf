package warp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Bounds of a heartbeat's progress report (issue 44): progress_age_s (a
// year), loop.count, and the bytes of loop.label and loop.error.
const (
	MaxProgressAge = 366 * 24 * 3600
	MaxLoopCount   = 1 << 20
	MaxLoopText    = 512
)

// MaxHookEvents bounds hook_events of one heartbeat: a hook per tool call
// cannot run a million times between two ticks; more is a broken client.
const MaxHookEvents = 1 << 20

// addSaturating adds two non-negative counts, stopping at the largest
// int64 instead of wrapping to a negative total.
func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// MaxActivityAge bounds activity_age_s: anything larger is a broken client,
// not an idle agent.
const MaxActivityAge = 366 * 24 * 3600.0

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

// Init prepares the database for this server start: it stores the initial
// mode when none is set, recomputes expiry when the lease window changed,
// and opens the startup grace: leases refreshed before now do not lapse
// before now + grace, so a warp outage does not mass-expire a fleet.
//
// A clock behind the last sweep the database records (stepped back while
// warp was down, or before this start) is put ahead to it first, so the
// leases the database holds are not kept longer by the step.
func (s *Service) Init(ctx context.Context) error {
	return s.store.Update(ctx, func(tx Tx) error {
		last, err := s.lastSweep(ctx, tx)
		if err != nil {
			return err
		}
		s.clock.notBefore(last.At, "the last sweep the database records")
		now := s.now()
		mode, err := s.modeTx(ctx, tx)
		if errors.Is(err, ErrNotFound) {
			mode = s.cfg.InitialMode
			if err := tx.SetMeta(ctx, MetaMode, string(mode)); err != nil {
				return fmt.Errorf("store initial mode: %w", err)
			}
		} else if err != nil {
			return err
		}
		// A changed lease window moves every held lease's expiry; changed
		// verdict thresholds move their verdict-due times, which the
		// verdict pass, the counts and the verdict listings rely on.
		var what recomputed
		for _, m := range []struct {
			key, val string
			flag     recomputed
		}{
			{MetaLeaseWindow, s.cfg.Policy.expiryKey(), recomputeExpiry},
			{MetaVerdictThresholds, s.cfg.Policy.verdictKey(), recomputeVerdictDue},
		} {
			old, err := tx.Meta(ctx, m.key)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("read %s: %w", m.key, err)
			}
			if old != m.val {
				what |= m.flag
				if err := tx.SetMeta(ctx, m.key, m.val); err != nil {
					return fmt.Errorf("store %s: %w", m.key, err)
				}
			}
		}
		if what != 0 {
			if err := s.recompute(ctx, tx, mode, now, what); err != nil {
				return err
			}
		}
		g, open := s.cfg.Policy.StartGrace(now, last, s.cfg.Instance, s.sweepInterval())
		if !open {
			s.log.Info("no startup grace: another replica swept moments ago, so the fleet was served",
				"last_sweep", last.At, "swept_by", last.By, "sweep_interval", s.sweepInterval())
			return nil
		}
		return writeGrace(ctx, tx, g, now)
	})
}

// LastSweep is the last sweep the database records: when, and by which
// instance (Config.Instance; empty before it was recorded). The zero
// LastSweep: none recorded.
type LastSweep struct {
	At time.Time
	By string
}

// StartGrace is the startup grace a server start of instance self at now
// writes, open false when it writes none and leaves the grace as it is.
// No grace configured (0) ends the one an earlier start opened: it is
// this start's setting that the sweep follows. A grace protects the
// leases whose loops could not reach warp during an outage; while another
// replica sweeps (within the last two sweep intervals) there was none,
// and a replica that restarts, even over and over, must not keep every
// dead agent's lease from lapsing. A start of the instance that swept
// last is a restart, which opens the grace — for the leases not yet due at
// the last sweep (Grace.DueBefore): a dead lease lapses within window +
// grace + a sweep of its last evidence however often warp restarts, since
// every run's sweeps move the last sweep on.
func (p Policy) StartGrace(now time.Time, last LastSweep, self string, sweepInterval time.Duration) (g Grace, open bool) {
	g = p.NewGrace(now, last.At)
	if g.From.IsZero() {
		return Grace{From: now, Until: now}, true
	}
	if !last.At.IsZero() && last.By != self && !now.Before(last.At) && now.Sub(last.At) < 2*sweepInterval {
		return Grace{}, false
	}
	return g, true
}

func (s *Service) sweepInterval() time.Duration {
	if s.cfg.SweepInterval > 0 {
		return s.cfg.SweepInterval
	}
	return DefaultSweepInterval
}

// lastSweep reads MetaLastSweep and the instance that swept
// (MetaLastSweeper); the zero LastSweep when there is no sweep time (or it
// does not parse).
func (s *Service) lastSweep(ctx context.Context, tx Tx) (LastSweep, error) {
	v, err := tx.Meta(ctx, MetaLastSweep)
	if errors.Is(err, ErrNotFound) {
		return LastSweep{}, nil
	}
	if err != nil {
		return LastSweep{}, fmt.Errorf("read last sweep: %w", err)
	}
	at, err := parseTime(v)
	if err != nil {
		return LastSweep{}, nil
	}
	by, err := tx.Meta(ctx, MetaLastSweeper)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return LastSweep{}, fmt.Errorf("read last sweeper: %w", err)
	}
	return LastSweep{At: at, By: by}, nil
}

// recomputed says what recompute rewrites.
type recomputed uint8

const (
	recomputeExpiry     recomputed = 1 << iota // expires_at, under the mode
	recomputeVerdictDue                        // verdict_due_at, at now
)

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

func (s *Service) modeTx(ctx context.Context, tx Tx) (Mode, error) {
	v, err := tx.Meta(ctx, MetaMode)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", err
		}
		return "", fmt.Errorf("read mode: %w", err)
	}
	return ParseMode(v)
}

// currentMode reads the mode, falling back to the initial mode on a
// database that was never initialised.
func (s *Service) currentMode(ctx context.Context, tx Tx) (Mode, error) {
	m, err := s.modeTx(ctx, tx)
	if errors.Is(err, ErrNotFound) {
		return s.cfg.InitialMode, nil
	}
	return m, err
}

// recompute rewrites, of every held lease, ExpiresAt under mode and/or
// VerdictDueAt at now, as what says.
func (s *Service) recompute(ctx context.Context, tx Tx, mode Mode, now time.Time, what recomputed) error {
	after := ""
	for {
		leases, err := tx.HeldLeases(ctx, "", after, recomputeBatch)
		if err != nil {
			return fmt.Errorf("list held leases: %w", err)
		}
		for _, l := range leases {
			if what&recomputeExpiry != 0 {
				l.ExpiresAt = s.cfg.Policy.ExpiresAt(mode, l)
			}
			if what&recomputeVerdictDue != 0 {
				l.VerdictDueAt = s.cfg.Policy.VerdictDue(l, now)
			}
			if err := tx.UpdateLease(ctx, l); err != nil {
				return fmt.Errorf("recompute lease %s/%d: %w", l.Ticket, l.Epoch, err)
			}
			after = l.Ticket
		}
		if len(leases) < recomputeBatch {
			return nil
		}
	}
}

// TicketView is a ticket with its current lease and that lease's verdict.
type TicketView struct {
	Ticket  Ticket
	Lease   *Lease
	Verdict Verdict
	// LeaseSecret is the new lease's secret, in a claim's answer only (it
	// is stored hashed and never shown again).
	LeaseSecret string
	// Attempts are the ticket's leases with their records, newest first
	// (at most MaxAttemptsListed), in Service.Ticket's answer only.
	Attempts []Attempt
}

func (s *Service) view(tl TicketLease, now time.Time) TicketView {
	v := TicketView{Ticket: tl.Ticket, Lease: tl.Lease}
	if tl.Lease != nil {
		v.Verdict = s.cfg.Policy.Verdict(*tl.Lease, now)
	}
	return v
}

// NewTicket is what CreateTicket needs.
type NewTicket struct {
	ID     string // generated when empty
	Title  string
	Labels []string
}

// MaxTitleLen and MaxLabels bound what a ticket may carry.
const (
	MaxTitleLen = 1024
	MaxLabels   = 32
)

// CreateTicket creates an open ticket.
func (s *Service) CreateTicket(ctx context.Context, nt NewTicket) (Ticket, error) {
	if nt.ID != "" && !ValidTicketID(nt.ID) {
		return Ticket{}, Errorf(ErrInvalid, "ticket id %q is invalid: want 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", nt.ID)
	}
	if err := CheckText("title", nt.Title, MaxTitleLen); err != nil {
		return Ticket{}, err
	}
	labels, err := normLabels(nt.Labels)
	if err != nil {
		return Ticket{}, err
	}
	now := s.now()
	var out Ticket
	err = s.store.Update(ctx, func(tx Tx) error {
		t := Ticket{ID: nt.ID, Title: nt.Title, Labels: labels, State: TicketOpen, CreatedAt: now, UpdatedAt: now}
		if t.ID == "" {
			t.ID = generateID(now)
		}
		created, err := tx.CreateTicket(ctx, t)
		if errors.Is(err, ErrConflict) {
			return Errorf(ErrConflict, "ticket %s already exists", t.ID)
		}
		if err != nil {
			return fmt.Errorf("create ticket %s: %w", t.ID, err)
		}
		out = created
		_, err = tx.AppendEvent(ctx, Event{Ticket: t.ID, Kind: EventCreated, At: now, Data: map[string]any{"title": t.Title}})
		return err
	})
	return out, err
}

// generateID returns a ticket id from the clock and 40 random bits:
// T-<base36 millis>-<base36 random>. A collision is caught by the store's
// unique key and answered as a conflict.
func generateID(now time.Time) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	n := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
	return "T-" + strconv.FormatInt(now.UnixMilli(), 36) + "-" + strconv.FormatUint(n, 36)
}

func normLabels(in []string) ([]string, error) {
	if len(in) > MaxLabels {
		return nil, Errorf(ErrInvalid, "%d labels, at most %d allowed", len(in), MaxLabels)
	}
	seen := map[string]bool{}
	out := []string{}
	for _, l := range in {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if !ValidTicketID(l) {
			return nil, Errorf(ErrInvalid, "label %q is invalid: same rule as ticket ids", l)
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out, nil
}

// readTicket reads ticket id in tx: ErrNotFound, saying so, when there is
// no such ticket.
func readTicket(ctx context.Context, tx Tx, id string) (Ticket, error) {
	t, err := tx.Ticket(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Ticket{}, Errorf(ErrNotFound, "ticket %s not found", id)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("read ticket %s: %w", id, err)
	}
	return t, nil
}

// Ticket returns the ticket with id and its current lease.
func (s *Service) Ticket(ctx context.Context, id string) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	var out TicketView
	err := s.store.View(ctx, func(tx Tx) error {
		t, err := readTicket(ctx, tx, id)
		if err != nil {
			return err
		}
		tl := TicketLease{Ticket: t}
		if t.Epoch > 0 {
			l, err := tx.Lease(ctx, id, t.Epoch)
			if err != nil {
				return fmt.Errorf("read lease %s/%d: %w", id, t.Epoch, err)
			}
			tl.Lease = &l
		}
		out = s.view(tl, s.now())
		if t.Epoch > 0 {
			if out.Attempts, err = tx.Attempts(ctx, id, MaxAttemptsListed); err != nil {
				return fmt.Errorf("read the attempts of %s: %w", id, err)
			}
		}
		return nil
	})
	return out, err
}

// ListOptions selects tickets for ListTickets.
type ListOptions struct {
	State   TicketState
	Verdict Verdict // implies state claimed
	Host    string
	// Labels selects tickets that carry every one of them.
	Labels []string
	// Search selects tickets whose id, or whose current lease's agent or
	// host, holds it, whatever the case (at most MaxIdentLen bytes).
	Search string
	Cursor string // from a previous page's NextCursor
	Limit  int
}

// TicketPage is one page of ListTickets.
type TicketPage struct {
	Tickets    []TicketView
	NextCursor string // empty on the last page
}

// ListTickets lists tickets in creation order.
func (s *Service) ListTickets(ctx context.Context, o ListOptions) (TicketPage, error) {
	if o.State != "" && !o.State.Valid() {
		return TicketPage{}, Errorf(ErrInvalid, "unknown state %q: want open, claimed, completed, cancelled or blocked", o.State)
	}
	labels, err := normLabels(o.Labels)
	if err != nil {
		return TicketPage{}, err
	}
	if err := CheckText("search", o.Search, MaxIdentLen); err != nil {
		return TicketPage{}, err
	}
	if o.Limit == 0 {
		o.Limit = DefaultListLimit
	}
	if o.Limit < 0 || o.Limit > MaxListLimit {
		return TicketPage{}, Errorf(ErrInvalid, "limit %d out of range 1..%d", o.Limit, MaxListLimit)
	}
	var after int64
	if o.Cursor != "" {
		n, err := strconv.ParseInt(o.Cursor, 10, 64)
		if err != nil || n < 0 {
			return TicketPage{}, Errorf(ErrInvalid, "cursor %q is invalid: pass next_cursor of the previous page", o.Cursor)
		}
		after = n
	}
	now := s.now()
	f := TicketFilter{State: o.State, Host: o.Host, Labels: labels, Search: strings.TrimSpace(o.Search), AfterSeq: after, Limit: o.Limit + 1}
	if o.Verdict != VerdictNone {
		if _, err := ParseVerdict(string(o.Verdict)); err != nil {
			return TicketPage{}, err
		}
		if o.State != "" && o.State != TicketClaimed {
			return TicketPage{}, Errorf(ErrInvalid, "verdict filter needs state claimed, got %s", o.State)
		}
		f.State = TicketClaimed
		b := s.cfg.Policy.Bounds(o.Verdict, now)
		f.Verdict = &b
	}
	var page TicketPage
	err = s.store.View(ctx, func(tx Tx) error {
		if err := s.chooseListing(ctx, tx, &f, o.Verdict, now); err != nil {
			return err
		}
		rows, err := tx.Tickets(ctx, f)
		if err != nil {
			return fmt.Errorf("list tickets: %w", err)
		}
		if len(rows) > o.Limit {
			rows = rows[:o.Limit]
			page.NextCursor = strconv.FormatInt(rows[len(rows)-1].Ticket.Seq, 10)
		}
		page.Tickets = make([]TicketView, len(rows))
		for i, r := range rows {
			page.Tickets[i] = s.view(r, now)
		}
		return nil
	})
	return page, err
}

// DefaultRareVerdictList is Config.RareVerdictList's default.
const DefaultRareVerdictList = 1000

// chooseListing sets f to read its tickets from candidates when they are
// few: a rare verdict's (TicketFilter.RareVerdict) or a small host's
// leases (TicketFilter.HostFirst). Then a page costs O(candidates) instead
// of walking every claimed ticket until it is full (1.2 s a page at 1M
// held leases for a verdict none has). A common verdict — active, or any
// that more than the bound hold — and a host that holds much of the fleet
// fill a page within a few walked rows a match, so they keep the walk.
// The counts come from the per-host table corrected by the due leases
// (heldCounts): O(hosts + due).
func (s *Service) chooseListing(ctx context.Context, tx Tx, f *TicketFilter, v Verdict, now time.Time) error {
	bound := s.cfg.RareVerdictList
	if bound == 0 {
		bound = DefaultRareVerdictList
	}
	rare := v != VerdictNone && v != VerdictActive
	if bound < 0 || (!rare && f.Host == "") {
		return nil
	}
	byHost, err := s.heldCounts(ctx, tx, now)
	if err != nil {
		return err
	}
	var n, held, onHost int64
	for h, c := range byHost {
		n += c.verdicts[v]
		for _, k := range c.verdicts {
			held += k
			if h == f.Host {
				onHost += k
			}
		}
	}
	few := func(k int64) bool { return k <= max(int64(bound), held/16) }
	switch {
	case rare && few(n):
		f.RareVerdict, f.DueBy = v, now
	case f.Host != "" && few(onHost):
		f.HostFirst = true
	}
	return nil
}

// ClaimRequest is what Claim and ClaimNext need.
type ClaimRequest struct {
	Agent  string
	Host   string
	Labels []string // ClaimNext only
}

// Claim creates a lease on ticket id with the next epoch. ErrConflict when
// the ticket is claimed or completed.
func (s *Service) Claim(ctx context.Context, id string, r ClaimRequest) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if err := checkIdent(r); err != nil {
		return TicketView{}, err
	}
	return s.claim(ctx, r, func(tx Tx) (Ticket, error) {
		t, err := tx.Ticket(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return t, Errorf(ErrNotFound, "ticket %s not found", id)
		}
		if err != nil {
			return t, fmt.Errorf("read ticket %s: %w", id, err)
		}
		return t, nil
	})
}

// ClaimNext claims the oldest open ticket carrying all r.Labels.
// ErrNoOpenTicket when there is none.
func (s *Service) ClaimNext(ctx context.Context, r ClaimRequest) (TicketView, error) {
	if err := checkIdent(r); err != nil {
		return TicketView{}, err
	}
	labels, err := normLabels(r.Labels)
	if err != nil {
		return TicketView{}, err
	}
	return s.claim(ctx, r, func(tx Tx) (Ticket, error) {
		t, err := tx.NextOpenTicket(ctx, labels)
		if errors.Is(err, ErrNotFound) {
			if len(labels) == 0 {
				return t, Errorf(ErrNoOpenTicket, "no open ticket")
			}
			return t, Errorf(ErrNoOpenTicket, "no open ticket with labels %s", strings.Join(labels, ","))
		}
		if err != nil {
			return t, fmt.Errorf("find open ticket: %w", err)
		}
		return t, nil
	})
}

// MaxIdentLen bounds agent labels, host names and reasons.
const MaxIdentLen = 256

func checkIdent(r ClaimRequest) error {
	return checkTexts(MaxIdentLen, "agent", r.Agent, "host", r.Host)
}

// claim reads the ticket find returns (locked), its holder when claimed and
// the mode, applies Policy.Claim and writes the new lease. The lease is
// bound to the caller's token, and to a fresh secret when the client asks
// for one (Caller.WantsSecret); the secret is answered once and stored
// hashed.
func (s *Service) claim(ctx context.Context, r ClaimRequest, find func(Tx) (Ticket, error)) (TicketView, error) {
	now := s.now()
	c, _ := CallerFrom(ctx)
	secret, hash := "", ""
	if c.WantsSecret {
		secret, hash = newLeaseSecret()
	}
	var out TicketView
	err := s.store.Update(ctx, func(tx Tx) error {
		t, err := find(tx)
		if err != nil {
			return err
		}
		var holder *Lease
		if t.State == TicketClaimed {
			l, err := tx.Lease(ctx, t.ID, t.Epoch)
			if err != nil {
				return fmt.Errorf("read lease %s/%d: %w", t.ID, t.Epoch, err)
			}
			holder = &l
		}
		mode, err := s.currentMode(ctx, tx)
		if err != nil {
			return err
		}
		ch, err := s.cfg.Policy.Claim(mode, t, holder, r, c, hash, now)
		if err != nil {
			return err
		}
		if _, err := s.write(ctx, tx, &ch); err != nil {
			return err
		}
		out = TicketView{Ticket: ch.Ticket, Lease: &ch.Lease, Verdict: s.cfg.Policy.Verdict(ch.Lease, now), LeaseSecret: secret}
		if ch.Lease.Epoch > 1 {
			// The next claimant is handed what the earlier attempts left.
			if out.Attempts, err = tx.Attempts(ctx, t.ID, MaxAttemptsListed); err != nil {
				return fmt.Errorf("read the attempts of %s: %w", t.ID, err)
			}
		}
		return nil
	})
	return out, err
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

// heldLease reads ticket id and its lease of epoch, locked, and applies
// the fencing check (Fence) and the write check (CheckWrite) for the
// caller in ctx: unknown ticket → ErrNotFound; an epoch that is not the
// ticket's current one → ErrStaleEpoch; a lease that ended →
// ErrLeaseEnded; an agent that does not hold the lease → ErrNotHolder.
// epoch 0 means the current lease.
func (s *Service) heldLease(ctx context.Context, tx Tx, id string, epoch int64) (Ticket, Lease, error) {
	c, _ := CallerFrom(ctx)
	t, err := s.readTicket(ctx, tx, id)
	if err != nil {
		return Ticket{}, Lease{}, err
	}
	epoch, err = Fence(t, epoch, c.discloses())
	if err != nil {
		return t, Lease{}, err
	}
	l, err := tx.Lease(ctx, id, epoch)
	if err != nil {
		return t, Lease{}, fmt.Errorf("read lease %s/%d: %w", id, epoch, err)
	}
	if err := CheckWrite(l, c); err != nil {
		return t, Lease{}, err
	}
	return t, l, nil
}

// checkHeartbeatLease applies heldLease's checks to the current lease l
// of ticket t, read with the batch: the fencing check and the write check
// for the caller.
func checkHeartbeatLease(ctx context.Context, t Ticket, l Lease, epoch int64) (Ticket, Lease, error) {
	c, _ := CallerFrom(ctx)
	if _, err := Fence(t, epoch, c.discloses()); err != nil {
		return t, Lease{}, err
	}
	if err := CheckWrite(l, c); err != nil {
		return t, Lease{}, err
	}
	return t, l, nil
}

func (s *Service) readTicket(ctx context.Context, tx Tx, id string) (Ticket, error) {
	t, err := tx.Ticket(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Ticket{}, Errorf(ErrNotFound, "ticket %s not found", id)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("read ticket %s: %w", id, err)
	}
	return t, nil
}

// ValidateHeartbeat checks a decoded heartbeat. ErrUnsupportedSchema for an
// unknown schema version, ErrInvalid for anything else wrong.
func ValidateHeartbeat(h Heartbeat) error {
	switch h.SchemaVersion {
	case 1, 2:
	default:
		return Errorf(ErrUnsupportedSchema, "schema_version %d is not supported: this server speaks 1 and 2", h.SchemaVersion)
	}
	if !ValidTicketID(h.Ticket) {
		return Errorf(ErrInvalid, "ticket %q is invalid", h.Ticket)
	}
	if err := checkTexts(MaxIdentLen, "host", h.Host, "agent", h.Agent, "in_flight", h.InFlight); err != nil {
		return err
	}
	if h.SchemaVersion == 1 {
		return nil
	}
	if h.Epoch <= 0 {
		return Errorf(ErrInvalid, "epoch must be a positive integer in a v2 heartbeat, got %d", h.Epoch)
	}
	if math.IsNaN(h.ActivityAge) || math.IsInf(h.ActivityAge, 0) || h.ActivityAge < 0 {
		return Errorf(ErrInvalid, "activity_age_s must be a finite number >= 0, got %v", h.ActivityAge)
	}
	if h.ActivityAge > MaxActivityAge {
		return Errorf(ErrInvalid, "activity_age_s %v is larger than %v", h.ActivityAge, MaxActivityAge)
	}
	if h.HookEvents < 0 || h.HookEvents > MaxHookEvents {
		return Errorf(ErrInvalid, "hook_events must be between 0 and %d, got %d", MaxHookEvents, h.HookEvents)
	}
	if h.Note != nil {
		if err := CheckText("note", *h.Note, MaxNoteLen); err != nil {
			return err
		}
	}
	if p := h.ProgressAge; p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0) || *p < 0 || *p > MaxProgressAge) {
		return Errorf(ErrInvalid, "progress_age_s must be a finite number between 0 and %v, got %v", MaxProgressAge, *p)
	}
	if l := h.Loop; l != nil {
		if l.Count < 2 || l.Count > MaxLoopCount {
			return Errorf(ErrInvalid, "loop.count must be between 2 and %d, got %d", MaxLoopCount, l.Count)
		}
		if err := checkTexts(MaxLoopText, "loop.label", l.Label, "loop.error", l.Error); err != nil {
			return err
		}
	}
	if h.Exit != "" && !ValidExit(h.Exit) {
		return Errorf(ErrInvalid, "exit %q is unknown: want %s or %s", h.Exit, ExitParentExited, ExitWorktreeGone)
	}
	return nil
}

// Heartbeat applies one heartbeat (v1 or v2, exit reports included):
// validate, read the lease (fenced, authorised) and the mode, count the
// heartbeat for adoption (bounded per agent token), apply Policy.Heartbeat,
// write. With a group commit (UseGroupCommit), heartbeats that arrive
// together share one transaction; without, a heartbeat is a batch of one
// (batch.go).
func (s *Service) Heartbeat(ctx context.Context, h Heartbeat) (HeartbeatResult, error) {
	if err := ValidateHeartbeat(h); err != nil {
		return HeartbeatResult{}, err
	}
	if h.ReceivedAt.IsZero() {
		h.ReceivedAt = s.now()
	}
	if s.queue != nil {
		return s.queue.Heartbeat(ctx, h)
	}
	a := s.applyBatch([]QueuedHeartbeat{{Ctx: ctx, Heartbeat: h}}, true)[0]
	return a.Result, a.Err
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

// Release ends the lease of epoch on ticket id and reopens the ticket.
// epoch 0 releases the current lease (operators).
func (s *Service) Release(ctx context.Context, id string, epoch int64, reason string) (TicketView, error) {
	return s.finish(ctx, id, epoch, LeaseReleased, reason, "", 0)
}

// ReleaseIdle is Release only when the lease has shown no progress for
// longer than idleFor by this server's clock and the current mode
// (CheckIdle), decided in the transaction that releases: a lease that
// showed activity after the caller listed it is kept (ErrConflict).
func (s *Service) ReleaseIdle(ctx context.Context, id string, epoch int64, reason string, idleFor time.Duration) (TicketView, error) {
	if idleFor <= 0 {
		return TicketView{}, Errorf(ErrInvalid, "idle time must be positive, got %s", idleFor)
	}
	return s.finish(ctx, id, epoch, LeaseReleased, reason, "", idleFor)
}

// CheckIdle returns nil when lease l of ticket id has shown no progress
// (its effective time under mode) for longer than idleFor at now, else an
// ErrConflict that says when it last did.
func CheckIdle(mode Mode, id string, l Lease, now time.Time, idleFor time.Duration) error {
	at, _ := Effective(mode, l)
	if idle := now.Sub(at); idle <= idleFor {
		return Errorf(ErrConflict, "ticket %s showed progress %s ago, within %s: not released", id, idle.Round(time.Second), idleFor)
	}
	return nil
}

// Complete ends the lease of epoch on ticket id and completes the ticket.
func (s *Service) Complete(ctx context.Context, id string, epoch int64, prURL string) (TicketView, error) {
	return s.finish(ctx, id, epoch, LeaseCompleted, "", prURL, 0)
}

func (s *Service) finish(ctx context.Context, id string, epoch int64, state LeaseState, reason, prURL string, idleFor time.Duration) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if epoch < 0 {
		return TicketView{}, Errorf(ErrInvalid, "epoch must not be negative, got %d", epoch)
	}
	if err := CheckText("reason", reason, MaxIdentLen); err != nil {
		return TicketView{}, err
	}
	if err := CheckText("pr_url", prURL, MaxTitleLen); err != nil {
		return TicketView{}, err
	}
	now := s.now()
	var out TicketView
	err := s.store.Update(ctx, func(tx Tx) error {
		t, l, err := s.heldLease(ctx, tx, id, epoch)
		if err != nil {
			return err
		}
		if idleFor > 0 {
			mode, err := s.currentMode(ctx, tx)
			if err != nil {
				return err
			}
			if err := CheckIdle(mode, id, l, now, idleFor); err != nil {
				return err
			}
		}
		ch := End(t, l, state, reason, prURL, now)
		stampOperator(ctx, ch.Events)
		if _, err := s.write(ctx, tx, &ch); err != nil {
			return err
		}
		out = TicketView{Ticket: ch.Ticket, Lease: &ch.Lease}
		return nil
	})
	return out, err
}

// Events returns the history of ticket id after event afterID.
func (s *Service) Events(ctx context.Context, id string, afterID int64, limit int) ([]Event, error) {
	if !ValidTicketID(id) {
		return nil, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if limit <= 0 || limit > MaxListLimit {
		limit = MaxListLimit
	}
	var out []Event
	err := s.store.View(ctx, func(tx Tx) error {
		if _, err := readTicket(ctx, tx, id); err != nil {
			return err
		}
		var err error
		out, err = tx.Events(ctx, id, afterID, limit)
		return err
	})
	return out, err
}

// Mode returns the current expiry mode.
func (s *Service) Mode(ctx context.Context) (Mode, error) {
	var m Mode
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		m, err = s.currentMode(ctx, tx)
		return err
	})
	return m, err
}

// SetMode switches the expiry mode and recomputes every held lease's expiry.
// Switching to activity is refused with ErrAdoptionIncomplete while a host
// emitted v1 within the default adoption window, unless force.
func (s *Service) SetMode(ctx context.Context, mode Mode, force bool) (Mode, error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return "", err
	}
	if mode == ModeActivity && !force {
		// The adoption check below must see the last second's v1 heartbeats.
		if err := s.FlushCounts(ctx); err != nil {
			return "", fmt.Errorf("write adoption counts: %w", err)
		}
	}
	now := s.now()
	err := s.store.Update(ctx, func(tx Tx) error {
		old, err := s.currentMode(ctx, tx)
		if err != nil {
			return err
		}
		if old == mode {
			return nil
		}
		if mode == ModeActivity && !force {
			a, err := s.adoptionTx(ctx, tx, DefaultAdoptionWindow, now)
			if err != nil {
				return err
			}
			if err := CheckActivityAdoption(a); err != nil {
				return err
			}
		}
		if err := tx.SetMeta(ctx, MetaMode, string(mode)); err != nil {
			return fmt.Errorf("store mode: %w", err)
		}
		if err := s.recompute(ctx, tx, mode, now, recomputeExpiry); err != nil {
			return err
		}
		_, err = tx.AppendEvent(ctx, Event{Kind: EventModeChanged, At: now,
			Data: map[string]any{"from": string(old), "to": string(mode), "forced": force}})
		return err
	})
	if err != nil {
		return "", err
	}
	return mode, nil
}

// CheckActivityAdoption is the activity-mode adoption gate: switching to
// activity mode (without force) is ErrAdoptionIncomplete while a host of
// a, the adoption over the default window, sent v1 heartbeats, which
// activity mode no longer lets extend a lease; the message names them.
func CheckActivityAdoption(a Adoption) error {
	var v1 []string
	for _, h := range a.Hosts {
		if h.V1Count > 0 {
			v1 = append(v1, h.Host)
		}
	}
	if len(v1) == 0 {
		return nil
	}
	return Errorf(ErrAdoptionIncomplete, "refusing activity mode: %d host(s) sent v1 heartbeats in the last %s (%s); migrate them or pass --force",
		len(v1), a.Window, strings.Join(v1, ", "))
}

// Adoption returns the per-host schema adoption over window.
func (s *Service) Adoption(ctx context.Context, window time.Duration) (Adoption, error) {
	var a Adoption
	err := s.readAdoption(ctx, window, func(tx Tx, now time.Time) error {
		var err error
		a, err = s.adoptionTx(ctx, tx, window, now)
		return err
	})
	return a, err
}

// HostsBySchema counts the hosts seen within window by the schema version
// of their last heartbeat: the hosts of Adoption, grouped, without summing
// their heartbeat counts (the metrics' gauge, read at every scrape).
func (s *Service) HostsBySchema(ctx context.Context, window time.Duration) (map[int]int, error) {
	var out map[int]int
	err := s.readAdoption(ctx, window, func(tx Tx, now time.Time) error {
		var err error
		out, err = tx.HostsBySchema(ctx, now.Add(-window))
		return err
	})
	return out, err
}

// readAdoption runs read in a read transaction at the service's now, once
// window is known to be valid and this process's buffered adoption counts
// are written.
func (s *Service) readAdoption(ctx context.Context, window time.Duration, read func(tx Tx, now time.Time) error) error {
	if window <= 0 {
		return Errorf(ErrInvalid, "adoption window must be positive, got %s", window)
	}
	if err := s.FlushCounts(ctx); err != nil {
		return fmt.Errorf("write adoption counts: %w", err)
	}
	return s.store.View(ctx, func(tx Tx) error { return read(tx, s.now()) })
}

func (s *Service) adoptionTx(ctx context.Context, tx Tx, window time.Duration, now time.Time) (Adoption, error) {
	hosts, err := tx.Adoption(ctx, now.Add(-window))
	if err != nil {
		return Adoption{}, fmt.Errorf("adoption: %w", err)
	}
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Host < hosts[j].Host })
	a := Adoption{Window: window, Hosts: hosts, HostCount: len(hosts), ReadyForActivityMode: true}
	for _, h := range hosts {
		if h.V1Count > 0 {
			a.ReadyForActivityMode = false
		} else if h.V2Count > 0 {
			a.V2Hosts++
		}
	}
	return a, nil
}

// SweepResult reports one sweep.
type SweepResult struct {
	Lapsed   []Lease // the leases this sweep ended
	Duration time.Duration
	// VerdictChanges are the changes of the verdict pass (RecordVerdicts)
	// that the expiry job runs after each sweep; Sweep itself leaves it empty.
	VerdictChanges []VerdictChange
	// HostAlarms are the host alarms that pass raised or cleared.
	HostAlarms []HostAlarmChange
}

// Sweep lapses every held lease whose expiry has passed (Policy's Lapse),
// in batches, and records why each one lapsed. During the startup grace,
// leases last refreshed before the server start are left alone
// (Grace.Due).
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	start := time.Now()
	now := s.now()
	var res SweepResult
	if err := s.openGapGrace(ctx, now); err != nil {
		return res, err
	}
	for {
		lapsed, n, err := s.lapseBatch(ctx, now)
		if err != nil {
			return res, err
		}
		// Only committed lapses are reported, as they now stand (lapsed,
		// with reason and fallback).
		res.Lapsed = append(res.Lapsed, lapsed...)
		if n < sweepBatch {
			break
		}
	}
	err := s.recordSweep(ctx, now)
	res.Duration = time.Since(start)
	return res, err
}

// recordSweep records the sweep at now (last_sweep, by this instance) and
// prunes what it prunes, in a transaction of its own. The sweep's
// transactions are not bound by DatabaseTimeout: after an outage its
// prunes may take longer, and a sweep that could never record itself would
// reopen the gap grace at every tick. The job's stop ends them.
func (s *Service) recordSweep(ctx context.Context, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		if err := tx.SetMeta(ctx, MetaLastSweep, formatTime(now)); err != nil {
			return err
		}
		if err := tx.SetMeta(ctx, MetaLastSweeper, s.cfg.Instance); err != nil {
			return err
		}
		if err := tx.PruneHeartbeats(ctx, now.Add(-2*DefaultAdoptionWindow)); err != nil {
			return err
		}
		return tx.PruneVerdictCounts(ctx, pruneVerdictBatch)
	})
}

// openGapGrace opens a grace (Policy.GapGrace) when the last recorded
// sweep is more than three sweep intervals before now: whatever kept warp
// from sweeping also kept it from recording heartbeats, and the leases
// must not lapse for time warp could not observe. It runs before the
// sweep lapses anything, in a transaction of its own, so the sweep that
// follows the gap already reads the grace.
func (s *Service) openGapGrace(ctx context.Context, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		last, err := s.lastSweep(ctx, tx)
		if err != nil {
			return err
		}
		g, open := s.cfg.Policy.GapGrace(now, last, s.sweepInterval())
		if !open {
			return nil
		}
		s.log.Warn("warp could not sweep for a while (frozen, its database unwritable or unreachable, or the clock stepped): "+
			"leases not yet due when the gap began are kept until the grace ends",
			"gap", now.Sub(last.At).Round(time.Millisecond), "gap_began", last.At, "grace_until", g.Until)
		return writeGrace(ctx, tx, g, now)
	})
}

// lapseBatch lapses up to sweepBatch due leases in one transaction; n is
// how many were due. The mode and the grace are read in the transaction
// that lapses: a mode change that commits during the sweep moves
// expires_at, and the lapse's reason must follow the same mode.
func (s *Service) lapseBatch(ctx context.Context, now time.Time) (lapsed []Lease, n int, err error) {
	err = s.store.Update(ctx, func(tx Tx) error {
		lapsed = lapsed[:0] // a store may run fn again
		mode, err := s.currentMode(ctx, tx)
		if err != nil {
			return err
		}
		cur, prev, err := readGraces(ctx, tx)
		if err != nil {
			return err
		}
		leases, err := tx.DueLeases(ctx, Due(now, cur, prev), sweepBatch)
		if err != nil {
			return fmt.Errorf("due leases: %w", err)
		}
		n = len(leases)
		counts := hostCounts{}
		for _, l := range leases {
			t, err := tx.Ticket(ctx, l.Ticket)
			if err != nil {
				return fmt.Errorf("read ticket %s: %w", l.Ticket, err)
			}
			ch := s.cfg.Policy.Lapse(mode, t, l, now)
			if _, err := s.writeCounting(ctx, tx, &ch, counts); err != nil {
				return err
			}
			lapsed = append(lapsed, ch.Lease)
		}
		return counts.flush(ctx, tx)
	})
	return lapsed, n, err
}

// pruneVerdictBatch bounds how many count rows at 0 one sweep drops (a
// host's verdict and hook counts once its leases ended): the rows that
// hosts gone by the thousand leave are dropped over a few sweeps instead
// of holding the writer for seconds in one (1M rows: 1.4 s on SQLite).
const pruneVerdictBatch = 10_000

// writeGrace stores grace g, opened at now (Service.Init, a sweep after a
// gap): replicas sharing the database and the sweeps read it back with
// readGraces. The grace it replaces stays in force beside it until its own
// end — what it protected is protected still — unless g is empty (no grace
// configured), which ends both.
func writeGrace(ctx context.Context, tx Tx, g Grace, now time.Time) error {
	cur, _, err := readGraces(ctx, tx)
	if err != nil {
		return err
	}
	prev := Grace{}
	if now.Before(cur.Until) && g.Until.After(now) {
		prev = cur
	}
	for _, m := range []struct {
		keys [3]string
		g    Grace
	}{
		{[3]string{MetaGraceFrom, MetaGraceUntil, MetaGraceDueBefore}, g},
		{[3]string{MetaPrevGraceFrom, MetaPrevGraceUntil, MetaPrevGraceDueBefore}, prev},
	} {
		for i, at := range []time.Time{m.g.From, m.g.Until, m.g.DueBefore} {
			v := ""
			if !at.IsZero() {
				v = formatTime(at)
			}
			if err := tx.SetMeta(ctx, m.keys[i], v); err != nil {
				return fmt.Errorf("store grace: %w", err)
			}
		}
	}
	return nil
}

// readGraces returns the grace stored last and the one it replaced while
// that was in force; the zero Grace for one not stored (or unreadable).
func readGraces(ctx context.Context, tx Tx) (cur, prev Grace, err error) {
	if cur, err = readGrace(ctx, tx, MetaGraceFrom, MetaGraceUntil, MetaGraceDueBefore); err != nil {
		return Grace{}, Grace{}, err
	}
	prev, err = readGrace(ctx, tx, MetaPrevGraceFrom, MetaPrevGraceUntil, MetaPrevGraceDueBefore)
	return cur, prev, err
}

func readGrace(ctx context.Context, tx Tx, keys ...string) (Grace, error) {
	var g Grace
	for i, at := range []*time.Time{&g.From, &g.Until, &g.DueBefore} {
		v, err := tx.Meta(ctx, keys[i])
		if errors.Is(err, ErrNotFound) || err == nil && v == "" {
			if i < 2 {
				return Grace{}, nil // no grace stored
			}
			continue // no DueBefore (stored by an older warp): protect all
		}
		if err != nil {
			return Grace{}, fmt.Errorf("read grace: %w", err)
		}
		if *at, err = parseTime(v); err != nil {
			return Grace{}, nil
		}
	}
	return g, nil
}
