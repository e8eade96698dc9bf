package warp

// SetMaxKeptCounts bounds the adoption counts failed flushes keep, until
// the test ends.
func SetMaxKeptCounts(t interface{ Cleanup(func()) }, n int) {
	old := maxKeptCounts
	maxKeptCounts = n
	t.Cleanup(func() { maxKeptCounts = old })
}

// SetMaxKnownHosts bounds the hosts a Service remembers as recorded,
// until the test ends.
func SetMaxKnownHosts(t interface{ Cleanup(func()) }, n int) {
	old := maxKnownHosts
	maxKnownHosts = n
	t.Cleanup(func() { maxKnownHosts = old })
}

// KnownHosts reports how many hosts the Service remembers (tests).
func KnownHosts(s *Service) int {
	s.hosts.mu.Lock()
	defer s.hosts.mu.Unlock()
	return len(s.hosts.m)
}
