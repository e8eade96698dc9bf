package warp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// verdictBatch is how many due leases one transaction of the verdict pass
// reads: small enough that SQLite's single writer is not held for long.
const verdictBatch = 500

// VerdictChange is one verdict transition the verdict pass recorded.
type VerdictChange struct {
	Ticket string
	Epoch  int64
	From   Verdict // the verdict recorded before; active for a lease never recorded
	To     Verdict
	// At is when the pass recorded the change; Since is when the lease's
	// columns say it happened (threshold crossed, heartbeat or exit report).
	At, Since time.Time
	Agent     string
	Host      string
	EventID   int64
}

// recordedVerdict is the verdict last recorded for l. A lease starts
// active (a claim counts as heartbeat and activity), so a lease never
// recorded is active and needs no write until it changes.
func recordedVerdict(l Lease) Verdict {
	if l.RecordedVerdict == VerdictNone {
		return VerdictActive
	}
	return l.RecordedVerdict
}

// verdictSince returns when l's derived verdict v began, from its columns.
func (p Policy) verdictSince(l Lease, v Verdict) time.Time {
	switch v {
	case VerdictExited:
		return l.ExitedAt
	case VerdictSilent:
		return l.LastHeartbeatAt.Add(p.SilentAfter)
	case VerdictStalled:
		return ProgressAt(l).Add(p.StallAfter)
	case VerdictUnwired:
		return l.ClaimedAt.Add(p.StallAfter)
	default: // back to active: the heartbeat that brought fresh activity
		return l.LastHeartbeatAt
	}
}

// RecordVerdicts is the sweep-time verdict pass: for every held lease whose
// derived verdict differs from the one last recorded, it appends an
// EventVerdictChanged event {from, to, since, agent, host} and stores the
// new RecordedVerdict, so a ticket's timeline shows when its agent went
// stalled or silent and when it came back. It returns the changes in the
// order recorded.
//
// Cost: O(changes). Every write of a held lease stores when its verdict
// next differs from the recorded one (Policy.VerdictDue, indexed); the pass
// reads only the leases due by now (Tx.VerdictDueLeases, locked, skipping
// those a heartbeat holds: they stay due), records each change and moves
// each lease's due time to its next change.
func (s *Service) RecordVerdicts(ctx context.Context) ([]VerdictChange, error) {
	p, err := s.VerdictPass(ctx)
	return p.Changes, err
}

// VerdictPassResult is what one sweep-time verdict pass recorded.
type VerdictPassResult struct {
	Changes []VerdictChange
	Alarms  []HostAlarmChange
}

// VerdictPass is RecordVerdicts followed by the fleet alarm: for the hosts
// that may have moved, it tallies the host's held leases, those that
// turned stalled or unwired within the last stall window
// (Policy.StaleSince) and the latest hook-backed activity, then raises and
// clears host alarms (events host-alarm, host-alarm-cleared; state in
// MetaHostAlarms).
//
// The hosts that may have moved: an alarm is raised when a host's stale
// share reaches the thresholds, and that share only grows when one of its
// leases turns stalled or unwired (a verdict change) or when its held
// count shrinks (a lease exits — a change to exited — or ends); an alarm
// clears only on returned activity or the host going away, which are
// checked for every host in alarm at every pass. So the pass tallies the
// hosts with a change to stalled, unwired or exited and the hosts whose
// leases ended since the last pass — of those, only the ones whose held
// counts per recorded verdict could meet the thresholds — and the hosts
// in alarm; any other host's alarm state is what a tally would leave it
// at. The cost is O(changes + hosts + held leases of the hosts tallied).
func (s *Service) VerdictPass(ctx context.Context) (VerdictPassResult, error) {
	now := s.now()
	var out []VerdictChange
	for {
		var n int
		var batch []VerdictChange
		err := s.store.Update(ctx, func(tx Tx) error {
			batch = batch[:0] // a store may run fn again
			leases, err := tx.VerdictDueLeases(ctx, now, verdictBatch)
			if err != nil {
				return fmt.Errorf("verdict-due leases: %w", err)
			}
			n = len(leases)
			counts := hostCounts{}
			for _, l := range leases {
				ch, c, ok := s.cfg.Policy.RecordVerdict(Ticket{ID: l.Ticket}, l, now)
				ids, err := s.writeCounting(ctx, tx, ch, counts)
				if err != nil {
					return err
				}
				if ok {
					c.EventID = ids[0]
					batch = append(batch, c)
				}
			}
			return counts.flush(ctx, tx)
		})
		if err != nil {
			return VerdictPassResult{Changes: out}, err
		}
		// Only committed changes are reported.
		out = append(out, batch...)
		if n < verdictBatch {
			break
		}
	}
	tallies, err := s.tallyHosts(ctx, out, now)
	if err != nil {
		return VerdictPassResult{Changes: out}, fmt.Errorf("host alarms: %w", err)
	}
	alarms, err := s.recordAlarms(ctx, tallies, now)
	if err != nil {
		return VerdictPassResult{Changes: out}, fmt.Errorf("host alarms: %w", err)
	}
	return VerdictPassResult{Changes: out, Alarms: alarms}, nil
}

// tallyHosts tallies, for the fleet alarm, the held leases of every host
// with a verdict change in changes and of every host in alarm.
func (s *Service) tallyHosts(ctx context.Context, changes []VerdictChange, now time.Time) (map[string]*hostTally, error) {
	hosts := map[string]bool{}
	for _, c := range changes {
		switch c.To {
		case VerdictStalled, VerdictUnwired, VerdictExited:
			hosts[c.Host] = true
		}
	}
	var alarms map[string]HostAlarmState
	var ended []string
	var counts []HostVerdictCount
	// Read on a snapshot: every host's counts are thousands of rows at
	// fleet scale, and inside Update SQLite's one writer — with the
	// heartbeats queued behind it — would wait while they are read.
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if alarms, err = readAlarms(ctx, tx); err != nil {
			return err
		}
		if counts, err = tx.VerdictCounts(ctx); err != nil {
			return fmt.Errorf("verdict counts: %w", err)
		}
		// Fewer held leases can raise an alarm: the hosts whose leases
		// ended since the last pass are tallied too.
		since := time.Time{}
		if v, err := tx.Meta(ctx, MetaLastVerdictPass); err == nil {
			if at, err := parseTime(v); err == nil {
				since = at
			}
		} else if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("read last verdict pass: %w", err)
		}
		if ended, err = tx.EndedHosts(ctx, since); err != nil {
			return fmt.Errorf("hosts of ended leases: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The next pass looks for the leases that ended from this pass's start.
	if err := s.store.Update(ctx, func(tx Tx) error { return tx.SetMeta(ctx, MetaLastVerdictPass, formatTime(now)) }); err != nil {
		return nil, err
	}
	for _, h := range ended {
		hosts[h] = true
	}
	// A host not in alarm is tallied only if its counts can reach the
	// thresholds: every lease stale within the window is stalled, unwired
	// or silent now (recorded so by the pass that just ran), so their
	// number bounds the stale count from above.
	held, stale := map[string]int64{}, map[string]int64{}
	for _, c := range counts {
		if _, hook := HookCountOf(c.Verdict); hook {
			continue // the same leases again, by hook health
		}
		if c.Verdict != VerdictExited {
			held[c.Host] += c.N
		}
		switch c.Verdict {
		case VerdictStalled, VerdictUnwired, VerdictSilent:
			stale[c.Host] += c.N
		}
	}
	for h := range hosts {
		if !s.cfg.HookAlarm.alarmed(hostTally{held: int(held[h]), stale: int(stale[h])}) {
			delete(hosts, h)
		}
	}
	for h := range alarms {
		hosts[h] = true
	}
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	tallies := map[string]*hostTally{}
	for _, h := range names {
		after := ""
		for {
			var leases []Lease
			err := s.store.View(ctx, func(tx Tx) error {
				var err error
				leases, err = tx.HeldLeases(ctx, h, after, hostsBatch)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("held leases of %s: %w", h, err)
			}
			for _, l := range leases {
				t := tallies[h]
				if t == nil {
					t = &hostTally{}
					tallies[h] = t
				}
				s.cfg.Policy.tally(t, l, s.cfg.Policy.Verdict(l, now), now)
				after = l.Ticket
			}
			if len(leases) < hostsBatch {
				break
			}
		}
	}
	return tallies, nil
}
