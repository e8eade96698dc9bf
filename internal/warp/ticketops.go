package warp

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// An operator's changes to a ticket: edit its title and labels, cancel
// it, reopen it. Each is one transaction that reads the ticket locked,
// applies the rule of the lease core (Cancel, Reopen) and records an
// event; a write from the dashboard names its operator ("by",
// Caller.Operator).

// TicketEdit is what EditTicket changes; nil or empty fields are left as
// they are.
type TicketEdit struct {
	Title *string
	// Labels replaces every label (an empty, non-nil slice removes them
	// all); it excludes AddLabels and RemoveLabels.
	Labels       *[]string
	AddLabels    []string
	RemoveLabels []string
}

// EditTicket changes ticket id's title and labels, in any state. An edit
// that changes nothing writes nothing and records no event; one that does
// records edited {title, labels} (each only when it changed; labels as a
// comma-separated list).
func (s *Service) EditTicket(ctx context.Context, id string, e TicketEdit) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	set, add, remove, err := e.check()
	if err != nil {
		return TicketView{}, err
	}
	now := s.now()
	var out TicketView
	err = s.store.Update(ctx, func(tx Tx) error {
		t, err := readTicket(ctx, tx, id)
		if err != nil {
			return err
		}
		var data EditedData
		if e.Title != nil && *e.Title != t.Title {
			t.Title, data.Title = *e.Title, e.Title
		}
		labels := t.Labels
		if e.Labels != nil {
			labels = set
		} else if len(add) > 0 || len(remove) > 0 {
			labels = slices.DeleteFunc(append(slices.Clone(t.Labels), add...), func(l string) bool { return slices.Contains(remove, l) })
		}
		if labels, err = normLabels(labels); err != nil {
			return err
		}
		if !slices.Equal(labels, t.Labels) {
			joined := strings.Join(labels, ",")
			t.Labels, data.Labels = labels, &joined
		}
		if data.Title != nil || data.Labels != nil {
			t.UpdatedAt = now
			if err := tx.EditTicket(ctx, t); err != nil {
				return fmt.Errorf("edit ticket %s: %w", id, err)
			}
			evs := []Event{NewEvent(t.ID, t.Epoch, now, data)}
			stampOperator(ctx, evs)
			if _, err := tx.AppendEvent(ctx, evs[0]); err != nil {
				return fmt.Errorf("append edited event of %s: %w", id, err)
			}
		}
		out, err = s.viewTx(ctx, tx, t)
		return err
	})
	return out, err
}

// check refuses an edit that changes nothing, mixes labels with labels
// to add or remove, or names a bad title or label, and returns the labels
// normalised: the set, those to add and those to remove.
func (e TicketEdit) check() (set, add, remove []string, err error) {
	if e.Title == nil && e.Labels == nil && len(e.AddLabels) == 0 && len(e.RemoveLabels) == 0 {
		return nil, nil, nil, Errorf(ErrInvalid, "nothing to change: give a title, labels, labels to add or labels to remove")
	}
	if e.Labels != nil && (len(e.AddLabels) > 0 || len(e.RemoveLabels) > 0) {
		return nil, nil, nil, Errorf(ErrInvalid, "labels replaces every label: give it alone, or labels to add and to remove")
	}
	if e.Title != nil {
		if err := CheckText("title", *e.Title, MaxTitleLen); err != nil {
			return nil, nil, nil, err
		}
	}
	if e.Labels != nil {
		if set, err = normLabels(*e.Labels); err != nil {
			return nil, nil, nil, err
		}
	}
	if add, err = normLabels(e.AddLabels); err != nil {
		return nil, nil, nil, err
	}
	if remove, err = normLabels(e.RemoveLabels); err != nil {
		return nil, nil, nil, err
	}
	return set, add, remove, nil
}

// Cancel cancels ticket id (the lease core's Cancel): an open or claimed
// ticket turns cancelled, a held lease released with reason
// CancelReason(reason). reason is at most MaxIdentLen bytes.
func (s *Service) Cancel(ctx context.Context, id, reason string) (TicketView, error) {
	return s.operate(ctx, id, reason, func(tx Tx, t Ticket) (Change, error) {
		var holder *Lease
		if t.State == TicketClaimed {
			l, err := tx.Lease(ctx, t.ID, t.Epoch)
			if err != nil {
				return Change{}, fmt.Errorf("read lease %s/%d: %w", t.ID, t.Epoch, err)
			}
			holder = &l
		}
		return Cancel(t, holder, reason, s.now())
	})
}

// Reopen reopens completed, cancelled or blocked ticket id (the lease core's
// Reopen). reason is at most MaxIdentLen bytes.
func (s *Service) Reopen(ctx context.Context, id, reason string) (TicketView, error) {
	return s.operate(ctx, id, reason, func(tx Tx, t Ticket) (Change, error) {
		ch, err := Reopen(t, reason, s.now())
		if err == nil && t.State == TicketBlocked {
			// The cap counts again from here: the next MaxAttempts
			// failed attempts block it again.
			if err := tx.SetAttemptCapReset(ctx, t.ID, t.Epoch); err != nil {
				return Change{}, fmt.Errorf("reset the attempt cap of %s: %w", t.ID, err)
			}
		}
		return ch, err
	})
}

// operate runs an operator's transition of ticket id: validate, read the
// ticket locked, apply, stamp the operator, write.
func (s *Service) operate(ctx context.Context, id, reason string, apply func(Tx, Ticket) (Change, error)) (TicketView, error) {
	if !ValidTicketID(id) {
		return TicketView{}, Errorf(ErrInvalid, "ticket id %q is invalid", id)
	}
	if err := CheckText("reason", reason, MaxIdentLen); err != nil {
		return TicketView{}, err
	}
	var out TicketView
	err := s.store.Update(ctx, func(tx Tx) error {
		t, err := readTicket(ctx, tx, id)
		if err != nil {
			return err
		}
		ch, err := apply(tx, t)
		if err != nil {
			return err
		}
		stampOperator(ctx, ch.Events)
		if _, err := s.write(ctx, tx, &ch); err != nil {
			return err
		}
		out, err = s.viewTx(ctx, tx, ch.Ticket)
		return err
	})
	return out, err
}

// viewTx is the view of ticket t with its latest lease, read in tx.
func (s *Service) viewTx(ctx context.Context, tx Tx, t Ticket) (TicketView, error) {
	tl := TicketLease{Ticket: t}
	if t.Epoch > 0 {
		l, err := tx.Lease(ctx, t.ID, t.Epoch)
		if err != nil {
			return TicketView{}, fmt.Errorf("read lease %s/%d: %w", t.ID, t.Epoch, err)
		}
		tl.Lease = &l
	}
	return s.view(tl, s.now()), nil
}

// stampOperator records the operator of ctx's caller (Caller.Operator),
// when there is one, as "by" in each of evs.
func stampOperator(ctx context.Context, evs []Event) {
	c, _ := CallerFrom(ctx)
	if c.Operator == "" {
		return
	}
	for i := range evs {
		evs[i].Data = withOperator(evs[i].Data, c.Operator)
	}
}
