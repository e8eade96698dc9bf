package gyrumdir_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// The hooks of overlapping calls tell the agent of a loop once between
// them: each round, 16 hooks see the same new episode at once and one of
// them tells. (warpsim at time scale 1500, its looping agent's calls 80 ms
// apart and a hook taking up to 145 ms, told one agent twice.) Each hook
// opens the directory itself, as separate processes do.
func TestTellLoopOnceAcrossOverlappingHooks(t *testing.T) {
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	same := func(told, now string) bool { return told == now }
	for round := range 30 {
		episode := fmt.Sprintf("episode-%d", round)
		var told atomic.Int32
		var start, done sync.WaitGroup
		start.Add(1)
		for range 16 {
			done.Go(func() {
				start.Wait()
				if d.TellLoopOnce(episode, same) {
					told.Add(1)
				}
			})
		}
		start.Done()
		done.Wait()
		if n := told.Load(); n != 1 {
			t.Fatalf("round %d: %d hooks told the agent of one episode, want 1", round, n)
		}
	}
}
