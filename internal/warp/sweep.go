// The sweep and its grace: lapsing expired leases, and every grace rule —
// the startup grace a server start opens, the gap grace a gap in the
// sweeps opens, which leases a grace protects (Due), and how graces are
// stored.

package warp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Init prepares the database for this server start: it stores the initial
// mode when none is set, recomputes expiry when the lease window changed,
// and opens the startup grace: leases refreshed before now do not lapse
// before now + grace, so a warp outage does not mass-expire a fleet.
//
// A clock behind the last sweep the database records (stepped back while
// warp was down, or before this start) is put ahead to it first, so the
// leases the database holds are not kept longer by the step.
func (s *Service) Init(ctx context.Context) error {
	return s.store.Update(ctx, func(tx Tx) error {
		last, err := s.lastSweep(ctx, tx)
		if err != nil {
			return err
		}
		s.clock.notBefore(last.At, "the last sweep the database records")
		now := s.now()
		mode, err := s.modeTx(ctx, tx)
		if errors.Is(err, ErrNotFound) {
			mode = s.cfg.InitialMode
			if err := tx.SetMeta(ctx, MetaMode, string(mode)); err != nil {
				return fmt.Errorf("store initial mode: %w", err)
			}
		} else if err != nil {
			return err
		}
		// A changed lease window moves every held lease's expiry; changed
		// verdict thresholds move their verdict-due times, which the
		// verdict pass, the counts and the verdict listings rely on.
		var what recomputed
		for _, m := range []struct {
			key, val string
			flag     recomputed
		}{
			{MetaLeaseWindow, s.cfg.Policy.expiryKey(), recomputeExpiry},
			{MetaVerdictThresholds, s.cfg.Policy.verdictKey(), recomputeVerdictDue},
		} {
			old, err := tx.Meta(ctx, m.key)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("read %s: %w", m.key, err)
			}
			if old != m.val {
				what |= m.flag
				if err := tx.SetMeta(ctx, m.key, m.val); err != nil {
					return fmt.Errorf("store %s: %w", m.key, err)
				}
			}
		}
		if what != 0 {
			if err := s.recompute(ctx, tx, mode, now, what); err != nil {
				return err
			}
		}
		g, open := s.cfg.Policy.StartGrace(now, last, s.cfg.Instance, s.sweepInterval())
		if !open {
			s.log.Info("no startup grace: another replica swept moments ago, so the fleet was served",
				"last_sweep", last.At, "swept_by", last.By, "sweep_interval", s.sweepInterval())
			return nil
		}
		return writeGrace(ctx, tx, g, now)
	})
}

// LastSweep is the last sweep the database records: when, and by which
// instance (Config.Instance; empty before it was recorded). The zero
// LastSweep: none recorded.
type LastSweep struct {
	At time.Time
	By string
}

// StartGrace is the startup grace a server start of instance self at now
// writes, open false when it writes none and leaves the grace as it is.
// No grace configured (0) ends the one an earlier start opened: it is
// this start's setting that the sweep follows. A grace protects the
// leases whose loops could not reach warp during an outage; while another
// replica sweeps (within the last two sweep intervals) there was none,
// and a replica that restarts, even over and over, must not keep every
// dead agent's lease from lapsing. A start of the instance that swept
// last is a restart, which opens the grace — for the leases not yet due at
// the last sweep (Grace.DueBefore): a dead lease lapses within window +
// grace + a sweep of its last evidence however often warp restarts, since
// every run's sweeps move the last sweep on.
func (p Policy) StartGrace(now time.Time, last LastSweep, self string, sweepInterval time.Duration) (g Grace, open bool) {
	g = p.NewGrace(now, last.At)
	if g.From.IsZero() {
		return Grace{From: now, Until: now}, true
	}
	if !last.At.IsZero() && last.By != self && !now.Before(last.At) && now.Sub(last.At) < 2*sweepInterval {
		return Grace{}, false
	}
	return g, true
}

func (s *Service) sweepInterval() time.Duration {
	if s.cfg.SweepInterval > 0 {
		return s.cfg.SweepInterval
	}
	return DefaultSweepInterval
}

// lastSweep reads MetaLastSweep and the instance that swept
// (MetaLastSweeper); the zero LastSweep when there is no sweep time (or it
// does not parse).
func (s *Service) lastSweep(ctx context.Context, tx Tx) (LastSweep, error) {
	v, err := tx.Meta(ctx, MetaLastSweep)
	if errors.Is(err, ErrNotFound) {
		return LastSweep{}, nil
	}
	if err != nil {
		return LastSweep{}, fmt.Errorf("read last sweep: %w", err)
	}
	at, err := parseTime(v)
	if err != nil {
		return LastSweep{}, nil
	}
	by, err := tx.Meta(ctx, MetaLastSweeper)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return LastSweep{}, fmt.Errorf("read last sweeper: %w", err)
	}
	return LastSweep{At: at, By: by}, nil
}

// SweepResult reports one sweep.
type SweepResult struct {
	Lapsed   []Lease // the leases this sweep ended
	Duration time.Duration
	// VerdictChanges are the changes of the verdict pass (RecordVerdicts)
	// that the expiry job runs after each sweep; Sweep itself leaves it empty.
	VerdictChanges []VerdictChange
	// HostAlarms are the host alarms that pass raised or cleared.
	HostAlarms []HostAlarmChange
}

// Sweep lapses every held lease whose expiry has passed (Policy's Lapse),
// in batches, and records why each one lapsed. During the startup grace,
// leases last refreshed before the server start are left alone
// (Grace.Due).
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	start := time.Now()
	now := s.now()
	var res SweepResult
	if err := s.openGapGrace(ctx, now); err != nil {
		return res, err
	}
	for {
		lapsed, n, err := s.lapseBatch(ctx, now)
		if err != nil {
			return res, err
		}
		// Only committed lapses are reported, as they now stand (lapsed,
		// with reason and fallback).
		res.Lapsed = append(res.Lapsed, lapsed...)
		if n < sweepBatch {
			break
		}
	}
	err := s.recordSweep(ctx, now)
	res.Duration = time.Since(start)
	return res, err
}

// recordSweep records the sweep at now (last_sweep, by this instance) and
// prunes what it prunes, in a transaction of its own. The sweep's
// transactions are not bound by DatabaseTimeout: after an outage its
// prunes may take longer, and a sweep that could never record itself would
// reopen the gap grace at every tick. The job's stop ends them.
func (s *Service) recordSweep(ctx context.Context, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		if err := tx.SetMeta(ctx, MetaLastSweep, formatTime(now)); err != nil {
			return err
		}
		if err := tx.SetMeta(ctx, MetaLastSweeper, s.cfg.Instance); err != nil {
			return err
		}
		if err := tx.PruneHeartbeats(ctx, now.Add(-2*DefaultAdoptionWindow)); err != nil {
			return err
		}
		return tx.PruneVerdictCounts(ctx, pruneVerdictBatch)
	})
}

// openGapGrace opens a grace (Policy.GapGrace) when the last recorded
// sweep is more than three sweep intervals before now: whatever kept warp
// from sweeping also kept it from recording heartbeats, and the leases
// must not lapse for time warp could not observe. It runs before the
// sweep lapses anything, in a transaction of its own, so the sweep that
// follows the gap already reads the grace.
func (s *Service) openGapGrace(ctx context.Context, now time.Time) error {
	return s.store.Update(ctx, func(tx Tx) error {
		last, err := s.lastSweep(ctx, tx)
		if err != nil {
			return err
		}
		g, open := s.cfg.Policy.GapGrace(now, last, s.sweepInterval())
		if !open {
			return nil
		}
		s.log.Warn("warp could not sweep for a while (frozen, its database unwritable or unreachable, or the clock stepped): "+
			"leases not yet due when the gap began are kept until the grace ends",
			"gap", now.Sub(last.At).Round(time.Millisecond), "gap_began", last.At, "grace_until", g.Until)
		return writeGrace(ctx, tx, g, now)
	})
}

// lapseBatch lapses up to sweepBatch due leases in one transaction; n is
// how many were due. The mode and the grace are read in the transaction
// that lapses: a mode change that commits during the sweep moves
// expires_at, and the lapse's reason must follow the same mode.
func (s *Service) lapseBatch(ctx context.Context, now time.Time) (lapsed []Lease, n int, err error) {
	err = s.store.Update(ctx, func(tx Tx) error {
		lapsed = lapsed[:0] // a store may run fn again
		mode, err := s.currentMode(ctx, tx)
		if err != nil {
			return err
		}
		cur, prev, err := readGraces(ctx, tx)
		if err != nil {
			return err
		}
		leases, err := tx.DueLeases(ctx, Due(now, cur, prev), sweepBatch)
		if err != nil {
			return fmt.Errorf("due leases: %w", err)
		}
		n = len(leases)
		counts := hostCounts{}
		for _, l := range leases {
			t, err := tx.Ticket(ctx, l.Ticket)
			if err != nil {
				return fmt.Errorf("read ticket %s: %w", l.Ticket, err)
			}
			ch := s.cfg.Policy.Lapse(mode, t, l, now)
			if _, err := s.writeCounting(ctx, tx, &ch, counts); err != nil {
				return err
			}
			lapsed = append(lapsed, ch.Lease)
		}
		return counts.flush(ctx, tx)
	})
	return lapsed, n, err
}

// pruneVerdictBatch bounds how many count rows at 0 one sweep drops (a
// host's verdict and hook counts once its leases ended): the rows that
// hosts gone by the thousand leave are dropped over a few sweeps instead
// of holding the writer for seconds in one (1M rows: 1.4 s on SQLite).
const pruneVerdictBatch = 10_000

// writeGrace stores grace g, opened at now (Service.Init, a sweep after a
// gap): replicas sharing the database and the sweeps read it back with
// readGraces. The grace it replaces stays in force beside it until its own
// end — what it protected is protected still — unless g is empty (no grace
// configured), which ends both.
func writeGrace(ctx context.Context, tx Tx, g Grace, now time.Time) error {
	cur, _, err := readGraces(ctx, tx)
	if err != nil {
		return err
	}
	prev := Grace{}
	if now.Before(cur.Until) && g.Until.After(now) {
		prev = cur
	}
	for _, m := range []struct {
		keys [3]string
		g    Grace
	}{
		{[3]string{MetaGraceFrom, MetaGraceUntil, MetaGraceDueBefore}, g},
		{[3]string{MetaPrevGraceFrom, MetaPrevGraceUntil, MetaPrevGraceDueBefore}, prev},
	} {
		for i, at := range []time.Time{m.g.From, m.g.Until, m.g.DueBefore} {
			v := ""
			if !at.IsZero() {
				v = formatTime(at)
			}
			if err := tx.SetMeta(ctx, m.keys[i], v); err != nil {
				return fmt.Errorf("store grace: %w", err)
			}
		}
	}
	return nil
}

// readGraces returns the grace stored last and the one it replaced while
// that was in force; the zero Grace for one not stored (or unreadable).
func readGraces(ctx context.Context, tx Tx) (cur, prev Grace, err error) {
	if cur, err = readGrace(ctx, tx, MetaGraceFrom, MetaGraceUntil, MetaGraceDueBefore); err != nil {
		return Grace{}, Grace{}, err
	}
	prev, err = readGrace(ctx, tx, MetaPrevGraceFrom, MetaPrevGraceUntil, MetaPrevGraceDueBefore)
	return cur, prev, err
}

func readGrace(ctx context.Context, tx Tx, keys ...string) (Grace, error) {
	var g Grace
	for i, at := range []*time.Time{&g.From, &g.Until, &g.DueBefore} {
		v, err := tx.Meta(ctx, keys[i])
		if errors.Is(err, ErrNotFound) || err == nil && v == "" {
			if i < 2 {
				return Grace{}, nil // no grace stored
			}
			continue // no DueBefore (stored by an older warp): protect all
		}
		if err != nil {
			return Grace{}, fmt.Errorf("read grace: %w", err)
		}
		if *at, err = parseTime(v); err != nil {
			return Grace{}, nil
		}
	}
	return g, nil
}

// Grace is the grace in force after warp could not serve the fleet — a
// server start, or a gap in its sweeps (a freeze, a database it could not
// write or reach, a clock step): leases last refreshed before From do not
// lapse before Until, so an outage does not mass-expire a fleet whose
// loops could not reach it. It protects only the leases that were not yet
// due when the gap began (DueBefore, when known): a lease already due then
// was dead before the outage, and repeated gaps or restarts cannot keep it.
type Grace struct{ From, Until, DueBefore time.Time }

// NewGrace returns the grace of a server that starts, or recovers from a
// gap that began at gapStart (zero: unknown), at now.
func (p Policy) NewGrace(now, gapStart time.Time) Grace {
	if p.StartupGrace <= 0 {
		return Grace{}
	}
	g := Grace{From: now, Until: now.Add(p.StartupGrace)}
	if !gapStart.IsZero() && !gapStart.After(now) {
		g.DueBefore = gapStart
	}
	return g
}

// GapGrace is the grace a sweep at now opens after a gap: when the last
// recorded sweep (by any replica) is more than three sweep intervals old,
// warp could not observe the fleet for that time — frozen, its database
// unwritable or unreachable, or the clock stepped forward — and the loops
// could not extend their leases. open is false when there was no gap (or
// no sweep was ever recorded: a start's grace covers that). The grace
// starts from the gap's end and protects what was not due at its start.
func (p Policy) GapGrace(now time.Time, last LastSweep, sweepInterval time.Duration) (g Grace, open bool) {
	if last.At.IsZero() || now.Sub(last.At) <= 3*sweepInterval {
		return Grace{}, false
	}
	g = p.NewGrace(now, last.At)
	return g, !g.From.IsZero()
}

// Due returns the sweep's selection at now under the graces gs (the
// zero Grace and ended ones count for nothing): held leases whose expiry
// has passed, but for those a grace in force protects — last refreshed
// before its From and not yet due at its DueBefore.
func Due(now time.Time, gs ...Grace) DueFilter {
	f := DueFilter{Now: now}
	for _, g := range gs {
		if !g.From.IsZero() && now.Before(g.Until) {
			f.Protect = append(f.Protect, Protection{RefreshedBefore: g.From, ExpiresAfter: g.DueBefore})
		}
	}
	return f
}

// DueFilter selects the leases a sweep lapses: held, ExpiresAt <= Now,
// and protected by none of Protect.
type DueFilter struct {
	Now     time.Time
	Protect []Protection
}

// Match reports whether lease l is selected by f (what a store's query
// must return).
func (f DueFilter) Match(l Lease) bool {
	if !l.Held() || l.ExpiresAt.After(f.Now) {
		return false
	}
	for _, p := range f.Protect {
		if l.RefreshedAt.Before(p.RefreshedBefore) && (p.ExpiresAfter.IsZero() || l.ExpiresAt.After(p.ExpiresAfter)) {
			return false
		}
	}
	return true
}
