package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// testTallies covers the charts' reads: events per hour, kind and key
// (Tx.EventTallies) and hosts per hour by schema version
// (Tx.HostsBySchemaPerHour).
func testTallies(t *testing.T, open func(t *testing.T) warp.Store) {
	t.Run("EventsPerHour", func(t *testing.T) {
		e := newEnv(t, open)
		h0 := T0() // 12:00
		ev := func(at time.Time, data warp.EventData) warp.Event { return warp.NewEvent("T-1", 1, at, data) }
		e.update(func(tx warp.Tx) error {
			for _, x := range []warp.Event{
				ev(h0.Add(-25*time.Hour), warp.LapsedData{Reason: "expired"}), // before the window
				ev(h0.Add(-2*time.Hour+time.Minute), warp.LapsedData{Reason: "expired"}),
				ev(h0.Add(-2*time.Hour+30*time.Minute), warp.LapsedData{Reason: "expired"}),
				ev(h0.Add(-2*time.Hour+59*time.Minute), warp.LapsedData{Reason: "agent-exited"}),
				ev(h0.Add(5*time.Minute), warp.LapsedData{Reason: "expired"}),
				ev(h0.Add(6*time.Minute), warp.LapsedData{}), // no reason
				ev(h0.Add(7*time.Minute), warp.VerdictChangedData{From: warp.VerdictActive, To: warp.VerdictStalled}),
				ev(h0.Add(8*time.Minute), warp.VerdictChangedData{From: warp.VerdictStalled, To: warp.VerdictSilent}),
				ev(h0.Add(9*time.Minute), warp.ReleasedData{Reason: "done"}), // not asked for
			} {
				if _, err := tx.AppendEvent(e.ctx, x); err != nil {
					return err
				}
			}
			return nil
		})
		e.clock.Set(h0.Add(10 * time.Minute))
		got, err := e.svc.EventTallies(e.ctx, []warp.EventKind{warp.EventLapsed, warp.EventVerdictChanged}, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"10:00 lapsed agent-exited 1", "10:00 lapsed expired 2",
			"12:00 lapsed  1", "12:00 lapsed expired 1",
			"12:00 verdict-changed silent 1", "12:00 verdict-changed stalled 1",
		}
		if s := tallyStrings(got); !slices.Equal(s, want) {
			t.Errorf("tallies: got %q, want %q", s, want)
		}
		for _, x := range got {
			if x.Hour.Location() != time.UTC {
				t.Errorf("hour %v not in UTC", x.Hour)
			}
		}
		// The limit bounds the rows, in order.
		e.read(func(tx warp.Tx) error {
			rows, err := tx.EventTallies(e.ctx, []warp.EventKind{warp.EventLapsed}, h0.Add(-24*time.Hour), 2)
			if err != nil {
				return err
			}
			if s := tallyStrings(rows); !slices.Equal(s, want[:2]) {
				t.Errorf("tallies, limit 2: got %q, want %q", s, want[:2])
			}
			return nil
		})
		_, err = e.svc.EventTallies(e.ctx, nil, 24*time.Hour)
		wantErr(t, "tallies of no kind", err, warp.ErrInvalid)
		_, err = e.svc.EventTallies(e.ctx, []warp.EventKind{warp.EventLapsed}, 8*24*time.Hour)
		wantErr(t, "tallies over 7 days", err, warp.ErrInvalid)
		_, err = e.svc.EventTallies(e.ctx, []warp.EventKind{warp.EventLapsed}, time.Minute)
		wantErr(t, "tallies of a minute", err, warp.ErrInvalid)
	})

	t.Run("HostsBySchemaPerHour", func(t *testing.T) {
		e := newEnv(t, open)
		h0 := T0()
		hb := func(host string, v int, at time.Time) warp.HeartbeatCount {
			return warp.HeartbeatCount{Host: host, Token: "tok", SchemaVersion: v, At: at, N: 1}
		}
		e.update(func(tx warp.Tx) error {
			for _, c := range []warp.HeartbeatCount{
				hb("old", 1, h0.Add(-30*time.Hour)), // before the window
				hb("a", 1, h0.Add(-2*time.Hour)),
				hb("b", 1, h0.Add(-2*time.Hour+time.Minute)),
				hb("a", 1, h0.Add(-time.Hour+time.Minute)),
				hb("a", 2, h0.Add(-time.Hour+20*time.Minute)), // a moved to v2 in the hour: counts as v2
				hb("b", 1, h0.Add(-time.Hour+30*time.Minute)),
				hb("a", 2, h0.Add(time.Minute)),
				hb("b", 2, h0.Add(2*time.Minute)),
				hb("c", 2, h0.Add(3*time.Minute)),
			} {
				if _, err := tx.RecordHeartbeat(e.ctx, c); err != nil {
					return err
				}
			}
			return nil
		})
		e.clock.Set(h0.Add(10 * time.Minute))
		got, err := e.svc.HostsBySchemaPerHour(e.ctx, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, x := range got {
			s = append(s, fmt.Sprintf("%s v%d %d", x.Hour.Format("15:04"), x.SchemaVersion, x.Hosts))
		}
		want := []string{"10:00 v1 2", "11:00 v1 1", "11:00 v2 1", "12:00 v2 3"}
		if !slices.Equal(s, want) {
			t.Errorf("hosts by schema per hour: got %q, want %q", s, want)
		}
		_, err = e.svc.HostsBySchemaPerHour(e.ctx, 3*24*time.Hour)
		wantErr(t, "schema hours past the retention", err, warp.ErrInvalid)
	})
}

func tallyStrings(ts []warp.EventTally) []string {
	var s []string
	for _, x := range ts {
		s = append(s, fmt.Sprintf("%s %s %s %d", x.Hour.Format("15:04"), x.Kind, x.Key, x.N))
	}
	return s
}

// ChartEvents and ChartHosts shape the charts' benchmark database
// (SeedCharts): 200k events over the last 7 days — 100k the charts count
// (lapses by 4 reasons, verdict changes to 4 verdicts) and 100k they skip
// (created, claimed, completed) — and the heartbeat counts of 1,000 hosts over 48 hours, 4 minute rows and an hour
// row a host and hour (v1 hosts moving to v2).
const (
	ChartEvents = 100_000
	ChartHosts  = 1_000
)

// SeedCharts fills db, an empty store, with the charts' benchmark
// database, up to now.
func SeedCharts(ctx context.Context, db warp.Store, now time.Time) error {
	reasons := []string{"expired", "no-activity", "agent-exited", "no-heartbeat"}
	tos := []warp.Verdict{warp.VerdictStalled, warp.VerdictSilent, warp.VerdictActive, warp.VerdictExited}
	skipped := []warp.EventData{warp.CreatedData{}, warp.ClaimedData{Host: "h"}, warp.CompletedData{Host: "h"}}
	span := 7 * 24 * time.Hour
	const batch = 20_000
	for start := 0; start < 2*ChartEvents; start += batch {
		err := db.Update(ctx, func(tx warp.Tx) error {
			for i := start; i < start+batch; i++ {
				at := now.Add(-span + time.Duration(i)*(span/(2*ChartEvents)))
				var d warp.EventData
				switch i % 4 {
				case 0:
					d = warp.LapsedData{Reason: reasons[i/4%4], Host: "h"}
				case 1:
					d = warp.VerdictChangedData{From: warp.VerdictActive, To: tos[i/4%4], Host: "h"}
				default:
					d = skipped[i%3]
				}
				if _, err := tx.AppendEvent(ctx, warp.NewEvent(fmt.Sprintf("T-%06d", i/4), 1, at, d)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed events: %w", err)
		}
	}
	err := db.Update(ctx, func(tx warp.Tx) error {
		for h := range ChartHosts {
			for hour := range 48 {
				v := 1
				if hour > 48*h/ChartHosts {
					v = 2 // host h moves to v2 at its hour
				}
				for m := 0; m < 60; m += 15 { // heartbeats in 4 minutes of each hour
					c := warp.HeartbeatCount{Host: fmt.Sprintf("host-%04d", h), Token: "t", SchemaVersion: v,
						At: now.Add(-time.Duration(48-hour)*time.Hour + time.Duration(m)*time.Minute), N: 4}
					if _, err := tx.RecordHeartbeat(ctx, c); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seed heartbeat counts: %w", err)
	}
	return nil
}
