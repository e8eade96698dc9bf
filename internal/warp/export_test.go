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

// EventKinds are the kinds this build writes, each with its detail type
// (for TestEventDataJSON, which pins each one's JSON).
func EventKinds() []EventKind {
	out := make([]EventKind, 0, len(eventTypes))
	for k := range eventTypes {
		out = append(out, k)
	}
	return out
}
