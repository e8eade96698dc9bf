package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// before0010 takes a database back to the schema before migration 0010:
// the tickets table whose CHECK knows no 'cancelled' (built again, as
// 0001 made it, with foreign keys off: SQLite's default for a raw
// connection), and sessions without a name.
var before0010 = []string{
	`CREATE TABLE tickets_old (
		seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL CHECK (state IN ('open', 'claimed', 'completed')), epoch INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
	`INSERT INTO tickets_old SELECT seq, id, title, state, epoch, created_at, updated_at FROM tickets`,
	`INSERT INTO sqlite_sequence (name, seq) SELECT 'tickets_old', seq FROM sqlite_sequence WHERE name = 'tickets'`,
	`DROP TABLE tickets`,
	`ALTER TABLE tickets_old RENAME TO tickets`,
	`CREATE INDEX tickets_state_seq ON tickets (state, seq)`,
	`ALTER TABLE sessions DROP COLUMN name`,
	`DELETE FROM schema_migrations WHERE version = 10`,
}

// Migration 0010 builds the tickets table again for the state cancelled:
// every ticket, its labels, leases and events survive it (the drop of the
// old table must not cascade to the rows that refer to it), seq keeps its
// order and its counter, and foreign keys hold again after it.
func TestMigration0010KeepsTickets(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	clk := storetest.NewClock(storetest.T0())
	open := func() (*sqlite.DB, *warp.Service) {
		t.Helper()
		db := mustOpenPath(t, path)
		svc, err := warp.NewService(db, warp.Config{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Init(ctx); err != nil {
			t.Fatal(err)
		}
		return db, svc
	}
	db, svc := open()
	for i, id := range []string{"M-1", "M-2", "M-3"} {
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id, Title: "t " + id, Labels: []string{"go", []string{"a", "b", "c"}[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Claim(ctx, "M-2", warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Claim(ctx, "M-3", warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Complete(ctx, "M-3", 0, "https://pr"); err != nil {
		t.Fatal(err)
	}
	before, err := svc.ListTickets(ctx, warp.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := svc.Events(ctx, "M-3", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	db.Close()

	rawExec(t, path, before0010...)
	db, svc = open()
	defer svc.Close()
	after, err := svc.ListTickets(ctx, warp.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Tickets) != len(before.Tickets) {
		t.Fatalf("%d tickets after the migration, %d before", len(after.Tickets), len(before.Tickets))
	}
	for i := range after.Tickets {
		a, b := after.Tickets[i], before.Tickets[i]
		if a.Ticket.ID != b.Ticket.ID || a.Ticket.Seq != b.Ticket.Seq || a.Ticket.State != b.Ticket.State || !slices.Equal(a.Ticket.Labels, b.Ticket.Labels) ||
			(a.Lease == nil) != (b.Lease == nil) || a.Lease != nil && (a.Lease.State != b.Lease.State || a.Lease.Epoch != b.Lease.Epoch) {
			t.Errorf("ticket %d: %+v after the migration, %+v before", i, a, b)
		}
	}
	if got, err := svc.Events(ctx, "M-3", 0, 100); err != nil || len(got) != len(evs) {
		t.Errorf("events of M-3: %d after, %d before (%v)", len(got), len(evs), err)
	}
	// The new state is allowed; a new ticket comes after the old ones.
	if v, err := svc.Cancel(ctx, "M-2", "no longer needed"); err != nil || v.Ticket.State != warp.TicketCancelled {
		t.Fatalf("cancel after the migration: %+v, %v", v, err)
	}
	nt, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "M-4"})
	if err != nil || nt.Seq <= before.Tickets[len(before.Tickets)-1].Ticket.Seq {
		t.Errorf("a new ticket's seq %d, after %d: %v", nt.Seq, before.Tickets[len(before.Tickets)-1].Ticket.Seq, err)
	}
	// Foreign keys are enforced again.
	err = db.Update(ctx, func(tx warp.Tx) error {
		return tx.InsertLease(ctx, warp.Lease{Ticket: "NO-SUCH", Epoch: 1, State: warp.LeaseHeld, ClaimedAt: clk.Now()})
	})
	if err == nil {
		t.Errorf("a lease of a missing ticket was inserted after the migration: %v", err)
	}
}
