// Claims and heartbeats: claim a ticket (by id or the next open one),
// heartbeat its lease, release or complete it. The rules they apply are
// in lease.go; batches of heartbeats in batch.go.

package warp

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// MaxActivityAge bounds activity_age_s: anything larger is a broken client,
// not an idle agent.
const MaxActivityAge = 366 * 24 * 3600.0

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
