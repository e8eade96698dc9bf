package warp_test

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func TestSumHeartbeats(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 59, 30, 0, time.UTC)
	m := func(h, min int) int64 { return time.Date(2026, 12, 3, h, min, 0, 0, time.UTC).Unix() }
	cs := []warp.HeartbeatCount{
		{Host: "a", Token: "t1", SchemaVersion: 1, At: t0, N: 2},
		{Host: "b", Token: "t2", SchemaVersion: 2, At: t0, N: 1},
		{Host: "a", Token: "t2", SchemaVersion: 1, At: t0.Add(500 * time.Millisecond), N: 3}, // same minute
		{Host: "a", Token: "t1", SchemaVersion: 2, At: t0.Add(31 * time.Second), N: 4},       // next minute and hour, latest
		{Host: "b", Token: "t1", SchemaVersion: 1, At: t0.Add(-time.Second), N: 5},           // older: row keeps v2 at t0
		{Host: "a", Token: "t1", SchemaVersion: 1, At: t0.Add(-time.Minute), N: 1},           // the minute before, same hour
	}
	sums, hosts := warp.SumHeartbeats(cs)
	M, H := warp.MinuteSpan, warp.HourSpan
	wantSums := []warp.HeartbeatSum{
		{"a", 1, M, m(12, 59), 5}, {"a", 1, H, m(12, 0), 6},
		{"b", 2, M, m(12, 59), 1}, {"b", 2, H, m(12, 0), 1},
		{"a", 2, M, m(13, 0), 4}, {"a", 2, H, m(13, 0), 4},
		{"b", 1, M, m(12, 59), 5}, {"b", 1, H, m(12, 0), 5},
		{"a", 1, M, m(12, 58), 1},
	}
	if len(sums) != len(wantSums) {
		t.Fatalf("sums %+v, want %+v", sums, wantSums)
	}
	for i := range sums {
		if sums[i] != wantSums[i] {
			t.Errorf("sum %d: %+v, want %+v", i, sums[i], wantSums[i])
		}
	}
	wantHosts := []warp.HostSeen{{Host: "a", Token: "t1", SchemaVersion: 2, At: t0.Add(31 * time.Second)}, {Host: "b", Token: "t2", SchemaVersion: 2, At: t0}}
	if len(hosts) != 2 || hosts[0] != wantHosts[0] || hosts[1] != wantHosts[1] {
		t.Errorf("hosts %+v, want %+v", hosts, wantHosts)
	}
}

func TestCountWindow(t *testing.T) {
	at := func(h, min, s int) time.Time { return time.Date(2026, 12, 3, h, min, s, 0, time.UTC) }
	for _, c := range []struct {
		since        time.Time
		minute, hour time.Time
	}{
		{at(12, 59, 30), at(12, 59, 0), at(13, 0, 0)},
		{at(13, 0, 0), at(13, 0, 0), at(13, 0, 0)},
		{at(13, 0, 59), at(13, 0, 0), at(13, 0, 0)},
		{at(13, 1, 0), at(13, 1, 0), at(14, 0, 0)},
		{at(13, 1, 0).Add(999 * time.Millisecond), at(13, 1, 0), at(14, 0, 0)},
		{time.Unix(-30, 0), time.Unix(-60, 0), time.Unix(0, 0)},
	} {
		m, h := warp.CountWindow(c.since)
		if m != c.minute.Unix() || h != c.hour.Unix() {
			t.Errorf("CountWindow(%s): minute rows from %s, hour rows from %s; want %s, %s",
				c.since.Format(time.TimeOnly), time.Unix(m, 0).UTC().Format(time.TimeOnly), time.Unix(h, 0).UTC().Format(time.TimeOnly),
				c.minute.Format(time.TimeOnly), c.hour.Format(time.TimeOnly))
		}
	}
}
