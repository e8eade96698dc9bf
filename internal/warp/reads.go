package warp

import (
	"context"
	"fmt"
	"time"
)

// Ping reports whether the database is reachable (readiness probes).
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// VerdictCounts is the number of held leases per verdict at one time.
type VerdictCounts struct {
	At     time.Time // the service time the counts were taken at
	Counts map[Verdict]int64
}

// Held returns the total of held leases.
func (c VerdictCounts) Held() int64 {
	var n int64
	for _, v := range c.Counts {
		n += v
	}
	return n
}

// CountVerdicts counts the held leases per verdict at the service's now,
// in one read transaction, in O(hosts + due leases) (heldCounts).
func (s *Service) CountVerdicts(ctx context.Context) (VerdictCounts, error) {
	now := s.now()
	out := VerdictCounts{At: now, Counts: make(map[Verdict]int64, len(Verdicts()))}
	for _, v := range Verdicts() {
		out.Counts[v] = 0
	}
	err := s.store.View(ctx, func(tx Tx) error {
		byHost, err := s.heldCounts(ctx, tx, now)
		for _, c := range byHost {
			for _, v := range Verdicts() {
				out.Counts[v] += c.verdicts[v]
			}
		}
		return err
	})
	return out, err
}

// hostHeld is one host's held leases by verdict and by hook health.
type hostHeld struct {
	verdicts map[Verdict]int64
	hooks    map[HookSeen]int64
}

// heldCounts returns, per host, its held leases by verdict at now and by
// hook health: the stored counts (kept by every claim, end, recorded
// change and hook change), the verdicts corrected by the leases whose
// verdict differs from the recorded one by now — exactly the leases that
// are due (Policy.VerdictDue), so the result equals deriving every held
// lease's verdict with Policy.Verdict. Hosts whose counts are all zero
// (every lease ended) are left out.
func (s *Service) heldCounts(ctx context.Context, tx Tx, now time.Time) (map[string]*hostHeld, error) {
	rows, err := tx.VerdictCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("verdict counts: %w", err)
	}
	out := map[string]*hostHeld{}
	get := func(h string) *hostHeld {
		c := out[h]
		if c == nil {
			c = &hostHeld{verdicts: map[Verdict]int64{}, hooks: map[HookSeen]int64{}}
			out[h] = c
		}
		return c
	}
	for _, r := range rows {
		if r.N == 0 {
			continue
		}
		if h, ok := HookCountOf(r.Verdict); ok {
			get(r.Host).hooks[h] += r.N
		} else {
			get(r.Host).verdicts[r.Verdict] += r.N
		}
	}
	due, err := tx.VerdictDueLeases(ctx, now, 0)
	if err != nil {
		return nil, fmt.Errorf("verdict-due leases: %w", err)
	}
	for _, l := range due {
		c := get(l.Host)
		c.verdicts[recordedVerdict(l)]--
		c.verdicts[s.cfg.Policy.Verdict(l, now)]++
	}
	return out, nil
}

// RecentEvents returns the newest events of the given kinds (all kinds
// when none), newest first, at most limit (MaxListLimit when limit is not
// in 1..MaxListLimit).
func (s *Service) RecentEvents(ctx context.Context, kinds []EventKind, limit int) ([]Event, error) {
	if limit <= 0 || limit > MaxListLimit {
		limit = MaxListLimit
	}
	var out []Event
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.RecentEvents(ctx, kinds, limit)
		if err != nil {
			return fmt.Errorf("recent events: %w", err)
		}
		return nil
	})
	return out, err
}

// MaxTallyRows bounds the rows of EventTallies and HostsBySchemaPerHour.
const MaxTallyRows = 10000

// MaxTallyWindow is the longest window EventTallies and
// HostsBySchemaPerHour read.
const MaxTallyWindow = 7 * 24 * time.Hour

// EventTallies counts the events of kinds (at least one) of the last
// window per hour, kind and key (Tx.EventTallies), at most MaxTallyRows
// rows. window is from 1 hour to MaxTallyWindow.
func (s *Service) EventTallies(ctx context.Context, kinds []EventKind, window time.Duration) ([]EventTally, error) {
	if len(kinds) == 0 {
		return nil, Errorf(ErrInvalid, "event tallies need at least one event kind")
	}
	if err := checkTallyWindow(window); err != nil {
		return nil, err
	}
	since := s.Now().Add(-window)
	var out []EventTally
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if out, err = tx.EventTallies(ctx, kinds, since, MaxTallyRows); err != nil {
			return fmt.Errorf("event tallies: %w", err)
		}
		return nil
	})
	return out, err
}

// HostsBySchemaPerHour counts the hosts of each hour of the last window
// by the highest schema version they sent in it (Tx.HostsBySchemaPerHour),
// once this process's buffered adoption counts are written. window is
// from 1 hour to 2 × DefaultAdoptionWindow, the counts' retention.
func (s *Service) HostsBySchemaPerHour(ctx context.Context, window time.Duration) ([]SchemaHour, error) {
	if err := checkTallyWindow(window); err != nil {
		return nil, err
	}
	if window > 2*DefaultAdoptionWindow {
		return nil, Errorf(ErrInvalid, "schema window %s is over the heartbeat counts' retention of %s", window, 2*DefaultAdoptionWindow)
	}
	var out []SchemaHour
	err := s.readAdoption(ctx, window, func(tx Tx, now time.Time) error {
		var err error
		if out, err = tx.HostsBySchemaPerHour(ctx, now.Add(-window), MaxTallyRows); err != nil {
			return fmt.Errorf("hosts by schema per hour: %w", err)
		}
		return nil
	})
	return out, err
}

func checkTallyWindow(window time.Duration) error {
	if window < time.Hour || window > MaxTallyWindow {
		return Errorf(ErrInvalid, "tally window %s is invalid: want from 1h to %s", window, MaxTallyWindow)
	}
	return nil
}
