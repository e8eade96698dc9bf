// Modes and adoption: the migration mode (legacy, transition, activity),
// the recompute of expiry a change of mode or window needs, and the
// adoption of schema v2 that gates the activity mode.

package warp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// recomputed says what recompute rewrites.
type recomputed uint8

const (
	recomputeExpiry     recomputed = 1 << iota // expires_at, under the mode
	recomputeVerdictDue                        // verdict_due_at, at now
)

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
		_, err = tx.AppendEvent(ctx, NewEvent("", 0, now, ModeChangedData{From: old, To: mode, Forced: force}))
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
