package warp

// QueuedHeartbeats reports how many heartbeats wait for the next group
// commit (tests).
func QueuedHeartbeats(s *Service) int {
	if s.batch == nil {
		return 0
	}
	return len(s.batch.in)
}
