package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testBatchLeases checks warp.HeartbeatBatchTx where a store implements it:
// the batch read answers what CurrentLease answers, ticket by ticket, and
// the batch write writes what UpdateLease would for a heartbeat.
func testBatchLeases(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	// More leases than one multi-row statement of a store may write.
	const n = 40
	var held []string
	for i := range n {
		id := fmt.Sprintf("T-%d", i+1)
		e.createClaim(id, fmt.Sprintf("h%d", i%3))
		held = append(held, id)
	}
	e.create("T-U") // never claimed: no current lease
	var isBatch bool
	if err := e.store.View(e.ctx, func(tx warp.Tx) error { _, isBatch = tx.(warp.HeartbeatBatchTx); return nil }); err != nil {
		t.Fatal(err)
	}
	if !isBatch {
		t.Skip("this store reads and writes a batch's leases one by one (no warp.HeartbeatBatchTx)")
	}
	ids := append(slices.Clone(held), "T-U", "T-Z")
	slices.Sort(ids)
	var changed []warp.Lease
	err := e.store.Update(e.ctx, func(tx warp.Tx) error {
		cur, err := tx.(warp.HeartbeatBatchTx).CurrentLeases(e.ctx, ids)
		if err != nil {
			return err
		}
		if len(cur) != n {
			t.Errorf("CurrentLeases(%v): %d entries, want the %d held", ids, len(cur), n)
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
			changed = append(changed, next)
		}
		return tx.(warp.HeartbeatBatchTx).UpdateLeases(e.ctx, changed)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range changed {
		got := e.lease(want.Ticket)
		if got != want {
			t.Errorf("after UpdateLeases: %+v\nwant %+v", got, want)
		}
	}
	// A lease that is not there fails the call, and the transaction with it.
	again := slices.Clone(changed)
	for i := range again {
		again[i].HookEvents = 8
	}
	again[0].Epoch = 99
	before := e.lease("T-2")
	err = e.store.Update(e.ctx, func(tx warp.Tx) error {
		return tx.(warp.HeartbeatBatchTx).UpdateLeases(e.ctx, again)
	})
	if !errors.Is(err, warp.ErrNotFound) {
		t.Errorf("UpdateLeases with a missing lease: %v, want ErrNotFound", err)
	}
	if got := e.lease("T-2"); got != before {
		t.Errorf("a failed UpdateLeases wrote: %+v, want %+v", got, before)
	}

	// RecordHeartbeats writes what RecordHeartbeat writes count by count:
	// the same counts under other host names, each way, read back alike.
	at := e.clock.Now()
	batch := func(a, b string) []warp.HeartbeatCount {
		return []warp.HeartbeatCount{{Host: a, Token: "tok-1", SchemaVersion: 1, At: at, N: 2},
			{Host: a, Token: "tok-1", SchemaVersion: 2, At: at, N: 3}, {Host: a, Token: "tok-2", SchemaVersion: 2, At: at, N: 1},
			{Host: b, Token: "tok-2", SchemaVersion: 1, At: at, N: 5}}
	}
	err = e.store.Update(e.ctx, func(tx warp.Tx) error {
		if err := tx.(warp.HeartbeatBatchTx).RecordHeartbeats(e.ctx, batch("bulk-a", "bulk-b")); err != nil {
			return err
		}
		for _, c := range batch("one-a", "one-b") {
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
	var tok1, tok2 int
	if err := e.store.View(e.ctx, func(tx warp.Tx) (err error) {
		if rows, err = tx.Adoption(e.ctx, at.Add(-time.Minute)); err != nil {
			return err
		}
		if tok1, err = tx.HostsOfToken(e.ctx, "tok-1", at.Add(-time.Minute)); err != nil {
			return err
		}
		tok2, err = tx.HostsOfToken(e.ctx, "tok-2", at.Add(-time.Minute))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	by := map[string]warp.HostAdoption{}
	for _, r := range rows {
		by[r.Host] = r
	}
	want := map[string]warp.HostAdoption{"a": {LastSchemaVersion: 2, V1Count: 2, V2Count: 4}, "b": {LastSchemaVersion: 1, V1Count: 5}}
	for _, way := range []string{"bulk-", "one-"} {
		for name, w := range want {
			got, ok := by[way+name]
			if !ok || got.LastSchemaVersion != w.LastSchemaVersion || got.V1Count != w.V1Count || got.V2Count != w.V2Count ||
				!got.LastSeen.Equal(at) {
				t.Errorf("host %s%s: %+v, want %+v seen at %v", way, name, got, w, at)
			}
		}
	}
	// Each way: host a under tok-1 (its first count's token), b under tok-2.
	if tok1 != 2 || tok2 != 2 {
		t.Errorf("hosts of tok-1: %d, of tok-2: %d; want 2 and 2 (one per way)", tok1, tok2)
	}
}
