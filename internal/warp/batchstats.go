package warp

import (
	"sync/atomic"
	"time"
)

// GroupCommitStats is what the heartbeat group commit (batch.go) has done
// since its Service started, for the metrics: how many heartbeats each
// committed transaction applied and how long each took, as cumulative
// histograms (Prometheus's shape), and how many transactions failed. A
// heartbeat applied without a group commit is a batch of one.
type GroupCommitStats struct {
	// Size: heartbeats per committed transaction. SizeCounts[i] counts
	// the transactions of at most SizeBounds[i] heartbeats; Batches counts
	// them all, Heartbeats sums their sizes.
	SizeBounds []float64
	SizeCounts []uint64
	Batches    uint64
	Heartbeats uint64
	// Duration: seconds from a transaction's start to its commit (retries
	// included). DurationCounts[i] counts those of at most
	// DurationBounds[i] seconds; Durations counts them all (Batches, but
	// read apart from it, it may be a transaction ahead or behind),
	// Seconds sums them.
	DurationBounds []float64
	DurationCounts []uint64
	Durations      uint64
	Seconds        float64
	// Failed counts transactions that failed as a whole (their heartbeats
	// were answered with the error).
	Failed uint64
}

// GroupCommitSizeBounds and GroupCommitDurationBounds are the histograms'
// upper bounds (the last size bound is MaxHeartbeatBatch).
var (
	GroupCommitSizeBounds     = []float64{1, 2, 4, 8, 16, 32, 64, 128, MaxHeartbeatBatch}
	GroupCommitDurationBounds = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
)

// batchStats holds GroupCommitStats as atomics: the batch workers add to
// it, a scrape reads it.
type batchStats struct {
	size, duration histogram
	failed         atomic.Uint64
}

func newBatchStats() *batchStats {
	return &batchStats{size: newHistogram(GroupCommitSizeBounds), duration: newHistogram(GroupCommitDurationBounds)}
}

// committed records a transaction of n heartbeats that committed after d.
func (s *batchStats) committed(n int, d time.Duration) {
	s.size.observe(float64(n), int64(n))
	s.duration.observe(d.Seconds(), int64(d))
}

// histogram counts observations per bucket (not cumulative: one add per
// observation) and sums them as integers.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // counts[i]: at most bounds[i] and above bounds[i-1]; the last, above every bound
	sum    atomic.Int64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64, sum int64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(sum)
}

// cumulative returns the count at or below each bound, and the total.
func (h *histogram) cumulative() (counts []uint64, total uint64) {
	counts = make([]uint64, len(h.bounds))
	for i := range h.bounds {
		total += h.counts[i].Load()
		counts[i] = total
	}
	return counts, total + h.counts[len(h.bounds)].Load()
}

// GroupCommitStats returns what the group commit has done so far.
func (s *Service) GroupCommitStats() GroupCommitStats {
	st := s.groupStats
	out := GroupCommitStats{SizeBounds: GroupCommitSizeBounds, DurationBounds: GroupCommitDurationBounds}
	out.SizeCounts, out.Batches = st.size.cumulative()
	out.DurationCounts, out.Durations = st.duration.cumulative()
	out.Heartbeats = uint64(st.size.sum.Load())
	out.Seconds = time.Duration(st.duration.sum.Load()).Seconds()
	out.Failed = st.failed.Load()
	return out
}
