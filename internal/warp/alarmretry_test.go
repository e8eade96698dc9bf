package warp_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// failingAlarms fails the write of the host alarms while fail is set: a
// verdict pass that breaks after its verdict changes committed.
type failingAlarms struct {
	warp.Store
	fail atomic.Bool
}

type failingAlarmsTx struct {
	warp.Tx
	s *failingAlarms
}

func (t failingAlarmsTx) SetMeta(ctx context.Context, k, v string) error {
	if k == warp.MetaHostAlarms && t.s.fail.Load() {
		return errors.New("injected: the connection dropped")
	}
	return t.Tx.SetMeta(ctx, k, v)
}

func (s *failingAlarms) Update(ctx context.Context, fn func(warp.Tx) error) error {
	return s.Store.Update(ctx, func(tx warp.Tx) error { return fn(failingAlarmsTx{tx, s}) })
}

// Three leases of one host go stalled together; the pass that records it
// fails when it writes the alarm. The changes are committed, so the next
// pass finds none of its own: it must still tally the host and raise the
// alarm.
func TestHostAlarmSurvivesAFailedPass(t *testing.T) {
	ctx := context.Background()
	fs := &failingAlarms{Store: openSQLite(t)}
	svc, clk := serviceOn(t, fs)
	ids := []string{"T-1", "T-2", "T-3"}
	yes := true
	for _, id := range ids {
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(10 * time.Minute)
	for _, id := range ids {
		mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "h", ActivityAge: 0, HookSeen: &yes})
	}
	clk.Advance(10 * time.Minute)
	for _, id := range ids {
		mustHeartbeat(t, svc, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Host: "h", ActivityAge: 600, HookSeen: &yes})
	}
	clk.Advance(6 * time.Minute) // activity 16 min old: stalled
	fs.fail.Store(true)
	p, err := svc.VerdictPass(ctx)
	if err == nil || len(p.Changes) != 3 {
		t.Fatalf("the failing pass: %d changes, err %v; want 3 recorded and the alarm's write failed", len(p.Changes), err)
	}
	fs.fail.Store(false)
	clk.Advance(30 * time.Second)
	p, err = svc.VerdictPass(ctx)
	if err != nil || len(p.Changes) != 0 {
		t.Fatalf("the next pass: %+v, %v", p, err)
	}
	if len(p.Alarms) != 1 || !p.Alarms[0].Raised || p.Alarms[0].Host != "h" {
		t.Fatalf("the next pass raised %+v, want host h's alarm", p.Alarms)
	}
	if al, err := svc.HostAlarms(ctx); err != nil || len(al) != 1 {
		t.Fatalf("alarms %v (%v), want h's", al, err)
	}
	// Done: the pass after finds nothing left to tally and changes nothing.
	clk.Advance(30 * time.Second)
	if p, err := svc.VerdictPass(ctx); err != nil || len(p.Alarms) != 0 {
		t.Fatalf("a third pass: %+v, %v", p, err)
	}
}
