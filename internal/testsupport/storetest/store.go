package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// insertHeld inserts ticket id claimed with a held lease of epoch 1 whose
// every time is at, expiring at expires.
func insertHeld(e *env, tx warp.Tx, id string, at, expires time.Time) error {
	if _, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: id, State: warp.TicketClaimed, Epoch: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
		return err
	}
	return tx.InsertLease(e.ctx, warp.Lease{Ticket: id, Epoch: 1, State: warp.LeaseHeld, Host: "h",
		ClaimedAt: at, LastHeartbeatAt: at, LastActivityAt: at, RefreshedAt: at, ExpiresAt: expires})
}

// leaseTickets returns the tickets of ls, in order.
func leaseTickets(ls []warp.Lease) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Ticket)
	}
	return out
}

// utcLease returns l with every time in UTC, as a store hands it back.
func utcLease(l warp.Lease) warp.Lease {
	for _, p := range []*time.Time{&l.ClaimedAt, &l.LastHeartbeatAt, &l.LastActivityAt, &l.FirstV2At,
		&l.RefreshedAt, &l.ExpiresAt, &l.ExitedAt, &l.EndedAt} {
		*p = p.UTC()
	}
	return l
}

func testStore(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("Errors", func(t *testing.T) {
		e := newEnv(t, open)
		now := T0()
		e.update(func(tx warp.Tx) error { return insertHeld(e, tx, "T-1", now, now) })
		err := e.store.Update(e.ctx, func(tx warp.Tx) error {
			_, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: "T-1", State: warp.TicketOpen, CreatedAt: now, UpdatedAt: now})
			return err
		})
		wantErr(t, "create a duplicate ticket", err, warp.ErrConflict)
		err = e.store.Update(e.ctx, func(tx warp.Tx) error {
			return tx.InsertLease(e.ctx, warp.Lease{Ticket: "T-1", Epoch: 1, State: warp.LeaseHeld, ClaimedAt: now, LastHeartbeatAt: now, LastActivityAt: now, RefreshedAt: now, ExpiresAt: now})
		})
		wantErr(t, "insert a duplicate lease", err, warp.ErrConflict)
		e.read(func(tx warp.Tx) error {
			_, err := tx.Ticket(e.ctx, "T-2")
			wantErr(t, "read a missing ticket", err, warp.ErrNotFound)
			_, err = tx.Lease(e.ctx, "T-1", 2)
			wantErr(t, "read a missing lease", err, warp.ErrNotFound)
			_, err = tx.Lease(e.ctx, "T-2", 1)
			wantErr(t, "read a lease of a missing ticket", err, warp.ErrNotFound)
			_, err = tx.Meta(e.ctx, "no-such-key")
			wantErr(t, "read a missing meta key", err, warp.ErrNotFound)
			_, err = tx.NextOpenTicket(e.ctx, nil)
			wantErr(t, "next open ticket with none open", err, warp.ErrNotFound)
			return nil
		})
		err = e.store.Update(e.ctx, func(tx warp.Tx) error {
			return tx.UpdateTicket(e.ctx, warp.Ticket{ID: "T-2", State: warp.TicketOpen, UpdatedAt: now})
		})
		wantErr(t, "update a missing ticket", err, warp.ErrNotFound)
		err = e.store.Update(e.ctx, func(tx warp.Tx) error {
			return tx.UpdateLease(e.ctx, warp.Lease{Ticket: "T-1", Epoch: 9, State: warp.LeaseHeld})
		})
		wantErr(t, "update a missing lease", err, warp.ErrNotFound)
		if err := e.store.Ping(e.ctx); err != nil {
			t.Errorf("ping: %v", err)
		}
	})

	t.Run("RollbackOnError", func(t *testing.T) {
		e := newEnv(t, open)
		boom := errors.New("boom")
		err := e.store.Update(e.ctx, func(tx warp.Tx) error {
			if _, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: "T-1", State: warp.TicketOpen, CreatedAt: T0(), UpdatedAt: T0()}); err != nil {
				return err
			}
			if err := tx.SetMeta(e.ctx, "k", "v"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("update: got %v, want fn's error", err)
		}
		e.read(func(tx warp.Tx) error {
			_, err := tx.Ticket(e.ctx, "T-1")
			wantErr(t, "ticket of a rolled back update", err, warp.ErrNotFound)
			_, err = tx.Meta(e.ctx, "k")
			wantErr(t, "meta of a rolled back update", err, warp.ErrNotFound)
			return nil
		})
		// A failed statement inside fn does not poison what fn returns.
		err = e.store.Update(e.ctx, func(tx warp.Tx) error {
			_, err := tx.Ticket(e.ctx, "T-missing")
			return err
		})
		wantErr(t, "update returning a not-found", err, warp.ErrNotFound)
	})

	t.Run("RoundTrip", func(t *testing.T) {
		e := newEnv(t, open)
		loc := time.FixedZone("UTC+5:30", 5*3600+1800)
		at := func(ns int64) time.Time { return T0().Add(time.Duration(ns)).In(loc) }
		l := warp.Lease{
			Ticket: "T-1", Epoch: 3, Agent: "agent ✓", Host: "host-1", State: warp.LeaseHeld,
			ClaimedAt: at(1), LastHeartbeatAt: at(2), LastActivityAt: at(3), SchemaVersion: 2, InFlight: "Bash",
			FirstV2At: at(4), RefreshedAt: at(5), ExpiresAt: at(6), Exit: warp.ExitWorktreeGone, ExitedAt: at(7),
			HookSeen: warp.HookYes, HookEvents: 7, RecordedVerdict: warp.VerdictStalled,
		}
		e.update(func(tx warp.Tx) error {
			tk, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: "T-1", Title: "it's \"quoted\" ✓", Labels: []string{"a", "b"},
				State: warp.TicketClaimed, Epoch: 3, CreatedAt: at(0), UpdatedAt: at(0)})
			if err != nil {
				return err
			}
			if tk.Seq <= 0 || !slices.Equal(tk.Labels, []string{"a", "b"}) {
				t.Errorf("created: got seq %d labels %q, want seq > 0, labels as given", tk.Seq, tk.Labels)
			}
			return tx.InsertLease(e.ctx, l)
		})
		var got warp.Lease
		var tk warp.Ticket
		e.read(func(tx warp.Tx) error {
			var err error
			if tk, err = tx.Ticket(e.ctx, "T-1"); err != nil {
				return err
			}
			got, err = tx.Lease(e.ctx, "T-1", 3)
			return err
		})
		if tk.Title != "it's \"quoted\" ✓" || !slices.Equal(tk.Labels, []string{"a", "b"}) || tk.Epoch != 3 || tk.State != warp.TicketClaimed {
			t.Errorf("ticket: got %+v", tk)
		}
		wantTime(t, "ticket created_at", tk.CreatedAt, at(0))
		for name, pair := range map[string][2]time.Time{
			"claimed_at": {got.ClaimedAt, l.ClaimedAt}, "last_heartbeat_at": {got.LastHeartbeatAt, l.LastHeartbeatAt},
			"last_activity_at": {got.LastActivityAt, l.LastActivityAt}, "first_v2_at": {got.FirstV2At, l.FirstV2At},
			"refreshed_at": {got.RefreshedAt, l.RefreshedAt}, "expires_at": {got.ExpiresAt, l.ExpiresAt},
			"exited_at": {got.ExitedAt, l.ExitedAt},
		} {
			wantTime(t, name+" (nanosecond precision)", pair[0], pair[1])
			if pair[0].Location() != time.UTC {
				t.Errorf("%s: location %s, want UTC", name, pair[0].Location())
			}
		}
		if !got.EndedAt.IsZero() {
			t.Errorf("ended_at: got %s, want the zero time", got.EndedAt)
		}
		if got != utcLease(l) {
			t.Errorf("lease: got %+v, want %+v", got, utcLease(l))
		}

		l2 := got
		l2.State, l2.EndedAt, l2.EndReason, l2.FallbackExtended, l2.PRURL = warp.LeaseLapsed, at(8), warp.LapseNoHeartbeat, true, "https://x/pr/1"
		l2.InFlight, l2.SchemaVersion = "", 1
		l2.HookSeen, l2.HookEvents, l2.RecordedVerdict = warp.HookNo, 9, warp.VerdictSilent
		e.update(func(tx warp.Tx) error { return tx.UpdateLease(e.ctx, l2) })
		e.read(func(tx warp.Tx) error {
			var err error
			got, err = tx.Lease(e.ctx, "T-1", 3)
			return err
		})
		if got != utcLease(l2) {
			t.Errorf("updated lease: got %+v, want %+v", got, utcLease(l2))
		}

		data := warp.VerdictChangedData{From: warp.VerdictActive, To: warp.VerdictStalled, Since: at(8).UTC(), Agent: "A", Host: "h1"}
		// A kind this build does not know (a newer warp's, in a shared
		// database) keeps its fields as written.
		other := warp.OtherData{Kind: "from-the-future", Fields: map[string]any{"s": "text", "n": 42.5, "b": true}}
		var id int64
		e.update(func(tx warp.Tx) error {
			var err error
			if id, err = tx.AppendEvent(e.ctx, warp.NewEvent("T-1", 3, at(9), data)); err != nil {
				return err
			}
			_, err = tx.AppendEvent(e.ctx, warp.NewEvent("T-1", 3, at(10), other))
			return err
		})
		var evs []warp.Event
		e.read(func(tx warp.Tx) error {
			var err error
			evs, err = tx.Events(e.ctx, "T-1", id-1, 10)
			return err
		})
		if len(evs) != 2 || evs[0].ID != id || evs[0].Epoch != 3 || evs[0].Kind != warp.EventVerdictChanged || evs[1].Kind != other.Kind {
			t.Fatalf("events: got %+v, want the two appended", evs)
		}
		wantTime(t, "event at", evs[0].At, at(9))
		if got, ok := evs[0].Data.(warp.VerdictChangedData); !ok || got.From != data.From || got.To != data.To || !got.Since.Equal(data.Since) || got.Agent != "A" || got.Host != "h1" {
			t.Errorf("event data: got %#v, want %#v", evs[0].Data, data)
		}
		if got, ok := evs[1].Data.(warp.OtherData); !ok || !maps.Equal(got.Fields, other.Fields) {
			t.Errorf("unknown kind's data: got %#v, want %#v", evs[1].Data, other)
		}
		// A detail of another kind's type is a bug the store refuses.
		e.update(func(tx warp.Tx) error {
			bad := warp.NewEvent("T-1", 3, at(11), data)
			bad.Kind = warp.EventLapsed
			if _, err := tx.AppendEvent(e.ctx, bad); err == nil || !strings.Contains(err.Error(), "of kind verdict-changed") {
				t.Errorf("append a lapsed event with a verdict's detail: got %v, want refused", err)
			}
			return nil
		})

		e.update(func(tx warp.Tx) error {
			if err := tx.SetMeta(e.ctx, "k", "one"); err != nil {
				return err
			}
			return tx.SetMeta(e.ctx, "k", "two")
		})
		e.read(func(tx warp.Tx) error {
			v, err := tx.Meta(e.ctx, "k")
			if err != nil || v != "two" {
				t.Errorf("meta k: got %q, %v, want two", v, err)
			}
			return nil
		})
	})

	t.Run("DueAndHeldLeases", func(t *testing.T) {
		e := newEnv(t, open)
		now := T0().Add(time.Hour)
		// Expiries 5, 1, 3, 2, 4 minutes before now; one in the future; one ended.
		offsets := map[string]int{"e": 5, "a": 1, "c": 3, "b": 2, "d": 4}
		e.update(func(tx warp.Tx) error {
			for id, m := range offsets {
				refreshed := T0().Add(time.Duration(m) * time.Minute)
				if err := insertHeld(e, tx, id, refreshed, now.Add(-time.Duration(m)*time.Minute)); err != nil {
					return err
				}
			}
			if err := insertHeld(e, tx, "future", T0(), now.Add(time.Nanosecond)); err != nil {
				return err
			}
			if err := insertHeld(e, tx, "ended", T0(), T0()); err != nil {
				return err
			}
			l, err := tx.Lease(e.ctx, "ended", 1)
			if err != nil {
				return err
			}
			l.State = warp.LeaseReleased
			return tx.UpdateLease(e.ctx, l)
		})
		e.update(func(tx warp.Tx) error {
			due, err := tx.DueLeases(e.ctx, warp.DueFilter{Now: now}, 3)
			if err != nil {
				return err
			}
			if got, want := leaseTickets(due), []string{"e", "d", "c"}; !slices.Equal(got, want) {
				t.Errorf("due, limit 3: got %v, want %v (expires_at order)", got, want)
			}
			due, err = tx.DueLeases(e.ctx, warp.DueFilter{Now: now}, 100)
			if err != nil {
				return err
			}
			if got, want := leaseTickets(due), []string{"e", "d", "c", "b", "a"}; !slices.Equal(got, want) {
				t.Errorf("due: got %v, want %v", got, want)
			}
			// Graces: a lease refreshed before a grace's From and due after
			// its DueBefore (any, when zero) is protected while it lasts.
			for _, tc := range []struct {
				name    string
				protect []warp.Protection
				want    []string
			}{
				{"a grace from T0+3m", []warp.Protection{{RefreshedBefore: T0().Add(3 * time.Minute)}}, []string{"e", "d", "c"}},
				{"a grace from T0+3m of what was not due at now-1.5m",
					[]warp.Protection{{RefreshedBefore: T0().Add(3 * time.Minute), ExpiresAfter: now.Add(-90 * time.Second)}}, []string{"e", "d", "c", "b"}},
				{"two graces", []warp.Protection{
					{RefreshedBefore: T0().Add(3 * time.Minute), ExpiresAfter: now.Add(-90 * time.Second)},
					{RefreshedBefore: T0().Add(5 * time.Minute), ExpiresAfter: now.Add(-270 * time.Second)}}, []string{"e"}},
			} {
				due, err = tx.DueLeases(e.ctx, warp.DueFilter{Now: now, Protect: tc.protect}, 100)
				if err != nil {
					return err
				}
				if got := leaseTickets(due); !slices.Equal(got, tc.want) {
					t.Errorf("due under %s: got %v, want %v", tc.name, got, tc.want)
				}
				for _, l := range due { // the store agrees with the rule
					if !(warp.DueFilter{Now: now, Protect: tc.protect}).Match(l) {
						t.Errorf("due under %s: %s returned, but the rule does not select it", tc.name, l.Ticket)
					}
				}
			}
			due, err = tx.DueLeases(e.ctx, warp.DueFilter{Now: now.Add(time.Nanosecond)}, 100)
			if err != nil {
				return err
			}
			if len(due) != 6 || due[5].Ticket != "future" {
				t.Errorf("due 1ns later: got %v, want the five and future", leaseTickets(due))
			}

			held, err := tx.HeldLeases(e.ctx, "", "", 4)
			if err != nil {
				return err
			}
			if got, want := leaseTickets(held), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
				t.Errorf("held, first 4: got %v, want %v (ticket order)", got, want)
			}
			held, err = tx.HeldLeases(e.ctx, "", "d", 4)
			if err != nil {
				return err
			}
			if got, want := leaseTickets(held), []string{"e", "future"}; !slices.Equal(got, want) {
				t.Errorf("held after d: got %v, want %v (no ended lease)", got, want)
			}
			n, err := tx.CountHeld(e.ctx, warp.VerdictBounds{})
			if err != nil {
				return err
			}
			if n != 6 {
				t.Errorf("count held: got %d, want 6", n)
			}
			n, err = tx.CountHeld(e.ctx, warp.VerdictBounds{HeartbeatBefore: T0().Add(3 * time.Minute)})
			if err != nil {
				return err
			}
			// a (T0+1m), b (T0+2m) and future (T0); c is at T0+3m, not before.
			if n != 3 {
				t.Errorf("count held with heartbeat before T0+3m: got %d, want 3", n)
			}
			return nil
		})
	})

	t.Run("VerdictDueAndHosts", func(t *testing.T) {
		e := newEnv(t, open)
		now := T0().Add(time.Hour)
		e.update(func(tx warp.Tx) error {
			for i, c := range []struct {
				id, host string
				due      time.Time
				state    warp.LeaseState
			}{
				{"a", "h1", now.Add(-time.Minute), warp.LeaseHeld},
				{"b", "h2", now, warp.LeaseHeld},
				{"c", "h1", now.Add(time.Nanosecond), warp.LeaseHeld},
				{"d", "h1", time.Time{}, warp.LeaseHeld},               // never due
				{"e", "h3", now.Add(-time.Hour), warp.LeaseReleased},   // ended: not held
				{"f", "h2", now.Add(-2 * time.Minute), warp.LeaseHeld}, // earliest
			} {
				if _, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: c.id, State: warp.TicketClaimed, Epoch: 1, CreatedAt: T0(), UpdatedAt: T0()}); err != nil {
					return err
				}
				l := warp.Lease{Ticket: c.id, Epoch: 1, State: c.state, Host: c.host, ClaimedAt: T0(), LastHeartbeatAt: T0(),
					LastActivityAt: T0(), RefreshedAt: T0(), ExpiresAt: T0().Add(time.Duration(i+2) * time.Hour), VerdictDueAt: c.due}
				if c.state != warp.LeaseHeld {
					l.EndedAt = now.Add(-time.Duration(i) * time.Second)
				}
				if err := tx.InsertLease(e.ctx, l); err != nil {
					return err
				}
			}
			due, err := tx.VerdictDueLeases(e.ctx, now, 100)
			if err != nil {
				return err
			}
			if got, want := leaseTickets(due), []string{"f", "a", "b"}; !slices.Equal(got, want) {
				t.Errorf("verdict-due: got %v, want %v (due order, held, set, not after now)", got, want)
			}
			if len(due) > 0 && !due[0].VerdictDueAt.Equal(now.Add(-2*time.Minute)) {
				t.Errorf("verdict due read back as %v, want %v", due[0].VerdictDueAt, now.Add(-2*time.Minute))
			}
			due, err = tx.VerdictDueLeases(e.ctx, now, 1)
			if err != nil {
				return err
			}
			if got := leaseTickets(due); !slices.Equal(got, []string{"f"}) {
				t.Errorf("verdict-due, limit 1: got %v, want [f]", got)
			}
			held, err := tx.HeldLeases(e.ctx, "h1", "", 100)
			if err != nil {
				return err
			}
			if got, want := leaseTickets(held), []string{"a", "c", "d"}; !slices.Equal(got, want) {
				t.Errorf("held leases of h1: got %v, want %v", got, want)
			}
			held, err = tx.HeldLeases(e.ctx, "h1", "a", 1)
			if err != nil {
				return err
			}
			if got := leaseTickets(held); !slices.Equal(got, []string{"c"}) {
				t.Errorf("held leases of h1 after a, limit 1: got %v, want [c]", got)
			}
			hosts, err := tx.EndedHosts(e.ctx, now.Add(-time.Hour))
			if err != nil {
				return err
			}
			if !slices.Equal(hosts, []string{"h3"}) {
				t.Errorf("hosts of leases ended in the last hour: got %v, want [h3]", hosts)
			}
			hosts, err = tx.EndedHosts(e.ctx, now)
			if err != nil {
				return err
			}
			if len(hosts) != 0 {
				t.Errorf("hosts of leases ended since now: got %v, want none", hosts)
			}
			return nil
		})
	})

	t.Run("NextOpenTicketLabels", func(t *testing.T) {
		e := newEnv(t, open)
		e.update(func(tx warp.Tx) error {
			for i, labels := range [][]string{{"x"}, {"x", "y"}, {"y"}, nil} {
				if _, err := tx.CreateTicket(e.ctx, warp.Ticket{ID: fmt.Sprintf("T-%d", i), Labels: labels, State: warp.TicketOpen, CreatedAt: T0(), UpdatedAt: T0()}); err != nil {
					return err
				}
			}
			for _, tc := range []struct {
				labels []string
				want   string
			}{{nil, "T-0"}, {[]string{"y"}, "T-1"}, {[]string{"y", "x"}, "T-1"}, {[]string{"z"}, ""}, {[]string{"x", "z"}, ""}} {
				tk, err := tx.NextOpenTicket(e.ctx, tc.labels)
				if tc.want == "" {
					wantErr(t, fmt.Sprintf("next open with %v", tc.labels), err, warp.ErrNotFound)
					continue
				}
				if err != nil || tk.ID != tc.want {
					t.Errorf("next open with %v: got %s, %v, want %s", tc.labels, tk.ID, err, tc.want)
				}
			}
			return nil
		})
	})
}
