package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gyrum-labs/warp/internal/warp"
)

// listAll pages through ListTickets with o and returns the ids, checking
// that Seq increases and that only the last page has no cursor.
func (e *env) listAll(o warp.ListOptions) (ids []string, pages int) {
	e.t.Helper()
	return e.listAllWith(e.svc, o)
}

// listAllWith is listAll through svc.
func (e *env) listAllWith(svc *warp.Service, o warp.ListOptions) (ids []string, pages int) {
	e.t.Helper()
	var lastSeq int64
	for {
		page, err := svc.ListTickets(e.ctx, o)
		if err != nil {
			e.t.Fatalf("list %+v: %v", o, err)
		}
		pages++
		if len(page.Tickets) > o.Limit {
			e.t.Fatalf("page of %d with limit %d", len(page.Tickets), o.Limit)
		}
		for _, tv := range page.Tickets {
			if tv.Ticket.Seq <= lastSeq {
				e.t.Errorf("seq order: %s has seq %d after %d", tv.Ticket.ID, tv.Ticket.Seq, lastSeq)
			}
			lastSeq = tv.Ticket.Seq
			ids = append(ids, tv.Ticket.ID)
		}
		if page.NextCursor == "" {
			return ids, pages
		}
		if len(page.Tickets) != o.Limit {
			e.t.Errorf("a page with a cursor has %d tickets, want the limit %d", len(page.Tickets), o.Limit)
		}
		o.Cursor = page.NextCursor
		if pages > 1000 {
			e.t.Fatal("pagination does not end")
		}
	}
}

func testListing(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("Pagination", func(t *testing.T) {
		e := newEnv(t, open)
		var all, claimed, onH1 []string
		for i := range 25 {
			id := fmt.Sprintf("T-%02d", 24-i) // ids sort against creation order
			e.create(id)
			all = append(all, id)
			if i%3 == 0 {
				host := "h2"
				if i%2 == 0 {
					host = "h1"
					onH1 = append(onH1, id)
				}
				e.claim(id, host)
				claimed = append(claimed, id)
			}
		}
		ids, pages := e.listAll(warp.ListOptions{Limit: 10})
		if !slices.Equal(ids, all) || pages != 3 {
			t.Errorf("all tickets by 10: got %v in %d pages, want %v in 3 pages (creation order)", ids, pages, all)
		}
		ids, pages = e.listAll(warp.ListOptions{Limit: 5})
		if !slices.Equal(ids, all) || pages != 5 {
			t.Errorf("all tickets by 5: got %d ids in %d pages, want 25 in 5 (the last full page has no cursor)", len(ids), pages)
		}
		ids, _ = e.listAll(warp.ListOptions{State: warp.TicketClaimed, Limit: 3})
		if !slices.Equal(ids, claimed) {
			t.Errorf("claimed by 3: got %v, want %v", ids, claimed)
		}
		ids, _ = e.listAll(warp.ListOptions{State: warp.TicketOpen, Limit: 4})
		if len(ids) != len(all)-len(claimed) {
			t.Errorf("open by 4: got %d, want %d", len(ids), len(all)-len(claimed))
		}
		// A host's tickets, read from its leases and by walking every
		// ticket: the same pages.
		walk := e.walker()
		for _, lim := range []int{1, 2, 100} {
			ids, _ = e.listAll(warp.ListOptions{Host: "h1", Limit: lim})
			if !slices.Equal(ids, onH1) {
				t.Errorf("host h1 by %d: got %v, want %v", lim, ids, onH1)
			}
			if walked, _ := e.listAllWith(walk, warp.ListOptions{Host: "h1", Limit: lim}); !slices.Equal(walked, onH1) {
				t.Errorf("host h1 by %d, walking: got %v, want %v", lim, walked, onH1)
			}
		}
		if ids, _ = e.listAll(warp.ListOptions{Host: "nowhere", Limit: 5}); len(ids) != 0 {
			t.Errorf("a host with no lease: got %v, want none", ids)
		}
		ids, _ = e.listAll(warp.ListOptions{State: warp.TicketCompleted, Limit: 2})
		if len(ids) != 0 {
			t.Errorf("completed: got %v, want none", ids)
		}
		page, err := e.svc.ListTickets(e.ctx, warp.ListOptions{})
		if err != nil || len(page.Tickets) != 25 || page.NextCursor != "" {
			t.Errorf("default limit: got %d tickets cursor %q err %v, want 25, no cursor", len(page.Tickets), page.NextCursor, err)
		}
	})

	t.Run("LeaseWithEachTicket", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("never")
		e.createClaim("held", "h1")
		e.createClaim("released", "h1")
		if _, err := e.svc.Release(e.ctx, "released", 1, "r"); err != nil {
			t.Fatal(err)
		}
		e.claim("released", "h2")
		if _, err := e.svc.Release(e.ctx, "released", 2, "r2"); err != nil {
			t.Fatal(err)
		}
		page, err := e.svc.ListTickets(e.ctx, warp.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]warp.TicketView{}
		for _, tv := range page.Tickets {
			got[tv.Ticket.ID] = tv
		}
		if v := got["never"]; v.Lease != nil || v.Verdict != warp.VerdictNone {
			t.Errorf("never claimed: got lease %+v verdict %q, want none", v.Lease, v.Verdict)
		}
		if v := got["held"]; v.Lease == nil || v.Lease.Epoch != 1 || v.Lease.State != warp.LeaseHeld || v.Verdict != warp.VerdictActive {
			t.Errorf("held: got lease %+v verdict %q, want epoch 1 held, active", v.Lease, v.Verdict)
		}
		if v := got["released"]; v.Lease == nil || v.Lease.Epoch != 2 || v.Lease.State != warp.LeaseReleased || v.Lease.EndReason != "r2" || v.Verdict != warp.VerdictNone {
			t.Errorf("released: got lease %+v verdict %q, want the current epoch 2, released r2, no verdict", v.Lease, v.Verdict)
		}
		if v := got["held"]; v.Lease != nil && *v.Lease != e.lease("held") {
			t.Errorf("listed lease %+v differs from the ticket's %+v", *v.Lease, e.lease("held"))
		}
		// A host filter only matches held leases.
		page, err = e.svc.ListTickets(e.ctx, warp.ListOptions{Host: "h2"})
		if err != nil || len(page.Tickets) != 0 {
			t.Errorf("host h2 (its lease ended): got %d tickets, %v, want none", len(page.Tickets), err)
		}
	})

	t.Run("BadOptions", func(t *testing.T) {
		e := newEnv(t, open)
		for _, o := range []warp.ListOptions{
			{State: "lost"},
			{Cursor: "abc"},
			{Cursor: "-5"},
			{Limit: -1},
			{Limit: warp.MaxListLimit + 1},
			{Verdict: "sleepy"},
			{Verdict: warp.VerdictActive, State: warp.TicketOpen},
		} {
			_, err := e.svc.ListTickets(e.ctx, o)
			wantErr(t, fmt.Sprintf("list %+v", o), err, warp.ErrInvalid)
		}
	})
}
