package warp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The operator's transitions of a ticket, as the lease core states them.
func TestCancelAndReopenRules(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	held := warp.Lease{Ticket: "T", Epoch: 2, Agent: "a", Host: "h", State: warp.LeaseHeld, ClaimedAt: now.Add(-time.Hour)}
	tk := func(s warp.TicketState) warp.Ticket { return warp.Ticket{ID: "T", State: s, Epoch: 2} }

	for _, c := range []struct {
		name    string
		state   warp.TicketState
		holder  *warp.Lease
		wantErr error
		lease   warp.LeaseState // of the change, "" when none
		kinds   []warp.EventKind
	}{
		{"an open ticket is cancelled", warp.TicketOpen, nil, nil, "", []warp.EventKind{warp.EventCancelled}},
		{"a claimed ticket's lease is released, then it is cancelled", warp.TicketClaimed, &held, nil, warp.LeaseReleased,
			[]warp.EventKind{warp.EventReleased, warp.EventCancelled}},
		{"a completed ticket is not cancelled", warp.TicketCompleted, nil, warp.ErrConflict, "", nil},
		{"a cancelled ticket is not cancelled again", warp.TicketCancelled, nil, warp.ErrConflict, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, err := warp.Cancel(tk(c.state), c.holder, "why", now)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("got %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil || ch.Ticket.State != warp.TicketCancelled || !ch.TicketDirty || !ch.Ticket.UpdatedAt.Equal(now) {
				t.Fatalf("change %+v, %v", ch, err)
			}
			if ch.Lease.State != c.lease || (c.lease != "" && (ch.Lease.EndReason != "cancelled: why" || !ch.LeaseDirty)) {
				t.Errorf("lease %+v", ch.Lease)
			}
			var kinds []warp.EventKind
			for _, e := range ch.Events {
				kinds = append(kinds, e.Kind)
			}
			if len(kinds) != len(c.kinds) || kinds[len(kinds)-1] != warp.EventCancelled {
				t.Errorf("events %v, want %v", kinds, c.kinds)
			}
		})
	}

	for _, c := range []struct {
		state   warp.TicketState
		wantErr error
	}{
		{warp.TicketCompleted, nil}, {warp.TicketCancelled, nil},
		{warp.TicketOpen, warp.ErrConflict}, {warp.TicketClaimed, warp.ErrConflict},
	} {
		ch, err := warp.Reopen(tk(c.state), "", now)
		switch {
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("reopen of a %s ticket: %v, want %v", c.state, err, c.wantErr)
		case c.wantErr == nil && (err != nil || ch.Ticket.State != warp.TicketOpen || ch.Ticket.Epoch != 2 || len(ch.Events) != 1 ||
			ch.Events[0].Data.(warp.ReopenedData).From != c.state):
			t.Errorf("reopen of a %s ticket: %+v, %v", c.state, ch, err)
		}
	}

	// A cancelled ticket is never claimed.
	_, err := warp.Policy{LeaseWindow: time.Hour, StallAfter: time.Minute, SilentAfter: time.Minute}.Claim(warp.ModeTransition, tk(warp.TicketCancelled), nil, warp.ClaimRequest{}, warp.Caller{}, "", now)
	if !errors.Is(err, warp.ErrConflict) {
		t.Errorf("claim of a cancelled ticket: %v", err)
	}
}
