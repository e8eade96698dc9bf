package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testAttempts: each lease of a ticket is an attempt with its record —
// the verdict at its end in words, who ended it, the last note sent with
// a heartbeat, the snapshot (once per attempt) — listed newest first by
// Ticket and handed to the next claim; the attempt cap blocks a ticket
// and reopen gives it the cap again (issue 45).
func testAttempts(t *testing.T, open func(t *testing.T) warp.Store) {
	commit := strings.Repeat("ab", 20)
	t.Run("RecordAndHandOver", func(t *testing.T) {
		e := newEnv(t, open)
		l1 := e.createClaim("T-1", "h1")
		e.clock.Advance(time.Minute)
		note := "tried npm test; next: pin the node version"
		noteAt := e.clock.Now().Add(-10 * time.Second)
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: l1.Epoch, Host: "h1",
			ActivityAge: 5, Note: &note, NoteAt: noteAt}); err != nil {
			t.Fatal(err)
		}
		// A later heartbeat without a note keeps it.
		e.clock.Advance(time.Minute)
		e.v2("T-1", l1.Epoch, 1)
		// No progress for 20 min (stall threshold 15 min), then the lease lapses.
		e.clock.Advance(Policy().LeaseWindow + time.Minute)
		if got := e.sweep(); len(got) != 1 {
			t.Fatalf("sweep lapsed %d leases, want 1", len(got))
		}
		v := e.view("T-1")
		if len(v.Attempts) != 1 {
			t.Fatalf("attempts %d, want 1", len(v.Attempts))
		}
		a := v.Attempts[0]
		if a.Lease.Epoch != 1 || a.Lease.State != warp.LeaseLapsed || a.Record.Note != note {
			t.Errorf("attempt 1: epoch %d state %s note %q", a.Lease.Epoch, a.Lease.State, a.Record.Note)
		}
		wantTime(t, "note_at", a.Record.NoteAt, noteAt)
		// The lease's last heartbeat was LeaseWindow+1m ago: silent beats stalled.
		if want := "silent " + (Policy().LeaseWindow + time.Minute).String(); a.Record.EndVerdict != want {
			t.Errorf("end verdict %q, want %q", a.Record.EndVerdict, want)
		}
		if a.Record.EndedBy != "warp" {
			t.Errorf("ended by %q, want warp (the sweep)", a.Record.EndedBy)
		}

		// The snapshot: once per attempt, after the lease ended, by its holder.
		snap := warp.Snapshot{State: warp.SnapshotSaved, Commit: commit, Ref: warp.SnapshotRef("T-1", 1), Branch: "gyrum/T-1",
			Remote: "git@example.com:acme/app.git", Host: "h1"}
		if _, err := e.svc.RecordSnapshot(e.ctx, "T-1", 1, snap); err != nil {
			t.Fatal(err)
		}
		later := snap
		later.Commit = strings.Repeat("cd", 20)
		_, err := e.svc.RecordSnapshot(e.ctx, "T-1", 1, later)
		wantErr(t, "a second snapshot of attempt 1", err, warp.ErrConflict)
		seventh := snap
		seventh.Ref = warp.SnapshotRef("T-1", 7)
		_, err = e.svc.RecordSnapshot(e.ctx, "T-1", 7, seventh)
		wantErr(t, "a snapshot of an attempt that never was", err, warp.ErrNotFound)
		bad := snap
		bad.Ref = "refs/heads/main"
		_, err = e.svc.RecordSnapshot(e.ctx, "T-1", 1, bad)
		wantErr(t, "a snapshot under another ref", err, warp.ErrInvalid)

		// The next claim is handed attempt 1 with its snapshot.
		e.clock.Advance(time.Minute)
		c, err := e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: "b", Host: "h2"})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Attempts) != 2 || c.Attempts[0].Lease.Epoch != 2 || c.Attempts[1].Lease.Epoch != 1 {
			t.Fatalf("claim's attempts: %+v, want epochs 2, 1", c.Attempts)
		}
		got := c.Attempts[1].Record.Snapshot
		if got.State != warp.SnapshotSaved || got.Commit != commit || got.Branch != "gyrum/T-1" || got.Remote != snap.Remote || got.Host != "h1" {
			t.Errorf("snapshot handed over: %+v", got)
		}
		wantTime(t, "snapshot at", got.At, e.clock.Now().Add(-time.Minute))
		if c.Attempts[0].Record != (warp.AttemptRecord{Ticket: "T-1", Epoch: 2}) {
			t.Errorf("the new attempt's record: %+v, want empty", c.Attempts[0].Record)
		}
		// Released by an operator: the record names them.
		e.clock.Advance(time.Minute)
		if _, err := e.svc.Release(warp.WithCaller(e.ctx, warp.Caller{Operator: "jane"}), "T-1", 2, "wrong approach"); err != nil {
			t.Fatal(err)
		}
		r := e.view("T-1").Attempts[0].Record
		if r.EndedBy != "jane" || r.EndVerdict != "active" {
			t.Errorf("attempt 2 record: %+v, want ended by jane while active", r)
		}
		if k := e.lastEvent("T-1", warp.EventSnapshot); k.Data.(warp.SnapshotData).Commit != commit || k.Epoch != 1 {
			t.Errorf("snapshot event %+v", k)
		}
	})

	t.Run("NoteTooLong", func(t *testing.T) {
		e := newEnv(t, open)
		l := e.createClaim("T-1", "h1")
		long := strings.Repeat("x", warp.MaxNoteLen+1)
		_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: l.Epoch, ActivityAge: 1, Note: &long})
		wantErr(t, "a note of 1025 bytes", err, warp.ErrInvalid)
	})

	t.Run("SnapshotNeedsTheHolder", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1")
		v, err := e.svc.Claim(warp.WithCaller(e.ctx, warp.Caller{Agent: true, Token: "tok", WantsSecret: true}), "T-1", warp.ClaimRequest{Agent: "a", Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		snap := warp.Snapshot{State: warp.SnapshotGone, Host: "h"}
		_, err = e.svc.RecordSnapshot(warp.WithCaller(e.ctx, warp.Caller{Agent: true, Token: "tok", LeaseSecret: "wrong"}), "T-1", 1, snap)
		wantErr(t, "a snapshot without the lease secret", err, warp.ErrNotHolder)
		rec, err := e.svc.RecordSnapshot(warp.WithCaller(e.ctx, warp.Caller{Agent: true, Token: "tok", LeaseSecret: v.LeaseSecret}), "T-1", 1, snap)
		if err != nil || rec.Record.Snapshot.State != warp.SnapshotGone {
			t.Fatalf("the holder's snapshot: %+v, %v", rec, err)
		}
	})

	t.Run("Cap", func(t *testing.T) {
		e := newEnv(t, open, func(c *warp.Config) { c.MaxAttempts = 2 })
		e.create("T-1", "go")
		e.create("T-2", "go")
		fail := func(epoch int64) warp.TicketView {
			t.Helper()
			e.claim("T-1", "h1")
			e.clock.Advance(time.Minute)
			v, err := e.svc.Release(e.ctx, "T-1", epoch, "gave up")
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if v := fail(1); v.Ticket.State != warp.TicketOpen {
			t.Fatalf("after 1 failed attempt of 2: %s, want open", v.Ticket.State)
		}
		if v := fail(2); v.Ticket.State != warp.TicketBlocked {
			t.Fatalf("after 2 failed attempts of 2: %s, want blocked", v.Ticket.State)
		}
		ev := e.lastEvent("T-1", warp.EventBlocked)
		if reason := ev.Data.(warp.BlockedData).Reason; !strings.Contains(reason, "#1 released gave up") || !strings.Contains(reason, "#2 released gave up") {
			t.Errorf("blocked reason %q does not list the attempts", reason)
		}
		// claim-next skips it; a claim by id is refused.
		c, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Agent: "a", Host: "h", Labels: []string{"go"}})
		if err != nil || c.Ticket.ID != "T-2" {
			t.Fatalf("claim-next: %v %v, want T-2", c.Ticket.ID, err)
		}
		_, err = e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: "a", Host: "h"})
		wantErr(t, "claim of a blocked ticket", err, warp.ErrConflict)
		counts := map[warp.TicketState]int64{}
		e.read(func(tx warp.Tx) error {
			var err error
			counts, err = tx.CountTickets(e.ctx)
			return err
		})
		if counts[warp.TicketBlocked] != 1 {
			t.Errorf("blocked count %d, want 1", counts[warp.TicketBlocked])
		}
		// Reopen: two more attempts before it blocks again.
		if v, err := e.svc.Reopen(e.ctx, "T-1", "fixed the CI"); err != nil || v.Ticket.State != warp.TicketOpen {
			t.Fatalf("reopen: %v %v", v.Ticket.State, err)
		}
		if v := fail(3); v.Ticket.State != warp.TicketOpen {
			t.Fatalf("first failure after reopen: %s, want open", v.Ticket.State)
		}
		if v := fail(4); v.Ticket.State != warp.TicketBlocked {
			t.Fatalf("second failure after reopen: %s, want blocked", v.Ticket.State)
		}
		// A cancel from blocked works; a lapse counts like a release.
		if v, err := e.svc.Cancel(e.ctx, "T-1", ""); err != nil || v.Ticket.State != warp.TicketCancelled {
			t.Fatalf("cancel of a blocked ticket: %v %v", v.Ticket.State, err)
		}
	})

	t.Run("CapCountsLapses", func(t *testing.T) {
		e := newEnv(t, open, func(c *warp.Config) { c.MaxAttempts = 1 })
		e.createClaim("T-1", "h1")
		e.clock.Advance(Policy().LeaseWindow + time.Minute)
		e.sweep()
		if v := e.view("T-1"); v.Ticket.State != warp.TicketBlocked {
			t.Fatalf("after a lapse under --max-attempts 1: %s, want blocked", v.Ticket.State)
		}
	})

	t.Run("NoCap", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1")
		for epoch := int64(1); epoch <= 5; epoch++ {
			e.claim("T-1", "h1")
			if v, err := e.svc.Release(e.ctx, "T-1", epoch, "x"); err != nil || v.Ticket.State != warp.TicketOpen {
				t.Fatalf("release %d without a cap: %v %v", epoch, v.Ticket.State, err)
			}
		}
	})
}
