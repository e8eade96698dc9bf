package warp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Defaults and caps of LeaseHistory.
const (
	// DefaultHistoryLeases is how many of a ticket's latest leases
	// LeaseHistory reads when asked for none.
	DefaultHistoryLeases = 10
	// MaxHistoryLeases caps the leases one LeaseHistory reads.
	MaxHistoryLeases = 100
	// MaxHistoryEvents caps the events one LeaseHistory reads (oldest
	// first); History.Truncated says when more were left.
	MaxHistoryEvents = 5000
)

// History is a ticket's latest leases with their events, read in one
// transaction (Service.LeaseHistory).
type History struct {
	Ticket Ticket
	// Leases are the latest leases, oldest first; empty when the ticket
	// was never claimed. Earlier is how many older leases were left out.
	Leases  []Lease
	Earlier int64
	// Events are the ticket's events of those epochs and its ticket-wide
	// events (epoch 0), in ID order.
	Events []Event
	// Truncated reports that the ticket has more events than
	// MaxHistoryEvents: the later ones are not in Events.
	Truncated bool
	// Verdict is the derived verdict of the current lease when it is held.
	Verdict Verdict
	// Now is the service time of the read.
	Now time.Time
}

// LeaseHistory returns ticket id with its latest maxLeases leases
// (DefaultHistoryLeases when <= 0, at most MaxHistoryLeases) and their
// events. It reads one lease per epoch (Tx.Lease) and the ticket's events
// in pages: O(leases + events), no new store query. The stores keep no
// per-heartbeat history: a lease carries its claim, first v2, last
// heartbeat, last activity, last extension, exit report and end, a count
// of hook events, and the events its verdict changes recorded.
func (s *Service) LeaseHistory(ctx context.Context, id string, maxLeases int) (History, error) {
	if !ValidTicketID(id) {
		return History{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if maxLeases <= 0 {
		maxLeases = DefaultHistoryLeases
	}
	if maxLeases > MaxHistoryLeases {
		return History{}, Errorf(ErrInvalid, "%d leases asked for: at most %d", maxLeases, MaxHistoryLeases)
	}
	var h History
	err := s.store.View(ctx, func(tx Tx) error {
		t, err := readTicket(ctx, tx, id)
		if err != nil {
			return err
		}
		h = History{Ticket: t, Now: s.now()}
		first := max(int64(1), t.Epoch-int64(maxLeases)+1)
		h.Earlier = first - 1
		if t.Epoch == 0 {
			h.Earlier = 0
		}
		for e := first; e <= t.Epoch; e++ {
			l, err := tx.Lease(ctx, id, e)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read lease %s/%d: %w", id, e, err)
			}
			h.Leases = append(h.Leases, l)
		}
		if n := len(h.Leases); n > 0 && h.Leases[n-1].Held() {
			h.Verdict = s.cfg.Policy.Verdict(h.Leases[n-1], h.Now)
		}
		var after int64
		read := 0
		for {
			page, err := tx.Events(ctx, id, after, MaxListLimit)
			if err != nil {
				return fmt.Errorf("read events of %s: %w", id, err)
			}
			for _, ev := range page {
				read++
				if read > MaxHistoryEvents {
					h.Truncated = true
					return nil
				}
				if ev.Epoch == 0 || ev.Epoch >= first {
					h.Events = append(h.Events, ev)
				}
			}
			if len(page) < MaxListLimit {
				return nil
			}
			after = page[len(page)-1].ID
		}
	})
	return h, err
}

// VerdictSince returns when lease l's verdict v began, as the verdict
// pass records it in a verdict-changed event's since: from the lease's
// columns (the threshold crossed, the exit report, or for active the
// heartbeat that brought fresh activity).
func (p Policy) VerdictSince(l Lease, v Verdict) time.Time { return p.verdictSince(l, v) }
