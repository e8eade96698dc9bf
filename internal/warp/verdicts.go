package warp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	case VerdictSpinning:
		return l.LastProgressAt.Add(p.SpinAfter)
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
		batch, n, err := s.recordVerdictBatch(ctx, now)
		if err != nil {
			return VerdictPassResult{Changes: out}, err
		}
		// Only committed changes are reported.
		out = append(out, batch...)
		if n < verdictBatch {
			break
		}
	}
	alarms, err := s.hostAlarms(ctx, now)
	return VerdictPassResult{Changes: out, Alarms: alarms}, err
}

// recordVerdictBatch records the verdicts of up to verdictBatch due
// leases in one transaction; n is how many were due.
func (s *Service) recordVerdictBatch(ctx context.Context, now time.Time) (batch []VerdictChange, n int, err error) {
	err = s.store.Update(ctx, func(tx Tx) error {
		batch = batch[:0] // a store may run fn again
		leases, err := tx.VerdictDueLeases(ctx, now, verdictBatch)
		if err != nil {
			return fmt.Errorf("verdict-due leases: %w", err)
		}
		n = len(leases)
		counts := hostCounts{}
		for _, l := range leases {
			ch, c, ok := s.cfg.Policy.RecordVerdict(Ticket{ID: l.Ticket}, l, now)
			ids, err := s.writeCounting(ctx, tx, &ch, counts)
			if err != nil {
				return err
			}
			if ok {
				c.EventID = ids[0]
				batch = append(batch, c)
			}
		}
		if err := counts.flush(ctx, tx); err != nil {
			return err
		}
		// The hosts to tally are kept with the changes, in the same
		// transaction: a pass that fails after this commit leaves them
		// for the next one, which finds no change of its own for them.
		return addAlarmHosts(ctx, tx, alarmHosts(batch))
	})
	return batch, n, err
}

// hostAlarms tallies the hosts that may have moved, raises and clears
// their alarms, and only then marks this pass's hosts done: the next pass
// looks for the leases that ended from this pass's start, and no longer
// for the hosts this one tallied (changes committed since stay).
func (s *Service) hostAlarms(ctx context.Context, now time.Time) ([]HostAlarmChange, error) {
	tallies, pending, err := s.tallyHosts(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("host alarms: %w", err)
	}
	alarms, err := s.recordAlarms(ctx, tallies, now)
	if err != nil {
		return nil, fmt.Errorf("host alarms: %w", err)
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		if err := tx.SetMeta(ctx, MetaLastVerdictPass, formatTime(now)); err != nil {
			return err
		}
		return removeAlarmHosts(ctx, tx, pending)
	})
	if err != nil {
		return alarms, fmt.Errorf("host alarms: %w", err)
	}
	return alarms, nil
}

// alarmHosts returns the hosts of changes to stalled, unwired or exited:
// the changes that can raise a host's alarm.
func alarmHosts(changes []VerdictChange) []string {
	var hosts []string
	for _, c := range changes {
		switch c.To {
		case VerdictStalled, VerdictUnwired, VerdictExited:
			hosts = append(hosts, c.Host)
		}
	}
	return hosts
}

// readAlarmHosts returns the hosts MetaAlarmHostsPending holds. A value
// that does not parse is read as none (the next changes rewrite it).
func readAlarmHosts(ctx context.Context, tx Tx) ([]string, error) {
	v, err := tx.Meta(ctx, MetaAlarmHostsPending)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read hosts to tally: %w", err)
	}
	var hosts []string
	if json.Unmarshal([]byte(v), &hosts) != nil {
		return nil, nil
	}
	return hosts, nil
}

func writeAlarmHosts(ctx context.Context, tx Tx, hosts []string) error {
	sort.Strings(hosts)
	b, err := json.Marshal(slices.Compact(hosts))
	if err != nil {
		return err
	}
	if err := tx.SetMeta(ctx, MetaAlarmHostsPending, string(b)); err != nil {
		return fmt.Errorf("store hosts to tally: %w", err)
	}
	return nil
}

// editAlarmHosts rewrites MetaAlarmHostsPending as edit returns it.
func editAlarmHosts(ctx context.Context, tx Tx, edit func(hosts []string) []string) error {
	old, err := readAlarmHosts(ctx, tx)
	if err != nil {
		return err
	}
	return writeAlarmHosts(ctx, tx, edit(old))
}

// addAlarmHosts adds hosts to MetaAlarmHostsPending.
func addAlarmHosts(ctx context.Context, tx Tx, hosts []string) error {
	if len(hosts) == 0 {
		return nil
	}
	return editAlarmHosts(ctx, tx, func(old []string) []string { return append(old, hosts...) })
}

// removeAlarmHosts removes done from MetaAlarmHostsPending, keeping the
// hosts added since they were read.
func removeAlarmHosts(ctx context.Context, tx Tx, done []string) error {
	if len(done) == 0 {
		return nil
	}
	gone := map[string]bool{}
	for _, h := range done {
		gone[h] = true
	}
	return editAlarmHosts(ctx, tx, func(old []string) []string {
		return slices.DeleteFunc(old, func(h string) bool { return gone[h] })
	})
}

// tallyHosts tallies, for the fleet alarm, the held leases of every host
// with a verdict change to tally (MetaAlarmHostsPending: this pass's and
// those a failed pass left), of every host whose leases ended since the
// last pass and of every host in alarm. It returns the pending hosts it
// read, which the pass clears once the alarms are recorded.
func (s *Service) tallyHosts(ctx context.Context, now time.Time) (map[string]*hostTally, []string, error) {
	in, err := s.readTallyInputs(ctx)
	if err != nil {
		return nil, nil, err
	}
	tallies := map[string]*hostTally{}
	for _, h := range s.hostsToTally(in) {
		if err := s.tallyHost(ctx, h, now, tallies); err != nil {
			return nil, nil, err
		}
	}
	return tallies, in.pending, nil
}

// tallyInputs is what the pass reads to choose the hosts it tallies.
type tallyInputs struct {
	alarms  map[string]HostAlarmState
	pending []string // MetaAlarmHostsPending
	ended   []string // hosts of the leases that ended since the last pass
	counts  []HostVerdictCount
}

// readTallyInputs reads them on a snapshot: every host's counts are
// thousands of rows at fleet scale, and inside Update SQLite's one writer
// — with the heartbeats queued behind it — would wait while they are read.
func (s *Service) readTallyInputs(ctx context.Context) (tallyInputs, error) {
	var in tallyInputs
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if in.alarms, err = readAlarms(ctx, tx); err != nil {
			return err
		}
		if in.pending, err = readAlarmHosts(ctx, tx); err != nil {
			return err
		}
		if in.counts, err = tx.VerdictCounts(ctx); err != nil {
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
		if in.ended, err = tx.EndedHosts(ctx, since); err != nil {
			return fmt.Errorf("hosts of ended leases: %w", err)
		}
		return nil
	})
	return in, err
}

// hostsToTally returns, in order, the pending and ended hosts whose counts
// can reach the thresholds, and every host in alarm. Every lease stale
// within the window is stalled, unwired or silent now (recorded so by the
// pass that just ran), so their number bounds a host's stale count from
// above.
func (s *Service) hostsToTally(in tallyInputs) []string {
	held, stale := map[string]int64{}, map[string]int64{}
	for _, c := range in.counts {
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
	hosts := map[string]bool{}
	for _, h := range append(slices.Clone(in.pending), in.ended...) {
		if s.cfg.HookAlarm.alarmed(hostTally{held: int(held[h]), stale: int(stale[h])}) {
			hosts[h] = true
		}
	}
	for h := range in.alarms {
		hosts[h] = true
	}
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	return names
}

// tallyHost tallies host h's held leases into tallies[h] (made when h
// holds any), hostsBatch leases a read.
func (s *Service) tallyHost(ctx context.Context, h string, now time.Time, tallies map[string]*hostTally) error {
	after := ""
	for {
		var leases []Lease
		err := s.store.View(ctx, func(tx Tx) error {
			var err error
			leases, err = tx.HeldLeases(ctx, h, after, hostsBatch)
			return err
		})
		if err != nil {
			return fmt.Errorf("held leases of %s: %w", h, err)
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
			return nil
		}
	}
}
