package warp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// verdictBatch is how many claimed tickets one transaction of the verdict
// pass reads: small enough that SQLite's single writer is not held for long.
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
// Cost: the pass reads, per verdict, the claimed tickets within that
// verdict's column bounds (Tx.Tickets with VerdictBounds, paged by Seq) and
// writes only the leases that changed; each change re-reads its ticket and
// lease locked, so a heartbeat committed in between is never overwritten.
func (s *Service) RecordVerdicts(ctx context.Context) ([]VerdictChange, error) {
	p, err := s.VerdictPass(ctx)
	return p.Changes, err
}

// VerdictPassResult is what one sweep-time verdict pass recorded.
type VerdictPassResult struct {
	Changes []VerdictChange
	Alarms  []HostAlarmChange
}

// VerdictPass is RecordVerdicts followed by the fleet alarm: while it reads
// every held lease for the verdicts, it tallies per host the held leases,
// those that turned stalled or unwired within the last stall window
// (Policy.StaleSince) and the latest hook-backed activity, then raises and
// clears host alarms (events host-alarm, host-alarm-cleared; state in
// MetaHostAlarms). A lease whose columns change between two of the pass's
// batches may be tallied under both verdicts: the counts are those of one
// pass, not of one instant.
func (s *Service) VerdictPass(ctx context.Context) (VerdictPassResult, error) {
	now := s.now()
	var out []VerdictChange
	tallies := map[string]*hostTally{}
	for _, v := range Verdicts() {
		b := s.cfg.Policy.Bounds(v, now)
		f := TicketFilter{State: TicketClaimed, Verdict: &b, Limit: verdictBatch}
		for {
			var n int
			var lastSeq int64
			var batch []VerdictChange
			var seen []Lease
			err := s.store.Update(ctx, func(tx Tx) error {
				batch, seen, lastSeq = batch[:0], seen[:0], f.AfterSeq // a store may run fn again
				rows, err := tx.Tickets(ctx, f)
				if err != nil {
					return fmt.Errorf("list %s leases: %w", v, err)
				}
				n = len(rows)
				for _, r := range rows {
					lastSeq = r.Ticket.Seq
					if r.Lease == nil || !r.Lease.Held() {
						continue
					}
					seen = append(seen, *r.Lease)
					if recordedVerdict(*r.Lease) == v {
						continue
					}
					c, ok, err := s.recordVerdictTx(ctx, tx, r.Ticket.ID, now)
					if err != nil {
						return err
					}
					if ok {
						batch = append(batch, c)
					}
				}
				return nil
			})
			if err != nil {
				return VerdictPassResult{Changes: out}, err
			}
			// Only committed changes are reported.
			out = append(out, batch...)
			for _, l := range seen {
				t := tallies[l.Host]
				if t == nil {
					t = &hostTally{}
					tallies[l.Host] = t
				}
				s.cfg.Policy.tally(t, l, v, now)
			}
			f.AfterSeq = lastSeq
			if n < verdictBatch {
				break
			}
		}
	}
	alarms, err := s.recordAlarms(ctx, tallies, now)
	if err != nil {
		return VerdictPassResult{Changes: out}, fmt.Errorf("host alarms: %w", err)
	}
	return VerdictPassResult{Changes: out, Alarms: alarms}, nil
}

// recordVerdictTx re-reads ticket id and its lease locked and records the
// lease's verdict at now when it differs from the recorded one.
func (s *Service) recordVerdictTx(ctx context.Context, tx Tx, id string, now time.Time) (VerdictChange, bool, error) {
	t, err := tx.Ticket(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return VerdictChange{}, false, nil
	}
	if err != nil {
		return VerdictChange{}, false, fmt.Errorf("read ticket %s: %w", id, err)
	}
	if t.State != TicketClaimed || t.Epoch == 0 {
		return VerdictChange{}, false, nil
	}
	l, err := tx.Lease(ctx, id, t.Epoch)
	if err != nil {
		return VerdictChange{}, false, fmt.Errorf("read lease %s/%d: %w", id, t.Epoch, err)
	}
	to, from := s.cfg.Policy.Verdict(l, now), recordedVerdict(l)
	if to == VerdictNone || to == from {
		return VerdictChange{}, false, nil
	}
	c := VerdictChange{Ticket: id, Epoch: l.Epoch, From: from, To: to, At: now,
		Since: s.cfg.Policy.verdictSince(l, to), Agent: l.Agent, Host: l.Host}
	c.EventID, err = tx.AppendEvent(ctx, Event{Ticket: id, Epoch: l.Epoch, Kind: EventVerdictChanged, At: now,
		Data: map[string]any{"from": string(from), "to": string(to), "since": formatTime(c.Since),
			"agent": l.Agent, "host": l.Host}})
	if err != nil {
		return VerdictChange{}, false, fmt.Errorf("append verdict event %s/%d: %w", id, l.Epoch, err)
	}
	l.RecordedVerdict = to
	if err := tx.UpdateLease(ctx, l); err != nil {
		return VerdictChange{}, false, fmt.Errorf("record verdict %s/%d: %w", id, l.Epoch, err)
	}
	return c, true, nil
}
