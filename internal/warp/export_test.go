package warp

// QueuedHeartbeats reports how many heartbeats wait for the next group
// commit (tests).
func QueuedHeartbeats(s *Service) int {
	if s.batch == nil {
		return 0
	}
	return len(s.batch.in)
}

// SetMaxKeptCounts bounds the adoption counts failed flushes keep, until
// the test ends.
func SetMaxKeptCounts(t interface{ Cleanup(func()) }, n int) {
	old := maxKeptCounts
	maxKeptCounts = n
	t.Cleanup(func() { maxKeptCounts = old })
}
