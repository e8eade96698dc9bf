package storetest

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// hostsBySchemaAgree checks HostsBySchema against a, the Adoption of the
// same window at the same time: its hosts, grouped by last schema version.
func hostsBySchemaAgree(t *testing.T, e *env, window time.Duration, a warp.Adoption) {
	t.Helper()
	got, err := e.svc.HostsBySchema(e.ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]int{}
	for _, h := range a.Hosts {
		want[h.LastSchemaVersion]++
	}
	if !maps.Equal(got, want) {
		t.Errorf("hosts by schema over %s: %v, want %v (the adoption's hosts)", window, got, want)
	}
}

func testAdoption(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("PerHost", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "old")
		e.createClaim("T-2", "new")
		e.createClaim("T-3", "mixed")
		e.createClaim("T-4", "lease-host")
		e.createClaim("T-5", "")
		hb := func(ticket, host string, v int) {
			t.Helper()
			h := warp.Heartbeat{SchemaVersion: v, Ticket: ticket, Host: host}
			if v == 2 {
				h.Epoch = 1
			}
			if _, err := e.svc.Heartbeat(e.ctx, h); err != nil {
				t.Fatalf("heartbeat %s v%d: %v", ticket, v, err)
			}
		}
		for range 3 {
			hb("T-1", "old", 1)
			e.clock.Advance(700 * time.Millisecond)
		}
		hb("T-2", "new", 2)
		hb("T-2", "new", 2)
		hb("T-3", "mixed", 1)
		e.clock.Advance(time.Second)
		hb("T-3", "mixed", 2)
		hb("T-4", "", 2) // no host in the body: the lease's host counts
		hb("T-5", "", 1) // neither: "unknown"
		last := e.clock.Now()
		e.clock.Advance(time.Minute)

		a, err := e.svc.Adoption(e.ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hostsBySchemaAgree(t, e, time.Hour, a)
		want := []warp.HostAdoption{
			{Host: "lease-host", LastSchemaVersion: 2, V2Count: 1},
			{Host: "mixed", LastSchemaVersion: 2, V1Count: 1, V2Count: 1},
			{Host: "new", LastSchemaVersion: 2, V2Count: 2},
			{Host: "old", LastSchemaVersion: 1, V1Count: 3},
			{Host: "unknown", LastSchemaVersion: 1, V1Count: 1},
		}
		if len(a.Hosts) != len(want) {
			t.Fatalf("hosts: got %+v, want %+v", a.Hosts, want)
		}
		for i, w := range want {
			g := a.Hosts[i]
			if g.Host != w.Host || g.LastSchemaVersion != w.LastSchemaVersion || g.V1Count != w.V1Count || g.V2Count != w.V2Count {
				t.Errorf("host %d: got %+v, want %+v", i, g, w)
			}
		}
		wantTime(t, "last seen of mixed", a.Hosts[1].LastSeen, last)
		wantTime(t, "last seen of old", a.Hosts[3].LastSeen, T0().Add(1400*time.Millisecond))
		if a.HostCount != 5 || a.V2Hosts != 2 || a.ReadyForActivityMode || a.Window != time.Hour {
			t.Errorf("summary: got hosts %d v2_hosts %d ready %v window %s, want 5, 2, false, 1h", a.HostCount, a.V2Hosts, a.ReadyForActivityMode, a.Window)
		}
		_, err = e.svc.Adoption(e.ctx, 0)
		wantErr(t, "adoption with a zero window", err, warp.ErrInvalid)
		_, err = e.svc.HostsBySchema(e.ctx, 0)
		wantErr(t, "hosts by schema with a zero window", err, warp.ErrInvalid)
	})

	t.Run("Window", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "old")
		e.createClaim("T-2", "new")
		e.v1("T-1", "old") // at T0
		e.clock.Set(T0().Add(12 * time.Hour))
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-2", Epoch: 1, Host: "new"}); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(T0().Add(24 * time.Hour))
		a, err := e.svc.Adoption(e.ctx, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hostsBySchemaAgree(t, e, 24*time.Hour, a)
		if a.HostCount != 2 || a.ReadyForActivityMode {
			t.Errorf("at T0+24h: got %d hosts, ready %v, want 2, not ready (the v1 heartbeat at T0 is inside)", a.HostCount, a.ReadyForActivityMode)
		}
		e.clock.Set(T0().Add(24*time.Hour + 2*time.Second))
		a, err = e.svc.Adoption(e.ctx, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hostsBySchemaAgree(t, e, 24*time.Hour, a)
		if a.HostCount != 1 || a.V2Hosts != 1 || !a.ReadyForActivityMode || a.Hosts[0].Host != "new" {
			t.Errorf("at T0+24h+2s: got %+v, want only host new, v2, ready", a)
		}
		a, err = e.svc.Adoption(e.ctx, 48*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hostsBySchemaAgree(t, e, 48*time.Hour, a)
		if a.HostCount != 2 {
			t.Errorf("with a 48h window: got %d hosts, want 2", a.HostCount)
		}
		e.clock.Set(T0().Add(40 * time.Hour))
		a, err = e.svc.Adoption(e.ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hostsBySchemaAgree(t, e, time.Hour, a)
		if a.HostCount != 0 || !a.ReadyForActivityMode || a.V2Hosts != 0 {
			t.Errorf("a window with no heartbeat: got %+v, want no host, ready", a)
		}
	})

	t.Run("CountsAndPrune", func(t *testing.T) {
		// Direct: many heartbeats in one second add up; prune drops old
		// buckets only.
		e := newEnv(t, open)
		base := T0()
		e.update(func(tx warp.Tx) error {
			for i := range 10 {
				if _, err := tx.RecordHeartbeat(e.ctx, warp.HeartbeatCount{Host: "h", SchemaVersion: 2, At: base.Add(time.Duration(i) * 50 * time.Millisecond), N: 1}); err != nil {
					return err
				}
			}
			for i := range 4 {
				if _, err := tx.RecordHeartbeat(e.ctx, warp.HeartbeatCount{Host: "h", SchemaVersion: 1, At: base.Add(time.Hour + time.Duration(i)*time.Second), N: 1}); err != nil {
					return err
				}
			}
			return nil
		})
		var hosts []warp.HostAdoption
		e.read(func(tx warp.Tx) error {
			var err error
			hosts, err = tx.Adoption(e.ctx, base)
			return err
		})
		if len(hosts) != 1 || hosts[0].V2Count != 10 || hosts[0].V1Count != 4 || hosts[0].LastSchemaVersion != 1 {
			t.Fatalf("adoption: got %+v, want host h with 10 v2, 4 v1, last v1", hosts)
		}
		wantTime(t, "last seen", hosts[0].LastSeen, base.Add(time.Hour+3*time.Second))
		// Half an hour on, the v2 counts' minute row has ended, their hour
		// row not yet: pruned, the minute row goes and the hour row still
		// counts them.
		e.update(func(tx warp.Tx) error { return tx.PruneHeartbeats(e.ctx, base.Add(30*time.Minute)) })
		e.read(func(tx warp.Tx) error {
			var err error
			hosts, err = tx.Adoption(e.ctx, base)
			return err
		})
		if len(hosts) != 1 || hosts[0].V2Count != 10 || hosts[0].V1Count != 4 {
			t.Errorf("adoption after pruning the first minute: got %+v, want 10 v2 (their hour row), 4 v1", hosts)
		}
		e.update(func(tx warp.Tx) error { return tx.PruneHeartbeats(e.ctx, base.Add(time.Hour)) })
		e.read(func(tx warp.Tx) error {
			var err error
			hosts, err = tx.Adoption(e.ctx, base)
			return err
		})
		if len(hosts) != 1 || hosts[0].V2Count != 0 || hosts[0].V1Count != 4 {
			t.Errorf("adoption after pruning the first hour: got %+v, want only the 4 v1 counts left", hosts)
		}
		e.update(func(tx warp.Tx) error { return tx.PruneHeartbeats(e.ctx, base.Add(2*time.Hour)) })
		e.read(func(tx warp.Tx) error {
			var err error
			hosts, err = tx.Adoption(e.ctx, base)
			return err
		})
		for _, h := range hosts {
			if h.V1Count != 0 || h.V2Count != 0 {
				t.Errorf("adoption after pruning everything: got %+v, want no counts", h)
			}
		}
	})

	t.Run("Spans", func(t *testing.T) { testAdoptionSpans(t, open) })
}

// testAdoptionSpans checks the counts of many windows against a model:
// heartbeats spread over three hours, written one by one (RecordHeartbeat)
// for one host and in batches (Tx.WriteBatch) for
// another; a window starting at since counts every heartbeat from the
// start of since's minute on (warp.CountWindow), whichever rows hold it.
func testAdoptionSpans(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	base := T0().Add(-10 * time.Minute) // 11:50: the heartbeats cross two hour boundaries
	type beat struct {
		at     time.Time
		schema int
		n      int64
	}
	var beats []beat
	x := uint32(7)
	for i := range 300 {
		x = x*1664525 + 1013904223 // a fixed sequence of pseudo-random steps
		at := base.Add(time.Duration(i)*37*time.Second + time.Duration(x%37000)*time.Millisecond)
		beats = append(beats, beat{at, 1 + int(x>>16)%2, 1 + int64(x>>20)%3})
	}
	var batch []warp.HeartbeatCount
	e.update(func(tx warp.Tx) error {
		batch = batch[:0]
		for _, b := range beats {
			if _, err := tx.RecordHeartbeat(e.ctx, warp.HeartbeatCount{Host: "single", Token: "t", SchemaVersion: b.schema, At: b.at, N: b.n}); err != nil {
				return err
			}
			batch = append(batch, warp.HeartbeatCount{Host: "batched", Token: "t", SchemaVersion: b.schema, At: b.at, N: b.n})
		}
		return nil
	})
	for len(batch) > 0 { // in batches of 40, as group commits would write them
		n := min(40, len(batch))
		part := batch[:n]
		batch = batch[n:]
		e.update(func(tx warp.Tx) error { return tx.WriteBatch(e.ctx, nil, part) })
	}
	last := beats[len(beats)-1].at
	var sinces []time.Time
	for d := time.Duration(0); d < last.Sub(base); d += 7*time.Minute + 13*time.Second {
		sinces = append(sinces, base.Add(d))
	}
	sinces = append(sinces, T0(), T0().Add(time.Hour), T0().Add(time.Hour-time.Second), T0().Add(time.Hour+time.Minute),
		T0().Add(-time.Second), base.Add(-time.Hour), last, last.Add(-time.Minute))
	for _, since := range sinces {
		from := time.Unix(since.Unix()-since.Unix()%60, 0)
		var want [3]int64
		for _, b := range beats {
			if !b.at.Before(from) {
				want[b.schema] += b.n
			}
		}
		var hosts []warp.HostAdoption
		e.read(func(tx warp.Tx) error {
			var err error
			hosts, err = tx.Adoption(e.ctx, since)
			return err
		})
		if len(hosts) != 2 {
			t.Fatalf("since %s: got hosts %+v, want batched and single", since.Format(time.TimeOnly), hosts)
		}
		for _, h := range hosts {
			if h.V1Count != want[1] || h.V2Count != want[2] {
				t.Errorf("since %s, host %s: v1 %d v2 %d, want %d and %d (heartbeats from %s on)",
					since.Format(time.TimeOnly), h.Host, h.V1Count, h.V2Count, want[1], want[2], from.UTC().Format(time.TimeOnly))
			}
		}
	}
}

// BenchAdoptionRead times store's adoption read over hosts hosts whose
// counts (each store's benchmark writes them) say a heartbeat every second,
// v2, for the 48 h before now (a whole hour). The window starts a minute
// into an hour 24 h back, so the read takes 59 minute rows and 23 hour rows
// a host (the most a 24 h window reads).
func BenchAdoptionRead(b *testing.B, store warp.Store, hosts int, now time.Time) {
	ctx := context.Background()
	since := now.Add(-24*time.Hour + time.Minute + 30*time.Second)
	b.ResetTimer()
	for b.Loop() {
		var got []warp.HostAdoption
		if err := store.View(ctx, func(tx warp.Tx) (err error) { got, err = tx.Adoption(ctx, since); return err }); err != nil {
			b.Fatal(err)
		}
		if want := int64(59*60 + 23*3600); len(got) != hosts || got[0].V2Count != want {
			b.Fatalf("got %d hosts, the first with %d v2, want %d and %d", len(got), got[0].V2Count, hosts, want)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(hosts), "µs/host")
}
