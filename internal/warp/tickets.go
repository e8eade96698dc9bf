// Tickets: create, read, list and their history (the Service's ticket
// use cases; edit, cancel and reopen are in ticketops.go).

package warp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

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
		_, err = tx.AppendEvent(ctx, NewEvent(t.ID, 0, now, CreatedData{Title: t.Title}))
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
