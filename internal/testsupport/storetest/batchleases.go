package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testBatchLeases checks Tx.ReadBatch and Tx.WriteBatch:
// the batch read answers what CurrentLease answers, ticket by ticket, and
// the batch write writes what UpdateLease would for a heartbeat.
func testBatchLeases(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	// More leases than one multi-row statement of a store may write, and a
	// remainder of every smaller size (SQLite: 32 + 16 + 8 + 4 + 2 + 1).
	const n = 63
	var held []string
	for i := range n {
		id := fmt.Sprintf("T-%d", i+1)
		e.createClaim(id, fmt.Sprintf("h%d", i%3))
		held = append(held, id)
	}
	e.create("T-U") // never claimed: no current lease
	ids := append(slices.Clone(held), "T-U", "T-Z")
	slices.Sort(ids)
	if err := e.store.Update(e.ctx, func(tx warp.Tx) error { return tx.SetMeta(e.ctx, "storetest-batch", "v1") }); err != nil {
		t.Fatal(err)
	}
	// A count written with the leases (one call), and one of a call that
	// fails, which must leave nothing.
	at := e.clock.Now()
	withLeases := []warp.HeartbeatCount{{Host: "with-leases", Token: "tok-w", SchemaVersion: 2, At: at, N: 3}}
	var changed []warp.Lease
	err := e.store.Update(e.ctx, func(tx warp.Tx) error {
		cur, meta, found, err := tx.ReadBatch(e.ctx, ids, "storetest-batch")
		if err != nil {
			return err
		}
		if len(cur) != n {
			t.Errorf("ReadBatch(%v): %d entries, want the %d held", ids, len(cur), n)
		}
		if meta != "v1" || !found {
			t.Errorf("ReadBatch meta: %q %v, want v1 found", meta, found)
		}
		if _, meta, found, err := tx.ReadBatch(e.ctx, ids[:1], "storetest-unset"); err != nil || meta != "" || found {
			t.Errorf("ReadBatch of an unset meta key: %q %v %v, want not found", meta, found, err)
		}
		for _, id := range held {
			tk, l, err := tx.CurrentLease(e.ctx, id)
			if err != nil {
				return err
			}
			got, ok := cur[id]
			if !ok || got.Lease == nil || *got.Lease != l || got.Ticket.ID != tk.ID || got.Ticket.Epoch != tk.Epoch ||
				got.Ticket.State != tk.State || !got.Ticket.UpdatedAt.Equal(tk.UpdatedAt) {
				t.Errorf("%s: batch read %+v, CurrentLease %+v %+v", id, got, tk, l)
			}
			next := l
			next.LastHeartbeatAt = l.LastHeartbeatAt.Add(time.Minute)
			next.LastActivityAt = l.LastActivityAt.Add(30 * time.Second)
			next.RefreshedAt, next.FirstV2At = next.LastHeartbeatAt, next.LastHeartbeatAt
			next.ExpiresAt = l.ExpiresAt.Add(time.Minute)
			next.VerdictDueAt = l.ExpiresAt.Add(-time.Minute)
			next.SchemaVersion, next.InFlight, next.HookEvents = 2, "Bash", 7
			next.FallbackExtended, next.HookSeen, next.RecordedVerdict = true, warp.HookYes, warp.VerdictStalled
			next.LastProgressAt = l.ClaimedAt.Add(10 * time.Second)
			next.Loop = warp.Loop{Label: "Bash: npm test " + id, Count: 4, Error: "exit 1"}
			changed = append(changed, next)
		}
		if err := tx.WriteBatch(e.ctx, changed, withLeases); err != nil {
			return err
		}
		// A read after it, in the same transaction, sees what it wrote
		// (a store may hold writes back to send them with the commit).
		for _, want := range changed {
			if _, got, err := tx.CurrentLease(e.ctx, want.Ticket); err != nil || got != want {
				t.Errorf("read after WriteBatch in its transaction: %+v %v\nwant %+v", got, err, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range changed {
		got := e.lease(want.Ticket)
		if got != want {
			t.Errorf("after WriteBatch: %+v\nwant %+v", got, want)
		}
	}
	// A lease that is not there fails the call, and the transaction with
	// it: the last one, after statements that wrote the others.
	again := slices.Clone(changed)
	for i := range again {
		again[i].HookEvents = 8
	}
	again[len(again)-1].Epoch = 99
	before := e.lease("T-2")
	err = e.store.Update(e.ctx, func(tx warp.Tx) error {
		return tx.WriteBatch(e.ctx, again, []warp.HeartbeatCount{{Host: "ghost", Token: "tok-g", SchemaVersion: 2, At: at, N: 1}})
	})
	if !errors.Is(err, warp.ErrNotFound) {
		t.Errorf("WriteBatch with a missing lease: %v, want ErrNotFound", err)
	}
	if got := e.lease("T-2"); got != before {
		t.Errorf("a failed WriteBatch wrote: %+v, want %+v", got, before)
	}

	// WriteBatch's counts are what RecordHeartbeat writes count by count:
	// the same counts under other host names, each way, read back alike —
	// a host with several schema versions and tokens, and enough hosts for
	// a store's multi-row statements.
	batch := func(prefix string) []warp.HeartbeatCount {
		cs := []warp.HeartbeatCount{{Host: prefix + "a", Token: "tok-1", SchemaVersion: 1, At: at, N: 2},
			{Host: prefix + "a", Token: "tok-1", SchemaVersion: 2, At: at, N: 3}, {Host: prefix + "a", Token: "tok-2", SchemaVersion: 2, At: at, N: 1},
			{Host: prefix + "b", Token: "tok-2", SchemaVersion: 1, At: at, N: 5}}
		for i := range 45 {
			cs = append(cs, warp.HeartbeatCount{Host: fmt.Sprintf("%sh%02d", prefix, i), Token: "tok-3", SchemaVersion: 1 + i%2, At: at, N: int64(i + 1)})
		}
		return cs
	}
	// Some hosts have their row already (seen a minute ago, v1).
	err = e.store.Update(e.ctx, func(tx warp.Tx) error {
		for _, prefix := range []string{"bulk-", "one-"} {
			for i := range 20 {
				c := warp.HeartbeatCount{Host: fmt.Sprintf("%sh%02d", prefix, i), Token: "tok-0", SchemaVersion: 1, At: at.Add(-time.Minute), N: 1}
				if _, err := tx.RecordHeartbeat(e.ctx, c); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = e.store.Update(e.ctx, func(tx warp.Tx) error {
		if err := tx.WriteBatch(e.ctx, nil, batch("bulk-")); err != nil {
			return err
		}
		for _, c := range batch("one-") {
			if _, err := tx.RecordHeartbeat(e.ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows []warp.HostAdoption
	tokens := map[string]int{}
	if err := e.store.View(e.ctx, func(tx warp.Tx) (err error) {
		if rows, err = tx.Adoption(e.ctx, at.Add(-time.Hour)); err != nil {
			return err
		}
		for _, tok := range []string{"tok-0", "tok-1", "tok-2", "tok-3"} {
			if tokens[tok], err = tx.HostsOfToken(e.ctx, tok, at.Add(-time.Hour)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	by := map[string]warp.HostAdoption{}
	for _, r := range rows {
		by[r.Host] = r
	}
	if want := by["one-a"]; want.LastSchemaVersion != 2 || want.V1Count != 2 || want.V2Count != 4 || !want.LastSeen.Equal(at) {
		t.Errorf("host one-a (RecordHeartbeat, the reference): %+v", want)
	}
	compared := 0
	for host, want := range by {
		if !strings.HasPrefix(host, "one-") {
			continue
		}
		compared++
		got := by["bulk-"+strings.TrimPrefix(host, "one-")]
		got.Host = want.Host
		if got != want {
			t.Errorf("host %s: WriteBatch wrote %+v, RecordHeartbeat %+v", host, got, want)
		}
	}
	if w := by["with-leases"]; w.V2Count != 3 || w.LastSchemaVersion != 2 || !w.LastSeen.Equal(at) {
		t.Errorf("the count written with the leases: %+v, want 3 v2 heartbeats at %v", w, at)
	}
	if g, ok := by["ghost"]; ok {
		t.Errorf("the count of a failed WriteBatch was kept: %+v", g)
	}
	if compared != 47 {
		t.Errorf("%d hosts recorded one by one, want 47", compared)
	}
	// Each way: 20 hosts under tok-0 (their first heartbeat), a under
	// tok-1, b under tok-2, the 25 new ones under tok-3.
	if tokens["tok-0"] != 40 || tokens["tok-1"] != 2 || tokens["tok-2"] != 2 || tokens["tok-3"] != 50 {
		t.Errorf("hosts per token: %v, want tok-0 40, tok-1 2, tok-2 2, tok-3 50", tokens)
	}
}
