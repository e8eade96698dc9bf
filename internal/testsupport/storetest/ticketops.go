package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testTicketOps: an operator's edit, cancel and reopen of a ticket, the
// state cancelled through claim, claim-next, the sweep and the counts, and
// the listing by labels (issue 46).
func testTicketOps(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("CancelOpen", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1", "go")
		e.clock.Advance(time.Minute)
		v, err := e.svc.Cancel(e.ctx, "T-1", "duplicate of T-9")
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != warp.TicketCancelled || v.Lease != nil || v.Verdict != warp.VerdictNone {
			t.Errorf("cancelled: %+v, want cancelled with no lease", v)
		}
		wantTime(t, "updated_at", v.Ticket.UpdatedAt, e.clock.Now())
		if got := e.view("T-1"); got.Ticket.State != warp.TicketCancelled {
			t.Errorf("read back: %s", got.Ticket.State)
		}
		ev := e.lastEvent("T-1", warp.EventCancelled)
		if ev.Data != (warp.CancelledData{From: warp.TicketOpen, Reason: "duplicate of T-9"}) {
			t.Errorf("cancelled event %+v", ev.Data)
		}
		// Never claimed while cancelled, by id or by claim-next.
		_, err = e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: "a", Host: "h"})
		wantErr(t, "claim of a cancelled ticket", err, warp.ErrConflict)
		if err != nil && !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("claim of a cancelled ticket: %q does not say why", err)
		}
		_, err = e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Agent: "a", Host: "h", Labels: []string{"go"}})
		wantErr(t, "claim-next with only a cancelled ticket", err, warp.ErrNoOpenTicket)
		// Cancelled once only; completing it is refused too.
		_, err = e.svc.Cancel(e.ctx, "T-1", "")
		wantErr(t, "second cancel", err, warp.ErrConflict)
		_, err = e.svc.Complete(e.ctx, "T-1", 0, "")
		wantErr(t, "complete of a cancelled ticket", err, warp.ErrLeaseEnded)
	})

	t.Run("CancelClaimed", func(t *testing.T) {
		e := newEnv(t, open)
		l := e.createClaim("T-1", "h1")
		e.clock.Advance(time.Minute)
		v, err := e.svc.Cancel(warp.WithCaller(e.ctx, warp.Caller{Operator: "jane"}), "T-1", "")
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != warp.TicketCancelled || v.Lease == nil || v.Lease.State != warp.LeaseReleased || v.Lease.EndReason != "cancelled" {
			t.Fatalf("cancel of a claimed ticket: %+v %+v", v.Ticket, v.Lease)
		}
		wantTime(t, "ended_at", v.Lease.EndedAt, e.clock.Now())
		if k := e.kinds("T-1"); !slices.Equal(k, []warp.EventKind{warp.EventCreated, warp.EventClaimed, warp.EventReleased, warp.EventCancelled}) {
			t.Errorf("events %v", k)
		}
		rel, can := e.lastEvent("T-1", warp.EventReleased), e.lastEvent("T-1", warp.EventCancelled)
		if r, _ := rel.Data.(warp.ReleasedData); r.Reason != "cancelled" || r.By != "jane" ||
			can.Data != (warp.CancelledData{From: warp.TicketClaimed, By: "jane"}) || can.Epoch != 1 {
			t.Errorf("released %+v, cancelled %+v: want the operator in both", rel.Data, can)
		}
		// The holder's loop is told the lease ended, and how.
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: l.Epoch, ActivityAge: 0})
		wantErr(t, "heartbeat after the cancel", err, warp.ErrLeaseEnded)
		// The held-lease counts lost it; the sweep has nothing to do.
		c, err := e.svc.CountVerdicts(e.ctx)
		if err != nil || c.Held() != 0 {
			t.Errorf("held after the cancel: %+v, %v", c, err)
		}
		e.clock.Advance(2 * time.Hour)
		if got := e.sweep(); len(got) != 0 {
			t.Errorf("the sweep lapsed %+v after the cancel", got)
		}
		// A cancel reason goes to the lease's end reason.
		e.createClaim("T-2", "h1")
		v, err = e.svc.Cancel(e.ctx, "T-2", "wrong repo")
		if err != nil || v.Lease.EndReason != "cancelled: wrong repo" {
			t.Errorf("cancel with a reason: %+v, %v", v.Lease, err)
		}
		_, err = e.svc.Cancel(e.ctx, "T-2", strings.Repeat("x", warp.MaxIdentLen+1))
		wantErr(t, "a reason over its bound", err, warp.ErrInvalid)
		_, err = e.svc.Cancel(e.ctx, "NOPE", "")
		wantErr(t, "cancel of an unknown ticket", err, warp.ErrNotFound)
		_, err = e.svc.Cancel(e.ctx, "bad id!", "")
		wantErr(t, "cancel of a bad id", err, warp.ErrInvalid)
	})

	t.Run("Reopen", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		if _, err := e.svc.Complete(e.ctx, "T-1", 0, "https://pr/1"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		v, err := e.svc.Reopen(e.ctx, "T-1", "the fix regressed")
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != warp.TicketOpen || v.Ticket.Epoch != 1 || v.Lease == nil || v.Lease.State != warp.LeaseCompleted {
			t.Errorf("reopened: %+v %+v, want open, epoch 1, its lease still completed", v.Ticket, v.Lease)
		}
		ev := e.lastEvent("T-1", warp.EventReopened)
		if ev.Data != (warp.ReopenedData{From: warp.TicketCompleted, Reason: "the fix regressed"}) {
			t.Errorf("reopened event %+v", ev.Data)
		}
		// Claimed again with the next epoch, by claim-next too.
		got, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Agent: "a", Host: "h2"})
		if err != nil || got.Ticket.ID != "T-1" || got.Lease.Epoch != 2 {
			t.Fatalf("claim-next after the reopen: %+v, %v", got, err)
		}
		_, err = e.svc.Reopen(e.ctx, "T-1", "")
		wantErr(t, "reopen of a claimed ticket", err, warp.ErrConflict)
		e.create("T-2")
		_, err = e.svc.Reopen(e.ctx, "T-2", "")
		wantErr(t, "reopen of an open ticket", err, warp.ErrConflict)
		// A cancelled ticket comes back open.
		if _, err := e.svc.Cancel(e.ctx, "T-2", ""); err != nil {
			t.Fatal(err)
		}
		if v, err := e.svc.Reopen(e.ctx, "T-2", ""); err != nil || v.Ticket.State != warp.TicketOpen {
			t.Errorf("reopen of a cancelled ticket: %+v, %v", v.Ticket, err)
		}
		e.claim("T-2", "h1")
	})

	t.Run("Edit", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1", "go", "db")
		e.clock.Advance(time.Minute)
		title := "a better title"
		v, err := e.svc.EditTicket(warp.WithCaller(e.ctx, warp.Caller{Operator: "jane"}), "T-1", warp.TicketEdit{Title: &title, AddLabels: []string{"ui", " go "}, RemoveLabels: []string{"db"}})
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.Title != title || !slices.Equal(v.Ticket.Labels, []string{"go", "ui"}) {
			t.Errorf("edited: %+v", v.Ticket)
		}
		wantTime(t, "updated_at", v.Ticket.UpdatedAt, e.clock.Now())
		got := e.view("T-1")
		if got.Ticket.Title != title || !slices.Equal(got.Ticket.Labels, []string{"go", "ui"}) {
			t.Errorf("read back: %+v", got.Ticket)
		}
		ev := e.lastEvent("T-1", warp.EventEdited)
		if d, _ := ev.Data.(warp.EditedData); d.Title == nil || *d.Title != title || d.Labels == nil || *d.Labels != "go,ui" || d.By != "jane" {
			t.Errorf("edited event %+v", ev.Data)
		}
		// Labels replaced whole, then removed all; claim-next follows them.
		set := []string{"ops"}
		if v, err = e.svc.EditTicket(e.ctx, "T-1", warp.TicketEdit{Labels: &set}); err != nil || !slices.Equal(v.Ticket.Labels, set) {
			t.Errorf("labels set: %+v, %v", v.Ticket.Labels, err)
		}
		if _, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Labels: []string{"go"}}); err == nil {
			t.Errorf("claim-next on a label the edit removed found a ticket")
		}
		none := []string{}
		if v, err = e.svc.EditTicket(e.ctx, "T-1", warp.TicketEdit{Labels: &none}); err != nil || len(v.Ticket.Labels) != 0 {
			t.Errorf("labels cleared: %+v, %v", v.Ticket.Labels, err)
		}
		// An edit that changes nothing records nothing.
		n := len(e.events("T-1"))
		if _, err := e.svc.EditTicket(e.ctx, "T-1", warp.TicketEdit{Title: &title}); err != nil || len(e.events("T-1")) != n {
			t.Errorf("an edit without change: %v, %d events after %d", err, len(e.events("T-1")), n)
		}
		// A claimed ticket may be edited; its lease is untouched.
		l := e.claim("T-1", "h1")
		if v, err := e.svc.EditTicket(e.ctx, "T-1", warp.TicketEdit{AddLabels: []string{"x"}}); err != nil || v.Lease == nil || v.Lease.Epoch != l.Epoch || !v.Lease.Held() {
			t.Errorf("edit of a claimed ticket: %+v, %v", v, err)
		}
		// Bad edits.
		long := strings.Repeat("t", warp.MaxTitleLen+1)
		many := make([]string, warp.MaxLabels+1)
		for i := range many {
			many[i] = "l" + strings.Repeat("x", i)
		}
		for name, ed := range map[string]warp.TicketEdit{
			"nothing":           {},
			"a long title":      {Title: &long},
			"a bad label":       {AddLabels: []string{"no spaces"}},
			"labels and add":    {Labels: &set, AddLabels: []string{"y"}},
			"too many labels":   {AddLabels: many},
			"labels and remove": {Labels: &set, RemoveLabels: []string{"y"}},
		} {
			_, err := e.svc.EditTicket(e.ctx, "T-1", ed)
			wantErr(t, "edit with "+name, err, warp.ErrInvalid)
		}
		_, err = e.svc.EditTicket(e.ctx, "NOPE", warp.TicketEdit{Title: &title})
		wantErr(t, "edit of an unknown ticket", err, warp.ErrNotFound)
	})

	t.Run("ListByLabels", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1", "go", "db")
		e.create("T-2", "go")
		e.create("T-3", "db")
		e.createClaim("T-4", "h1")
		if _, err := e.svc.EditTicket(e.ctx, "T-4", warp.TicketEdit{AddLabels: []string{"go", "db"}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			o    warp.ListOptions
			want []string
		}{
			{warp.ListOptions{Labels: []string{"go"}}, []string{"T-1", "T-2", "T-4"}},
			{warp.ListOptions{Labels: []string{"db", "go"}}, []string{"T-1", "T-4"}},
			{warp.ListOptions{Labels: []string{"go", "db"}, State: warp.TicketOpen}, []string{"T-1"}},
			{warp.ListOptions{Labels: []string{"go"}, State: warp.TicketClaimed, Host: "h1"}, []string{"T-4"}},
			{warp.ListOptions{Labels: []string{"go"}, Verdict: warp.VerdictActive}, []string{"T-4"}},
			{warp.ListOptions{Labels: []string{"nope"}}, nil},
			{warp.ListOptions{Labels: []string{"go"}, Limit: 1}, []string{"T-1", "T-2", "T-4"}}, // every page
			// Search: the id, the lease's agent or host, any case; % and _ are literal.
			{warp.ListOptions{Search: "t-3"}, []string{"T-3"}},
			{warp.ListOptions{Search: "H1"}, []string{"T-4"}},
			{warp.ListOptions{Search: "AGENT-h"}, []string{"T-4"}},
			{warp.ListOptions{Search: "T-"}, []string{"T-1", "T-2", "T-3", "T-4"}},
			{warp.ListOptions{Search: "T-", State: warp.TicketClaimed, Labels: []string{"db"}}, []string{"T-4"}},
			{warp.ListOptions{Search: "%"}, nil},
			{warp.ListOptions{Search: "T_1"}, nil},
		} {
			if c.o.Limit == 0 {
				c.o.Limit = 10
			}
			if ids, _ := e.listAll(c.o); !slices.Equal(ids, c.want) {
				t.Errorf("list %+v: %v; want %v", c.o, ids, c.want)
			}
		}
		_, err := e.svc.ListTickets(e.ctx, warp.ListOptions{Labels: []string{"bad label"}})
		wantErr(t, "a bad label filter", err, warp.ErrInvalid)
		_, err = e.svc.ListTickets(e.ctx, warp.ListOptions{Search: strings.Repeat("x", warp.MaxIdentLen+1)})
		wantErr(t, "a search over its bound", err, warp.ErrInvalid)
		if _, err := e.svc.Cancel(e.ctx, "T-2", ""); err != nil {
			t.Fatal(err)
		}
		if ids, _ := e.listAll(warp.ListOptions{State: warp.TicketCancelled, Limit: 10}); !slices.Equal(ids, []string{"T-2"}) {
			t.Errorf("list cancelled: %v", ids)
		}
	})
}
