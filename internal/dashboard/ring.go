package dashboard

import (
	"sync"
	"time"
)

// ringMinutes is how many one-minute buckets a ring keeps: 24 hours.
const ringMinutes = 24 * 60

// RingWindow is how far back the in-memory rings reach.
const RingWindow = ringMinutes * time.Minute

// ringSlot is one minute of durations.
type ringSlot struct {
	Minute   int64 // unix minutes; 0: empty
	N        int64
	Sum, Max time.Duration
}

// Mean is the slot's mean duration.
func (s ringSlot) Mean() time.Duration {
	if s.N == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.N)
}

// ring holds durations per minute for the last 24 hours, in memory: fixed
// size (ringMinutes slots, whatever the rate), emptied by a restart. A
// slot is reused when its minute comes round again a day later.
type ring struct {
	mu    sync.Mutex
	slots [ringMinutes]ringSlot
}

// add records d at time at.
func (r *ring) add(at time.Time, d time.Duration) {
	m := at.Unix() / 60
	if m <= 0 {
		return
	}
	r.mu.Lock()
	s := &r.slots[m%ringMinutes]
	if s.Minute != m {
		*s = ringSlot{Minute: m}
	}
	s.N++
	s.Sum += d
	s.Max = max(s.Max, d)
	r.mu.Unlock()
}

// since returns the slots of the minutes after now − RingWindow up to
// now's, oldest first.
func (r *ring) since(now time.Time) []ringSlot {
	last := now.Unix() / 60
	first := last - ringMinutes + 1
	var out []ringSlot
	r.mu.Lock()
	defer r.mu.Unlock()
	for m := first; m <= last; m++ {
		if m <= 0 {
			continue
		}
		if s := r.slots[m%ringMinutes]; s.Minute == m && s.N > 0 {
			out = append(out, s)
		}
	}
	return out
}
