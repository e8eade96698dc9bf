package warp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gyrum-labs/warp/internal/groupcommit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// storedAdoption reads the adoption rows from the store itself, past the
// Service (which flushes its buffered counts first).
func storedAdoption(t *testing.T, g *gatedStore) map[string]warp.HostAdoption {
	t.Helper()
	var rows []warp.HostAdoption
	err := g.Store.View(context.Background(), func(tx warp.Tx) (err error) {
		rows, err = tx.Adoption(context.Background(), t0.Add(-time.Hour))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]warp.HostAdoption{}
	for _, r := range rows {
		out[r.Host] = r
	}
	return out
}

// TestAdoptionCountsFlush: a batched heartbeat's adoption count is written
// a flush interval after it, not in the heartbeat's transaction; readers
// through the Service see it at once; Close writes what is left.
func TestAdoptionCountsFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, g, _ := gatedService(t, warp.Config{}, &groupcommit.Config{CountFlush: time.Second})
		for i := range 4 {
			mustClaim(t, svc, fmt.Sprintf("T-%d", i))
		}
		beat := func(i int, host string) {
			mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: host, ActivityAge: 1})
		}
		beat(0, "h1")
		beat(1, "h1")
		synctest.Wait()
		if got := storedAdoption(t, g); len(got) != 0 {
			t.Fatalf("adoption rows right after two heartbeats: %+v, want none before the flush", got)
		}
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		if got := storedAdoption(t, g); len(got) != 0 {
			t.Fatalf("adoption rows before the flush interval passed: %+v, want none", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := storedAdoption(t, g)["h1"]; got.V2Count != 2 {
			t.Fatalf("h1 a flush interval after its heartbeats: %+v, want 2 v2 heartbeats stored", got)
		}

		// The Service's readers flush first: exact at once.
		beat(2, "h2")
		a, err := svc.Adoption(context.Background(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if a.HostCount != 2 || a.Hosts[1].Host != "h2" || a.Hosts[1].V2Count != 1 {
			t.Fatalf("adoption right after h2's heartbeat: %+v, want h1 (2) and h2 (1)", a.Hosts)
		}
		beat(3, "h3")
		hosts, err := svc.Hosts(context.Background(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var h3 *warp.HostAdoption
		for _, h := range hosts {
			if h.Host == "h3" {
				h3 = h.Adoption
			}
		}
		if h3 == nil || h3.V2Count != 1 {
			t.Fatalf("hosts right after h3's heartbeat: h3 adoption %+v, want 1 v2 heartbeat", h3)
		}

		// Close writes the buffer.
		beat(0, "h1")
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		if got := storedAdoption(t, g)["h1"]; got.V2Count != 3 {
			t.Fatalf("h1 after Close: %+v, want 3 v2 heartbeats stored", got)
		}
	})
}

// TestAdoptionCountsFlushFails: a flush that fails keeps its counts for
// the next one; none is lost or counted twice.
func TestAdoptionCountsFlushFails(t *testing.T) {
	svc, g, clk := gatedService(t, warp.Config{}, &groupcommit.Config{})
	for i := range 2 {
		mustClaim(t, svc, fmt.Sprintf("T-%d", i))
	}
	for i := range 2 {
		mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: "h", ActivityAge: 1})
	}
	broken := errors.New("disk full")
	g.fail.Store(&broken)
	if err := svc.FlushCounts(context.Background()); !errors.Is(err, broken) {
		t.Fatalf("flush on a failing store: %v, want %v", err, broken)
	}
	if got := storedAdoption(t, g); len(got) != 0 {
		t.Fatalf("adoption rows after a failed flush: %+v, want none", got)
	}
	clk.Advance(time.Second)
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-0", Host: "h"})
	if err := svc.FlushCounts(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := storedAdoption(t, g)["h"]
	if got.V2Count != 2 || got.V1Count != 1 || got.LastSchemaVersion != 1 {
		t.Fatalf("h after the failed flush and one more: %+v, want 2 v2 and 1 v1, last schema 1", got)
	}
}

// TestSetModeSeesBufferedCounts: the adoption check of a switch to
// activity mode sees a v1 heartbeat still in the buffer.
func TestSetModeSeesBufferedCounts(t *testing.T) {
	svc, g, _ := gatedService(t, warp.Config{InitialMode: warp.ModeTransition}, &groupcommit.Config{})
	mustClaim(t, svc, "T-0")
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-0", Host: "old-host"})
	if got := storedAdoption(t, g); len(got) != 0 {
		t.Fatalf("adoption rows before any flush: %+v, want the count still buffered", got)
	}
	if _, err := svc.SetMode(context.Background(), warp.ModeActivity, false); !errors.Is(err, warp.ErrAdoptionIncomplete) {
		t.Fatalf("switch to activity right after a v1 heartbeat: %v, want ErrAdoptionIncomplete", err)
	}
}

// TestAdoptionCountsFlushFailsBounded: what failed flushes keep is
// bounded; past the bound a failed flush's counts are dropped, and the
// buffer goes on counting.
func TestAdoptionCountsFlushFailsBounded(t *testing.T) {
	warp.SetMaxKeptCounts(t, 2)
	svc, g, clk := gatedService(t, warp.Config{}, &groupcommit.Config{})
	for i := range 3 {
		mustClaim(t, svc, fmt.Sprintf("T-%d", i))
	}
	broken := errors.New("disk full")
	for i := range 3 {
		// One row per heartbeat: another host each.
		mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: fmt.Sprintf("T-%d", i), Epoch: 1, Host: fmt.Sprintf("h%d", i), ActivityAge: 1})
	}
	g.fail.Store(&broken)
	if err := svc.FlushCounts(context.Background()); !errors.Is(err, broken) {
		t.Fatalf("flush on a failing store: %v, want %v", err, broken)
	}
	clk.Advance(time.Second)
	mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-0", Epoch: 1, Host: "h0", ActivityAge: 1})
	if err := svc.FlushCounts(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := storedAdoption(t, g)
	if len(got) != 1 || got["h0"].V2Count != 1 {
		t.Fatalf("after a failed flush of 3 rows over a bound of 2, then one more heartbeat: %+v, want only h0's last heartbeat", got)
	}
}
