package warp_test

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func TestSumHeartbeats(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	cs := []warp.HeartbeatCount{
		{Host: "a", Token: "t1", SchemaVersion: 1, At: t0, N: 2},
		{Host: "b", Token: "t2", SchemaVersion: 2, At: t0, N: 1},
		{Host: "a", Token: "t2", SchemaVersion: 1, At: t0.Add(500 * time.Millisecond), N: 3}, // same bucket
		{Host: "a", Token: "t1", SchemaVersion: 2, At: t0.Add(time.Second), N: 4},            // next bucket, latest
		{Host: "b", Token: "t1", SchemaVersion: 1, At: t0.Add(-time.Second), N: 5},           // older: row keeps v2 at t0
	}
	sums, hosts := warp.SumHeartbeats(cs)
	wantSums := []warp.HeartbeatSum{{"a", 1, t0.Unix(), 5}, {"b", 2, t0.Unix(), 1}, {"a", 2, t0.Unix() + 1, 4}, {"b", 1, t0.Unix() - 1, 5}}
	if len(sums) != len(wantSums) {
		t.Fatalf("sums %+v, want %+v", sums, wantSums)
	}
	for i := range sums {
		if sums[i] != wantSums[i] {
			t.Errorf("sum %d: %+v, want %+v", i, sums[i], wantSums[i])
		}
	}
	wantHosts := []warp.HostSeen{{Host: "a", Token: "t1", SchemaVersion: 2, At: t0.Add(time.Second)}, {Host: "b", Token: "t2", SchemaVersion: 2, At: t0}}
	if len(hosts) != 2 || hosts[0] != wantHosts[0] || hosts[1] != wantHosts[1] {
		t.Errorf("hosts %+v, want %+v", hosts, wantHosts)
	}
}
