package dashboard

// Tracked is how many tickets b's run loop remembers a heartbeat message
// of (its coalescing slots).
func (b *Broker) Tracked() int { return int(b.tracked.Load()) }

// TrackFloor is trackFloor.
const TrackFloor = trackFloor
