package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func testTickets(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("CreateGivenID", func(t *testing.T) {
		e := newEnv(t, open)
		tk, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: "T-1", Title: "fix the loop", Labels: []string{"go", " db ", "go", ""}})
		if err != nil {
			t.Fatal(err)
		}
		if tk.ID != "T-1" || tk.Title != "fix the loop" || tk.State != warp.TicketOpen || tk.Epoch != 0 || tk.Seq <= 0 {
			t.Errorf("created: got %+v, want T-1, the title, open, epoch 0, seq > 0", tk)
		}
		if want := []string{"db", "go"}; !slices.Equal(tk.Labels, want) {
			t.Errorf("labels: got %q, want %q (trimmed, deduplicated, sorted)", tk.Labels, want)
		}
		wantTime(t, "created_at", tk.CreatedAt, T0())
		got := e.view("T-1")
		if got.Ticket.ID != "T-1" || got.Ticket.Seq != tk.Seq || got.Ticket.Title != tk.Title || !slices.Equal(got.Ticket.Labels, tk.Labels) ||
			got.Ticket.State != warp.TicketOpen || got.Lease != nil || got.Verdict != warp.VerdictNone {
			t.Errorf("read back: got %+v, want %+v with no lease and no verdict", got, tk)
		}
		wantTime(t, "created_at read back", got.Ticket.CreatedAt, T0())
		if got.Ticket.CreatedAt.Location() != time.UTC {
			t.Errorf("created_at location: got %s, want UTC", got.Ticket.CreatedAt.Location())
		}
		if k := e.kinds("T-1"); !slices.Equal(k, []warp.EventKind{warp.EventCreated}) {
			t.Errorf("events: got %v, want [created]", k)
		}
	})

	t.Run("CreateDuplicate", func(t *testing.T) {
		e := newEnv(t, open)
		first := e.create("T-1", "a")
		_, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: "T-1", Title: "again", Labels: []string{"b"}})
		wantErr(t, "second create of T-1", err, warp.ErrConflict)
		got := e.view("T-1")
		if got.Ticket.Title != first.Title || !slices.Equal(got.Ticket.Labels, []string{"a"}) {
			t.Errorf("after duplicate create: got %+v, want the first ticket unchanged", got.Ticket)
		}
		if k := e.kinds("T-1"); len(k) != 1 {
			t.Errorf("events after duplicate create: got %v, want one created event", k)
		}
	})

	t.Run("IDRules", func(t *testing.T) {
		e := newEnv(t, open)
		long := strings.Repeat("a", 64)
		for _, id := range []string{"a", "7", "A.b_c-1", "T-1.2", long} {
			if _, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: id}); err != nil {
				t.Errorf("create valid id %q: %v", id, err)
			}
		}
		for _, id := range []string{"-a", ".a", "_a", "a b", "a/b", "ä", long + "a", "a\n", "a;DROP TABLE tickets"} {
			_, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: id})
			wantErr(t, "create invalid id "+id, err, warp.ErrInvalid)
			_, err = e.svc.Ticket(e.ctx, id)
			wantErr(t, "read invalid id "+id, err, warp.ErrInvalid)
		}
		for _, nt := range []warp.NewTicket{
			{ID: "T-x", Title: strings.Repeat("t", warp.MaxTitleLen+1)},
			{ID: "T-x", Labels: []string{"bad label"}},
			{ID: "T-x", Labels: make([]string, warp.MaxLabels+1)},
		} {
			_, err := e.svc.CreateTicket(e.ctx, nt)
			wantErr(t, "create with a bad title or labels", err, warp.ErrInvalid)
		}
		var counts map[warp.TicketState]int64
		e.read(func(tx warp.Tx) error {
			var err error
			counts, err = tx.CountTickets(e.ctx)
			return err
		})
		if counts[warp.TicketOpen] != 5 {
			t.Errorf("open tickets: got %d, want 5 (only the valid ones)", counts[warp.TicketOpen])
		}
		_, err := e.svc.Ticket(e.ctx, "T-missing")
		wantErr(t, "read unknown ticket", err, warp.ErrNotFound)
	})

	t.Run("GeneratedIDs", func(t *testing.T) {
		e := newEnv(t, open)
		seen := map[string]bool{}
		var lastSeq int64
		for i := range 50 {
			tk, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{Title: "no id"})
			if err != nil {
				t.Fatalf("create %d without id: %v", i, err)
			}
			if !warp.ValidTicketID(tk.ID) {
				t.Errorf("generated id %q breaks the id rule", tk.ID)
			}
			if seen[tk.ID] {
				t.Errorf("generated id %q twice", tk.ID)
			}
			seen[tk.ID] = true
			if tk.Seq <= lastSeq {
				t.Errorf("seq of ticket %d: got %d, want > %d", i, tk.Seq, lastSeq)
			}
			lastSeq = tk.Seq
			if _, err := e.svc.Ticket(e.ctx, tk.ID); err != nil {
				t.Errorf("read generated %s: %v", tk.ID, err)
			}
		}
	})
}

func testClaims(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("ClaimFields", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1")
		e.clock.Advance(time.Minute)
		now := e.clock.Now()
		v, err := e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: "O", Host: "h1"})
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != warp.TicketClaimed || v.Ticket.Epoch != 1 || v.Verdict != warp.VerdictActive {
			t.Errorf("claim answer: got ticket %+v verdict %q, want claimed, epoch 1, active", v.Ticket, v.Verdict)
		}
		for _, l := range []warp.Lease{*v.Lease, e.lease("T-1")} {
			if l.Ticket != "T-1" || l.Epoch != 1 || l.Agent != "O" || l.Host != "h1" || l.State != warp.LeaseHeld || l.SchemaVersion != 0 {
				t.Errorf("lease: got %+v, want T-1/1 by O on h1, held, schema 0", l)
			}
			wantTime(t, "claimed_at", l.ClaimedAt, now)
			wantTime(t, "last_heartbeat_at (a claim counts as a heartbeat)", l.LastHeartbeatAt, now)
			wantTime(t, "last_activity_at (a claim counts as activity)", l.LastActivityAt, now)
			wantTime(t, "refreshed_at", l.RefreshedAt, now)
			wantTime(t, "expires_at", l.ExpiresAt, now.Add(30*time.Minute))
			if !l.FirstV2At.IsZero() || !l.ExitedAt.IsZero() || !l.EndedAt.IsZero() || l.Exit != "" || l.EndReason != "" || l.FallbackExtended || l.PRURL != "" {
				t.Errorf("lease: got %+v, want the end fields empty", l)
			}
		}
		ev := e.lastEvent("T-1", warp.EventClaimed)
		if ev.Epoch != 1 || ev.Data != (warp.ClaimedData{Agent: "O", Host: "h1"}) {
			t.Errorf("claimed event: got %+v, want epoch 1, agent O, host h1", ev)
		}
		wantTime(t, "claimed event time", ev.At, now)
	})

	t.Run("ConflictAndNotFound", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		_, err := e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: "other", Host: "h2"})
		wantErr(t, "claim of a claimed ticket", err, warp.ErrConflict)
		if l := e.lease("T-1"); l.Agent != "agent-h1" || l.Epoch != 1 {
			t.Errorf("after refused claim: got %+v, want the first holder's lease", l)
		}
		_, err = e.svc.Claim(e.ctx, "T-missing", warp.ClaimRequest{})
		wantErr(t, "claim of an unknown ticket", err, warp.ErrNotFound)
		_, err = e.svc.Claim(e.ctx, "bad id", warp.ClaimRequest{})
		wantErr(t, "claim of a bad id", err, warp.ErrInvalid)
		_, err = e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: strings.Repeat("a", warp.MaxIdentLen+1)})
		wantErr(t, "claim with an oversized agent", err, warp.ErrInvalid)
	})

	t.Run("ReleaseReclaimComplete", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(time.Minute)
		v, err := e.svc.Release(e.ctx, "T-1", 1, "done for today")
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != warp.TicketOpen || v.Lease == nil || v.Lease.State != warp.LeaseReleased || v.Lease.EndReason != "done for today" {
			t.Errorf("release answer: got %+v %+v, want ticket open, lease released with the reason", v.Ticket, v.Lease)
		}
		l := e.lease("T-1")
		if l.State != warp.LeaseReleased || l.EndReason != "done for today" {
			t.Errorf("released lease: got %+v", l)
		}
		wantTime(t, "ended_at", l.EndedAt, e.clock.Now())
		if ev := e.lastEvent("T-1", warp.EventReleased); ev.Epoch != 1 || ev.Data.(warp.ReleasedData).Reason != "done for today" {
			t.Errorf("released event: got %+v", ev)
		}

		_, err = e.svc.Release(e.ctx, "T-1", 1, "")
		wantErr(t, "second release", err, warp.ErrLeaseEnded)
		_, err = e.svc.Complete(e.ctx, "T-1", 1, "")
		wantErr(t, "complete after release", err, warp.ErrLeaseEnded)
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1})
		wantErr(t, "v2 heartbeat after release", err, warp.ErrLeaseEnded)
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"})
		wantErr(t, "v1 heartbeat after release", err, warp.ErrLeaseEnded)

		l2 := e.claim("T-1", "h2")
		if l2.Epoch != 2 {
			t.Fatalf("re-claim epoch: got %d, want 2", l2.Epoch)
		}
		_, err = e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1})
		wantErr(t, "v2 heartbeat with the previous epoch", err, warp.ErrStaleEpoch)
		_, err = e.svc.Release(e.ctx, "T-1", 1, "")
		wantErr(t, "release with the previous epoch", err, warp.ErrStaleEpoch)
		_, err = e.svc.Complete(e.ctx, "T-1", 1, "")
		wantErr(t, "complete with the previous epoch", err, warp.ErrStaleEpoch)
		if l := e.lease("T-1"); l.Epoch != 2 || l.State != warp.LeaseHeld {
			t.Errorf("after stale writes: got %+v, want epoch 2 held", l)
		}

		v, err = e.svc.Complete(e.ctx, "T-1", 2, "https://example.com/pr/1")
		if err != nil {
			t.Fatal(err)
		}
		if v.Ticket.State != warp.TicketCompleted || v.Lease.State != warp.LeaseCompleted || v.Lease.PRURL != "https://example.com/pr/1" {
			t.Errorf("complete answer: got %+v %+v", v.Ticket, v.Lease)
		}
		if ev := e.lastEvent("T-1", warp.EventCompleted); ev.Epoch != 2 || ev.Data.(warp.CompletedData).PRURL != "https://example.com/pr/1" {
			t.Errorf("completed event: got %+v", ev)
		}
		_, err = e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{})
		wantErr(t, "claim of a completed ticket", err, warp.ErrConflict)
		for what, err := range map[string]error{
			"v2 heartbeat after completion": func() error {
				_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 2})
				return err
			}(),
			"v1 heartbeat after completion": func() error {
				_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"})
				return err
			}(),
			"release after completion":  func() error { _, err := e.svc.Release(e.ctx, "T-1", 2, ""); return err }(),
			"complete after completion": func() error { _, err := e.svc.Complete(e.ctx, "T-1", 2, ""); return err }(),
		} {
			wantErr(t, what, err, warp.ErrLeaseEnded)
		}
		if got := e.view("T-1"); got.Ticket.State != warp.TicketCompleted || got.Lease.State != warp.LeaseCompleted {
			t.Errorf("after late writes: got %+v %+v, want completed", got.Ticket, got.Lease)
		}
	})

	t.Run("OperatorReleaseEpochZero", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		if _, err := e.svc.Release(e.ctx, "T-1", 0, "operator"); err != nil {
			t.Fatalf("release of the current lease: %v", err)
		}
		if l := e.lease("T-1"); l.State != warp.LeaseReleased {
			t.Errorf("lease: got %s, want released", l.State)
		}
		e.create("T-2")
		_, err := e.svc.Release(e.ctx, "T-2", 0, "")
		wantErr(t, "release of a never claimed ticket", err, warp.ErrLeaseEnded)
		_, err = e.svc.Release(e.ctx, "T-missing", 0, "")
		wantErr(t, "release of an unknown ticket", err, warp.ErrNotFound)
		_, err = e.svc.Release(e.ctx, "T-1", -1, "")
		wantErr(t, "release with a negative epoch", err, warp.ErrInvalid)
	})

	t.Run("EpochsIncrease", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("T-1")
		e.create("T-2")
		for want := int64(1); want <= 5; want++ {
			l := e.claim("T-1", "h1")
			if l.Epoch != want {
				t.Fatalf("claim %d: got epoch %d, want %d", want, l.Epoch, want)
			}
			if _, err := e.svc.Release(e.ctx, "T-1", l.Epoch, ""); err != nil {
				t.Fatal(err)
			}
		}
		// A lapse ends a lease too; the next claim still takes the next epoch.
		e.claim("T-1", "h1")
		e.clock.Advance(31 * time.Minute)
		if got := e.sweptTickets(); !slices.Equal(got, []string{"T-1"}) {
			t.Fatalf("sweep: got %v, want [T-1]", got)
		}
		if l := e.claim("T-1", "h1"); l.Epoch != 7 {
			t.Errorf("claim after lapse: got epoch %d, want 7", l.Epoch)
		}
		// Epochs are per ticket.
		if l := e.claim("T-2", "h1"); l.Epoch != 1 {
			t.Errorf("first claim of T-2: got epoch %d, want 1", l.Epoch)
		}
		// Every past lease is kept.
		e.read(func(tx warp.Tx) error {
			for ep := int64(1); ep <= 7; ep++ {
				if _, err := tx.Lease(e.ctx, "T-1", ep); err != nil {
					t.Errorf("lease T-1/%d: %v", ep, err)
				}
			}
			return nil
		})
	})

	t.Run("ClaimNext", func(t *testing.T) {
		e := newEnv(t, open)
		e.create("A", "go")
		e.create("B", "db", "go")
		e.create("C", "db")
		e.create("D")
		e.create("E", "db", "go", "ui")
		next := func(labels ...string) string {
			t.Helper()
			v, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Agent: "x", Host: "h", Labels: labels})
			if err != nil {
				t.Fatalf("claim-next %v: %v", labels, err)
			}
			if v.Ticket.State != warp.TicketClaimed || v.Lease == nil || v.Lease.Ticket != v.Ticket.ID {
				t.Fatalf("claim-next %v: got %+v, want a claimed ticket with its lease", labels, v)
			}
			return v.Ticket.ID
		}
		none := func(labels ...string) {
			t.Helper()
			_, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Labels: labels})
			wantErr(t, "claim-next with none left", err, warp.ErrNoOpenTicket)
		}
		if got := next("go", "db"); got != "B" {
			t.Errorf("claim-next go,db: got %s, want B (oldest carrying both)", got)
		}
		if got := next(" go ", "go"); got != "A" {
			t.Errorf("claim-next go: got %s, want A", got)
		}
		if got := next("db", "go"); got != "E" {
			t.Errorf("claim-next db,go: got %s, want E", got)
		}
		none("go")
		none("ui", "nope")
		if got := next(); got != "C" {
			t.Errorf("claim-next without labels: got %s, want C (oldest open)", got)
		}
		none("db")
		if _, err := e.svc.Release(e.ctx, "A", 0, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Complete(e.ctx, "B", 0, ""); err != nil {
			t.Fatal(err)
		}
		if got := next("go"); got != "A" {
			t.Errorf("claim-next go after A's release: got %s, want A", got)
		}
		if l := e.lease("A"); l.Epoch != 2 {
			t.Errorf("A's epoch: got %d, want 2", l.Epoch)
		}
		if got := next(); got != "D" {
			t.Errorf("claim-next: got %s, want D", got)
		}
		none()
		_, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Labels: []string{"bad label"}})
		wantErr(t, "claim-next with a bad label", err, warp.ErrInvalid)
	})
}
