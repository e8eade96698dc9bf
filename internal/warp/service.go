package warp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxActivityAge bounds activity_age_s: anything larger is a broken client,
// not an idle agent.
const MaxActivityAge = 366 * 24 * 3600.0

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
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives operational messages; discarded when nil.
	Logger *slog.Logger
}

// Service holds every rule of the coordination service on top of a Store.
// It is safe for concurrent use; replicas sharing one database agree
// because mode and grace live in the database.
type Service struct {
	store Store
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
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
	if cfg.HookAlarm == (HookAlarm{}) {
		cfg.HookAlarm = DefaultHookAlarm()
	}
	if err := cfg.HookAlarm.Validate(); err != nil {
		return nil, err
	}
	if _, err := ParseMode(string(cfg.InitialMode)); err != nil {
		return nil, err
	}
	s := &Service{store: store, cfg: cfg, now: cfg.Now, log: cfg.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Policy returns the durations the service runs with.
func (s *Service) Policy() Policy { return s.cfg.Policy }

// Now returns the service clock's time.
func (s *Service) Now() time.Time { return s.now() }

// Store returns the store the service runs on.
func (s *Service) Store() Store { return s.store }

// Init prepares the database for this server start: it stores the initial
// mode when none is set, recomputes expiry when the lease window changed,
// and opens the startup grace: leases refreshed before now do not lapse
// before now + grace, so a warp outage does not mass-expire a fleet.
func (s *Service) Init(ctx context.Context) error {
	now := s.now()
	return s.store.Update(ctx, func(tx Tx) error {
		mode, err := s.modeTx(ctx, tx)
		if errors.Is(err, ErrNotFound) {
			mode = s.cfg.InitialMode
			if err := tx.SetMeta(ctx, MetaMode, string(mode)); err != nil {
				return fmt.Errorf("store initial mode: %w", err)
			}
		} else if err != nil {
			return err
		}
		window := s.cfg.Policy.LeaseWindow.String()
		old, err := tx.Meta(ctx, MetaLeaseWindow)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("read lease window: %w", err)
		}
		if old != window {
			if err := s.recompute(ctx, tx, mode); err != nil {
				return err
			}
			if err := tx.SetMeta(ctx, MetaLeaseWindow, window); err != nil {
				return fmt.Errorf("store lease window: %w", err)
			}
		}
		if s.cfg.Policy.StartupGrace > 0 {
			if err := tx.SetMeta(ctx, MetaGraceFrom, formatTime(now)); err != nil {
				return fmt.Errorf("store grace: %w", err)
			}
			if err := tx.SetMeta(ctx, MetaGraceUntil, formatTime(now.Add(s.cfg.Policy.StartupGrace))); err != nil {
				return fmt.Errorf("store grace: %w", err)
			}
		}
		return nil
	})
}

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

// recompute rewrites ExpiresAt of every held lease under mode.
func (s *Service) recompute(ctx context.Context, tx Tx, mode Mode) error {
	after := ""
	for {
		leases, err := tx.HeldLeases(ctx, after, recomputeBatch)
		if err != nil {
			return fmt.Errorf("list held leases: %w", err)
		}
		for _, l := range leases {
			l.ExpiresAt = s.cfg.Policy.ExpiresAt(mode, l)
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
	if len(nt.Title) > MaxTitleLen {
		return Ticket{}, Errorf(ErrInvalid, "title is %d bytes, at most %d allowed", len(nt.Title), MaxTitleLen)
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

// Ticket returns the ticket with id and its current lease.
func (s *Service) Ticket(ctx context.Context, id string) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	var out TicketView
	err := s.store.View(ctx, func(tx Tx) error {
		t, err := tx.Ticket(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return Errorf(ErrNotFound, "ticket %s not found", id)
		}
		if err != nil {
			return fmt.Errorf("read ticket %s: %w", id, err)
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
		return nil
	})
	return out, err
}

// ListOptions selects tickets for ListTickets.
type ListOptions struct {
	State   TicketState
	Verdict Verdict // implies state claimed
	Host    string
	Cursor  string // from a previous page's NextCursor
	Limit   int
}

// TicketPage is one page of ListTickets.
type TicketPage struct {
	Tickets    []TicketView
	NextCursor string // empty on the last page
}

// ListTickets lists tickets in creation order.
func (s *Service) ListTickets(ctx context.Context, o ListOptions) (TicketPage, error) {
	if o.State != "" && !o.State.Valid() {
		return TicketPage{}, Errorf(ErrInvalid, "unknown state %q: want open, claimed or completed", o.State)
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
	f := TicketFilter{State: o.State, Host: o.Host, AfterSeq: after, Limit: o.Limit + 1}
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
	err := s.store.View(ctx, func(tx Tx) error {
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
	var out TicketView
	err := s.store.Update(ctx, func(tx Tx) error {
		t, err := tx.Ticket(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return Errorf(ErrNotFound, "ticket %s not found", id)
		}
		if err != nil {
			return fmt.Errorf("read ticket %s: %w", id, err)
		}
		out, err = s.claimTx(ctx, tx, t, r)
		return err
	})
	return out, err
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
	var out TicketView
	err = s.store.Update(ctx, func(tx Tx) error {
		t, err := tx.NextOpenTicket(ctx, labels)
		if errors.Is(err, ErrNotFound) {
			if len(labels) == 0 {
				return Errorf(ErrNoOpenTicket, "no open ticket")
			}
			return Errorf(ErrNoOpenTicket, "no open ticket with labels %s", strings.Join(labels, ","))
		}
		if err != nil {
			return fmt.Errorf("find open ticket: %w", err)
		}
		out, err = s.claimTx(ctx, tx, t, r)
		return err
	})
	return out, err
}

// MaxIdentLen bounds agent labels, host names and reasons.
const MaxIdentLen = 256

func checkIdent(r ClaimRequest) error {
	if len(r.Agent) > MaxIdentLen || len(r.Host) > MaxIdentLen {
		return Errorf(ErrInvalid, "agent and host are at most %d bytes", MaxIdentLen)
	}
	return nil
}

func (s *Service) claimTx(ctx context.Context, tx Tx, t Ticket, r ClaimRequest) (TicketView, error) {
	switch t.State {
	case TicketClaimed:
		l, err := tx.Lease(ctx, t.ID, t.Epoch)
		if err != nil {
			return TicketView{}, fmt.Errorf("read lease %s/%d: %w", t.ID, t.Epoch, err)
		}
		return TicketView{}, Errorf(ErrConflict, "ticket %s is claimed by agent %q on host %q (epoch %d)", t.ID, l.Agent, l.Host, l.Epoch)
	case TicketCompleted:
		return TicketView{}, Errorf(ErrConflict, "ticket %s is completed", t.ID)
	}
	mode, err := s.currentMode(ctx, tx)
	if err != nil {
		return TicketView{}, err
	}
	now := s.now()
	l := Lease{
		Ticket: t.ID, Epoch: t.Epoch + 1, Agent: r.Agent, Host: r.Host, State: LeaseHeld,
		ClaimedAt: now, LastHeartbeatAt: now, LastActivityAt: now, RefreshedAt: now,
	}
	l.ExpiresAt = s.cfg.Policy.ExpiresAt(mode, l)
	if err := tx.InsertLease(ctx, l); err != nil {
		return TicketView{}, fmt.Errorf("insert lease %s/%d: %w", l.Ticket, l.Epoch, err)
	}
	t.State, t.Epoch, t.UpdatedAt = TicketClaimed, l.Epoch, now
	if err := tx.UpdateTicket(ctx, t); err != nil {
		return TicketView{}, fmt.Errorf("update ticket %s: %w", t.ID, err)
	}
	if _, err := tx.AppendEvent(ctx, Event{Ticket: t.ID, Epoch: l.Epoch, Kind: EventClaimed, At: now,
		Data: map[string]any{"agent": l.Agent, "host": l.Host}}); err != nil {
		return TicketView{}, err
	}
	return TicketView{Ticket: t, Lease: &l, Verdict: s.cfg.Policy.Verdict(l, now)}, nil
}

// heldLease returns the ticket and its lease of epoch, locked, enforcing the
// fencing rules: unknown ticket → ErrNotFound; an epoch that is not the
// ticket's current one → ErrStaleEpoch; a lease that ended → ErrLeaseEnded.
// epoch 0 means the current lease (v1 heartbeats, operator releases).
func (s *Service) heldLease(ctx context.Context, tx Tx, id string, epoch int64) (Ticket, Lease, error) {
	t, err := tx.Ticket(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Ticket{}, Lease{}, Errorf(ErrNotFound, "ticket %s not found", id)
	}
	if err != nil {
		return Ticket{}, Lease{}, fmt.Errorf("read ticket %s: %w", id, err)
	}
	if epoch == 0 {
		if t.Epoch == 0 {
			return t, Lease{}, Errorf(ErrLeaseEnded, "ticket %s has no lease: claim it first", id)
		}
		epoch = t.Epoch
	}
	if epoch != t.Epoch {
		return t, Lease{}, Errorf(ErrStaleEpoch, "epoch %d of ticket %s is stale: the current epoch is %d", epoch, id, t.Epoch)
	}
	l, err := tx.Lease(ctx, id, epoch)
	if err != nil {
		return t, Lease{}, fmt.Errorf("read lease %s/%d: %w", id, epoch, err)
	}
	if !l.Held() {
		return t, l, Errorf(ErrLeaseEnded, "lease %d of ticket %s has ended (%s)", epoch, id, l.State)
	}
	return t, l, nil
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
	if len(h.Host) > MaxIdentLen || len(h.Agent) > MaxIdentLen || len(h.InFlight) > MaxIdentLen {
		return Errorf(ErrInvalid, "host, agent and in_flight are at most %d bytes", MaxIdentLen)
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
	if h.HookEvents < 0 {
		return Errorf(ErrInvalid, "hook_events must not be negative, got %d", h.HookEvents)
	}
	if h.Exit != "" && !ValidExit(h.Exit) {
		return Errorf(ErrInvalid, "exit %q is unknown: want %s or %s", h.Exit, ExitParentExited, ExitWorktreeGone)
	}
	return nil
}

// Heartbeat applies one heartbeat (v1 or v2, exit reports included).
func (s *Service) Heartbeat(ctx context.Context, h Heartbeat) (HeartbeatResult, error) {
	if err := ValidateHeartbeat(h); err != nil {
		return HeartbeatResult{}, err
	}
	var res HeartbeatResult
	err := s.store.Update(ctx, func(tx Tx) error {
		now := s.now()
		epoch := h.Epoch
		if h.SchemaVersion == 1 {
			epoch = 0
		}
		t, l, err := s.heldLease(ctx, tx, h.Ticket, epoch)
		if err != nil {
			return err
		}
		mode, err := s.currentMode(ctx, tx)
		if err != nil {
			return err
		}
		host := h.Host
		if host == "" {
			host = l.Host
		}
		if host == "" {
			host = "unknown"
		}
		if err := tx.RecordHeartbeat(ctx, host, h.SchemaVersion, now); err != nil {
			return fmt.Errorf("record heartbeat: %w", err)
		}
		firstV2 := h.SchemaVersion == 2 && l.FirstV2At.IsZero()
		res = HeartbeatResult{Ticket: t.ID, Epoch: l.Epoch, Mode: mode, Extended: true}
		l.LastHeartbeatAt = now
		l.SchemaVersion = h.SchemaVersion
		if h.SchemaVersion == 2 {
			act := now.Add(-time.Duration(h.ActivityAge * float64(time.Second)))
			if act.After(l.LastActivityAt) {
				l.LastActivityAt = act
			}
			l.InFlight = h.InFlight
			if h.HookSeen != nil {
				l.HookSeen = HookNo
				if *h.HookSeen {
					l.HookSeen = HookYes
				}
			}
			l.HookEvents += h.HookEvents
		} else {
			l.InFlight = ""
		}
		if h.SchemaVersion == 1 && mode == ModeActivity {
			res.Extended = false
			res.Note = "activity mode: v1 heartbeats are recorded but no longer extend a lease; upgrade this host's loop to schema_version 2"
		} else {
			l.RefreshedAt = now
		}
		l.ExpiresAt = s.cfg.Policy.ExpiresAt(mode, l)
		if firstV2 {
			l.FirstV2At = now
			if _, err := tx.AppendEvent(ctx, Event{Ticket: t.ID, Epoch: l.Epoch, Kind: EventFirstV2Heartbeat, At: now,
				Data: map[string]any{"host": host}}); err != nil {
				return err
			}
		}
		if h.SchemaVersion == 2 && h.Exit != "" && l.Exit == "" {
			l.Exit, l.ExitedAt = h.Exit, now
			if _, err := tx.AppendEvent(ctx, Event{Ticket: t.ID, Epoch: l.Epoch, Kind: EventExitReport, At: now,
				Data: map[string]any{"exit": h.Exit, "host": host}}); err != nil {
				return err
			}
			if s.cfg.ReleaseOnExit {
				if err := s.endTx(ctx, tx, t, l, LeaseReleased, ReleaseExitReport, ""); err != nil {
					return err
				}
				res.ExpiresAt, res.Verdict = now, VerdictExited
				return nil
			}
		}
		if err := tx.UpdateLease(ctx, l); err != nil {
			return fmt.Errorf("update lease %s/%d: %w", l.Ticket, l.Epoch, err)
		}
		res.ExpiresAt = l.ExpiresAt
		res.Verdict = s.cfg.Policy.Verdict(l, now)
		return nil
	})
	return res, err
}

// endTx ends lease l of ticket t with state and reason, writes the ticket's
// new state and the event.
func (s *Service) endTx(ctx context.Context, tx Tx, t Ticket, l Lease, state LeaseState, reason, prURL string) error {
	now := s.now()
	l.State, l.EndedAt, l.EndReason, l.PRURL = state, now, reason, prURL
	if err := tx.UpdateLease(ctx, l); err != nil {
		return fmt.Errorf("end lease %s/%d: %w", l.Ticket, l.Epoch, err)
	}
	kind, data := EventReleased, map[string]any{"reason": reason, "agent": l.Agent, "host": l.Host}
	t.State = TicketOpen
	if state == LeaseCompleted {
		kind, data = EventCompleted, map[string]any{"pr_url": prURL, "agent": l.Agent, "host": l.Host}
		t.State = TicketCompleted
	}
	t.UpdatedAt = now
	if err := tx.UpdateTicket(ctx, t); err != nil {
		return fmt.Errorf("update ticket %s: %w", t.ID, err)
	}
	_, err := tx.AppendEvent(ctx, Event{Ticket: t.ID, Epoch: l.Epoch, Kind: kind, At: now, Data: data})
	return err
}

// Release ends the lease of epoch on ticket id and reopens the ticket.
// epoch 0 releases the current lease (operators).
func (s *Service) Release(ctx context.Context, id string, epoch int64, reason string) (TicketView, error) {
	return s.finish(ctx, id, epoch, LeaseReleased, reason, "")
}

// Complete ends the lease of epoch on ticket id and completes the ticket.
func (s *Service) Complete(ctx context.Context, id string, epoch int64, prURL string) (TicketView, error) {
	return s.finish(ctx, id, epoch, LeaseCompleted, "", prURL)
}

func (s *Service) finish(ctx context.Context, id string, epoch int64, state LeaseState, reason, prURL string) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if epoch < 0 {
		return TicketView{}, Errorf(ErrInvalid, "epoch must not be negative, got %d", epoch)
	}
	if len(reason) > MaxIdentLen || len(prURL) > MaxTitleLen {
		return TicketView{}, Errorf(ErrInvalid, "reason is at most %d bytes and pr_url at most %d", MaxIdentLen, MaxTitleLen)
	}
	var out TicketView
	err := s.store.Update(ctx, func(tx Tx) error {
		t, l, err := s.heldLease(ctx, tx, id, epoch)
		if err != nil {
			return err
		}
		if err := s.endTx(ctx, tx, t, l, state, reason, prURL); err != nil {
			return err
		}
		t2, err := tx.Ticket(ctx, id)
		if err != nil {
			return err
		}
		l2, err := tx.Lease(ctx, id, l.Epoch)
		if err != nil {
			return err
		}
		out = TicketView{Ticket: t2, Lease: &l2}
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
		if _, err := tx.Ticket(ctx, id); errors.Is(err, ErrNotFound) {
			return Errorf(ErrNotFound, "ticket %s not found", id)
		} else if err != nil {
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
			if !a.ReadyForActivityMode {
				var v1 []string
				for _, h := range a.Hosts {
					if h.V1Count > 0 {
						v1 = append(v1, h.Host)
					}
				}
				return Errorf(ErrAdoptionIncomplete, "refusing activity mode: %d host(s) sent v1 heartbeats in the last %s (%s); migrate them or pass --force",
					len(v1), DefaultAdoptionWindow, strings.Join(v1, ", "))
			}
		}
		if err := tx.SetMeta(ctx, MetaMode, string(mode)); err != nil {
			return fmt.Errorf("store mode: %w", err)
		}
		if err := s.recompute(ctx, tx, mode); err != nil {
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

// Adoption returns the per-host schema adoption over window.
func (s *Service) Adoption(ctx context.Context, window time.Duration) (Adoption, error) {
	if window <= 0 {
		return Adoption{}, Errorf(ErrInvalid, "adoption window must be positive, got %s", window)
	}
	var a Adoption
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		a, err = s.adoptionTx(ctx, tx, window, s.now())
		return err
	})
	return a, err
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

// Sweep lapses every held lease whose expiry has passed, in batches, and
// records why each one lapsed. During the startup grace, leases last
// refreshed before the server start are left alone.
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	start := time.Now()
	now := s.now()
	var res SweepResult
	var graceFrom time.Time
	var mode Mode
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if mode, err = s.currentMode(ctx, tx); err != nil {
			return err
		}
		graceFrom, err = s.graceFrom(ctx, tx, now)
		return err
	})
	if err != nil {
		return res, err
	}
	for {
		var n int
		var batch []Lease
		err := s.store.Update(ctx, func(tx Tx) error {
			batch = batch[:0] // a store may run fn again
			due, err := tx.DueLeases(ctx, now, graceFrom, sweepBatch)
			if err != nil {
				return fmt.Errorf("due leases: %w", err)
			}
			n = len(due)
			for _, l := range due {
				ended, err := s.lapseTx(ctx, tx, mode, l, now)
				if err != nil {
					return err
				}
				batch = append(batch, ended)
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		// Only committed lapses are reported, as they now stand (lapsed,
		// with reason and fallback).
		res.Lapsed = append(res.Lapsed, batch...)
		if n < sweepBatch {
			break
		}
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		if err := tx.SetMeta(ctx, MetaLastSweep, formatTime(now)); err != nil {
			return err
		}
		return tx.PruneHeartbeats(ctx, now.Add(-2*DefaultAdoptionWindow))
	})
	res.Duration = time.Since(start)
	return res, err
}

// graceFrom returns the refreshed-from bound of the startup grace at now,
// zero when no grace is in force.
func (s *Service) graceFrom(ctx context.Context, tx Tx, now time.Time) (time.Time, error) {
	until, err := tx.Meta(ctx, MetaGraceUntil)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	u, err := parseTime(until)
	if err != nil || !now.Before(u) {
		return time.Time{}, nil
	}
	from, err := tx.Meta(ctx, MetaGraceFrom)
	if err != nil {
		return time.Time{}, nil
	}
	f, err := parseTime(from)
	if err != nil {
		return time.Time{}, nil
	}
	return f, nil
}

// lapseTx ends l as lapsed at now, reopens its ticket, records the event
// and returns the ended lease.
func (s *Service) lapseTx(ctx context.Context, tx Tx, mode Mode, l Lease, now time.Time) (Lease, error) {
	reason, fb := LapseReason(mode, l)
	l.State, l.EndedAt, l.EndReason, l.FallbackExtended = LeaseLapsed, now, reason, fb
	if err := tx.UpdateLease(ctx, l); err != nil {
		return l, fmt.Errorf("lapse lease %s/%d: %w", l.Ticket, l.Epoch, err)
	}
	t, err := tx.Ticket(ctx, l.Ticket)
	if err != nil {
		return l, fmt.Errorf("read ticket %s: %w", l.Ticket, err)
	}
	if t.Epoch == l.Epoch && t.State == TicketClaimed {
		t.State, t.UpdatedAt = TicketOpen, now
		if err := tx.UpdateTicket(ctx, t); err != nil {
			return l, fmt.Errorf("reopen ticket %s: %w", t.ID, err)
		}
	}
	_, err = tx.AppendEvent(ctx, Event{Ticket: l.Ticket, Epoch: l.Epoch, Kind: EventLapsed, At: now, Data: map[string]any{
		"reason": reason, "fallback_extended": fb, "agent": l.Agent, "host": l.Host,
		"last_activity_at": formatTime(l.LastActivityAt), "last_heartbeat_at": formatTime(l.LastHeartbeatAt),
	}})
	return l, err
}
