package heartbeat_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/heartbeat"
)

// BenchmarkTick is one tick of a v2 loop that POSTs a heartbeat to a real
// warp on loopback: the facts (watched process, lease, activity, hook
// events, a process snapshot of the host), the decision, the POST over
// net/http and the state file. Its CPU and allocations per tick are the
// loop's own cost (the server's share runs in this process too, so the
// figure is an upper bound; warpbench measures the real process).
func BenchmarkTick(b *testing.B) {
	ws := newWarp(b)
	_, parent := watched(b)
	d := worktree(b, ws, "T-bench", ws.Claim("T-bench", "A"), parent)
	r := prepareLoop(b, d, func(c *heartbeat.Config) { c.Jitter = -1 })
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = d.TouchActivity(time.Now())
		if exit := r.loop.Tick(ctx); exit != "" {
			b.Fatalf("exit %q", exit)
		}
	}
}
