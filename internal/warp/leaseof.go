package warp

import (
	"context"
	"errors"
	"fmt"
)

// LeaseStatus is what became of one lease of a ticket: the lease as warp
// keeps it, and the ticket's state and epoch now (a later epoch means
// another claim took the ticket over).
type LeaseStatus struct {
	Ticket       string
	TicketState  TicketState
	CurrentEpoch int64
	Lease        Lease
}

// LeaseOf returns lease epoch of ticket id and the ticket's state now. An
// admin may read any lease; an agent only one whose secret it presents
// (or, for a lease claimed without a secret, the token that claimed it),
// so the holder of a lease can always learn how it ended — even after the
// ticket moved on — and nobody else learns anything of it: a lease that
// does not exist and one held by another agent get the same refusal.
func (s *Service) LeaseOf(ctx context.Context, id string, epoch int64) (LeaseStatus, error) {
	if !ValidTicketID(id) {
		return LeaseStatus{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if epoch <= 0 {
		return LeaseStatus{}, Errorf(ErrInvalid, "epoch %d is invalid: epochs start at 1", epoch)
	}
	c, _ := CallerFrom(ctx)
	var out LeaseStatus
	err := s.store.View(ctx, func(tx Tx) error {
		t, err := readTicket(ctx, tx, id)
		if err != nil {
			return err
		}
		l, err := tx.Lease(ctx, id, epoch)
		if errors.Is(err, ErrNotFound) {
			if c.Agent {
				return Errorf(ErrNotHolder, "this request does not carry the secret of lease %d of ticket %s", epoch, id)
			}
			return Errorf(ErrNotFound, "ticket %s has no lease %d (its epoch is %d)", id, epoch, t.Epoch)
		}
		if err != nil {
			return fmt.Errorf("read lease %s/%d: %w", id, epoch, err)
		}
		if err := c.authorize(l); err != nil {
			return Errorf(ErrNotHolder, "this request does not carry the secret of lease %d of ticket %s", epoch, id)
		}
		out = LeaseStatus{Ticket: id, TicketState: t.State, CurrentEpoch: t.Epoch, Lease: l}
		return nil
	})
	return out, err
}
