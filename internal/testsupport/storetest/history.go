package storetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testLeaseHistory checks Service.LeaseHistory, the read behind the
// dashboard's lease timeline: a ticket's latest leases, oldest first,
// with the events of those epochs and the ticket-wide ones.
func testLeaseHistory(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	e.create("T-1")
	h, err := e.svc.LeaseHistory(e.ctx, "T-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Leases) != 0 || h.Earlier != 0 || len(h.Events) != 1 || h.Events[0].Kind != warp.EventCreated || h.Verdict != warp.VerdictNone {
		t.Fatalf("never claimed: got %d leases, %d earlier, events %v, verdict %q; want none, 0, [created], none",
			len(h.Leases), h.Earlier, h.Events, h.Verdict)
	}

	// Lease 1 released, lease 2 stalls and lapses, lease 3 held.
	e.claim("T-1", "h1")
	e.clock.Advance(time.Minute)
	if _, err := e.svc.Release(e.ctx, "T-1", 1, "handing over"); err != nil {
		t.Fatal(err)
	}
	e.claim("T-1", "h2")
	e.clock.Advance(16 * time.Minute)
	e.v2hook("T-1", 2, 16*60, true, 4)
	if _, err := e.svc.RecordVerdicts(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if lapsed := e.sweep(); len(lapsed) != 1 {
		t.Fatalf("sweep: %d lapsed, want lease 2", len(lapsed))
	}
	e.claim("T-1", "h3")
	e.clock.Advance(time.Minute)
	e.v2("T-1", 3, 0)

	h, err = e.svc.LeaseHistory(e.ctx, "T-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Leases) != 2 || h.Leases[0].Epoch != 2 || h.Leases[1].Epoch != 3 || h.Earlier != 1 {
		t.Fatalf("latest 2: got %d leases (%v), %d earlier; want epochs 2 and 3, 1 earlier", len(h.Leases), epochsOf(h.Leases), h.Earlier)
	}
	l2, l3 := h.Leases[0], h.Leases[1]
	if l2.State != warp.LeaseLapsed || l2.EndReason != warp.LapseNoActivity || l2.HookEvents != 4 || l2.RecordedVerdict != warp.VerdictStalled {
		t.Errorf("lease 2: state %s, reason %q, hook events %d, recorded %q; want lapsed no-activity, 4, stalled",
			l2.State, l2.EndReason, l2.HookEvents, l2.RecordedVerdict)
	}
	if !l3.Held() || l3.Host != "h3" || h.Verdict != warp.VerdictActive || !h.Now.Equal(e.clock.Now()) {
		t.Errorf("lease 3: state %s host %q, verdict %q, now %v; want held on h3, active, the service clock", l3.State, l3.Host, h.Verdict, h.Now)
	}
	var got []string
	for _, ev := range h.Events {
		got = append(got, string(ev.Kind)+"/"+strconv.FormatInt(ev.Epoch, 10))
	}
	want := "created/0 claimed/2 first-v2-heartbeat/2 verdict-changed/2 lapsed/2 claimed/3 first-v2-heartbeat/3"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("events: got %s, want %s (lease 1's left out)", s, want)
	}

	h, err = e.svc.LeaseHistory(e.ctx, "T-1", 0)
	if err != nil || len(h.Leases) != 3 || h.Earlier != 0 || h.Leases[0].EndReason != "handing over" {
		t.Fatalf("all leases: got %v, %d earlier, err %v", epochsOf(h.Leases), h.Earlier, err)
	}

	// Bad input.
	for _, c := range []struct {
		id   string
		max  int
		want error
	}{
		{"T-1", warp.MaxHistoryLeases + 1, warp.ErrInvalid},
		{"-bad", 1, warp.ErrInvalid},
		{"T-none", 1, warp.ErrNotFound},
	} {
		if _, err := e.svc.LeaseHistory(e.ctx, c.id, c.max); !errors.Is(err, c.want) {
			t.Errorf("LeaseHistory(%q, %d): got %v, want %v", c.id, c.max, err, c.want)
		}
	}
}

func epochsOf(ls []warp.Lease) []int64 {
	var out []int64
	for _, l := range ls {
		out = append(out, l.Epoch)
	}
	return out
}
