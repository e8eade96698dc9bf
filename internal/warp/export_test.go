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

// SetMaxKnownHosts bounds the hosts a group commit remembers as recorded,
// until the test ends.
func SetMaxKnownHosts(t interface{ Cleanup(func()) }, n int) {
	old := maxKnownHosts
	maxKnownHosts = n
	t.Cleanup(func() { maxKnownHosts = old })
}

// KnownHosts reports how many hosts the group commit remembers (tests).
func KnownHosts(s *Service) int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return len(s.batch.known)
}
