package warp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// The fleet alarm: a broken activity hook — an agent upgrade that
// changed the hook contract, a gyrum binary moved away — turns every lease
// of a host stale at about the same time. One stale lease is an idle
// agent; most of a host's leases going stale within one stall window is the
// hook. The sweep-time verdict pass then records a global host-alarm event
// and keeps the alarm in the database (meta key MetaHostAlarms), so
// replicas agree and a restart does not raise it again; it records
// host-alarm-cleared when activity returns.

// Defaults of the fleet alarm.
const (
	DefaultHookAlarmRatio = 0.8
	DefaultHookAlarmMin   = 3
)

// HookAlarm holds the thresholds of the fleet alarm: it is raised for a
// host when at least Min of its held leases, and at least Ratio of them,
// turned stale within the last stall window.
type HookAlarm struct {
	Ratio float64
	Min   int
}

// DefaultHookAlarm returns the documented thresholds (80 %, at least 3).
func DefaultHookAlarm() HookAlarm {
	return HookAlarm{Ratio: DefaultHookAlarmRatio, Min: DefaultHookAlarmMin}
}

// Validate reports an ErrInvalid error for thresholds that cannot work.
func (a HookAlarm) Validate() error {
	if math.IsNaN(a.Ratio) || a.Ratio <= 0 || a.Ratio > 1 {
		return Errorf(ErrInvalid, "hook alarm ratio must be in (0, 1], got %v", a.Ratio)
	}
	if a.Min < 1 {
		return Errorf(ErrInvalid, "hook alarm minimum must be at least 1 lease, got %d", a.Min)
	}
	return nil
}

// Event kinds of the fleet alarm; both are global events (no ticket).
const (
	EventHostAlarm        EventKind = "host-alarm"
	EventHostAlarmCleared EventKind = "host-alarm-cleared"
)

// Reasons a host alarm clears.
const (
	AlarmClearedActivity = "activity-returned" // a lease of the host shows hook-backed activity again
	AlarmClearedHostGone = "host-gone"         // no held lease and no heartbeat within the adoption window
)

// MetaHostAlarms is the meta key holding the raised host alarms as JSON.
const MetaHostAlarms = "host_alarms"

// HostAlarmState is a raised alarm as stored.
type HostAlarmState struct {
	Since   time.Time `json:"since"`
	EventID int64     `json:"event_id"`
	Leases  int       `json:"leases"` // held leases of the host when raised
	Stale   int       `json:"stale"`  // of which turned stale within the window
}

// HostAlarmChange is one alarm the verdict pass raised or cleared.
type HostAlarmChange struct {
	Host    string
	Raised  bool // false: cleared
	At      time.Time
	Since   time.Time // when the alarm was raised (At for a raise)
	Leases  int
	Stale   int
	Reason  string // cleared only
	EventID int64
}

// AlarmMessage is the operator's text of a raised alarm on host.
func AlarmMessage(host string) string { return "activity hook likely broken on " + host }

// StaleSince reports when l turned stalled or unwired while its loop was
// still heartbeating, if it has and has not recovered: the earlier of the
// stall start (progress + stall threshold) and, for hook_seen no, the
// unwired start (claim + stall threshold), provided the lease was not
// silent by then. A lease that went silent before it went stale (its loop
// or host died) is not stale in this sense: it says nothing about the
// hook. Exited and ended leases never are.
func (p Policy) StaleSince(l Lease, now time.Time) (time.Time, bool) {
	if !l.Held() || l.Exit != "" {
		return time.Time{}, false
	}
	var at time.Time
	ok := false
	if s := ProgressAt(l).Add(p.StallAfter); s.Before(now) {
		at, ok = s, true
	}
	if l.HookSeen == HookNo {
		if s := l.ClaimedAt.Add(p.StallAfter); s.Before(now) && (!ok || s.Before(at)) {
			at, ok = s, true
		}
	}
	if !ok || at.After(l.LastHeartbeatAt.Add(p.SilentAfter)) {
		return time.Time{}, false
	}
	return at, true
}

// hostTally is what the verdict pass learns about one host.
type hostTally struct {
	held     int       // held leases without an exit report
	stale    int       // of which turned stale within the last stall window
	activeAt time.Time // latest hook-backed activity of an active lease
}

// tally adds held lease l (with derived verdict v) to t.
func (p Policy) tally(t *hostTally, l Lease, v Verdict, now time.Time) {
	if v == VerdictExited || v == VerdictNone {
		return
	}
	t.held++
	if at, ok := p.StaleSince(l, now); ok && !at.Before(now.Add(-p.StallAfter)) {
		t.stale++
	}
	// Activity counts as returned only from a v2 loop that reports a wired
	// (or unreported) hook: a claim or a loop that says the hook is silent
	// proves nothing.
	if v == VerdictActive && l.SchemaVersion == 2 && l.HookSeen != HookNo && l.LastActivityAt.After(t.activeAt) {
		t.activeAt = l.LastActivityAt
	}
}

// alarmed reports whether a tally meets the thresholds.
func (a HookAlarm) alarmed(t hostTally) bool {
	return t.stale >= a.Min && float64(t.stale) >= a.Ratio*float64(t.held)-1e-9
}

func readAlarms(ctx context.Context, tx Tx) (map[string]HostAlarmState, error) {
	v, err := tx.Meta(ctx, MetaHostAlarms)
	if errors.Is(err, ErrNotFound) {
		return map[string]HostAlarmState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read host alarms: %w", err)
	}
	out := map[string]HostAlarmState{}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("read host alarms: %w", err)
	}
	return out, nil
}

// recordAlarms raises and clears host alarms from the tallies of one
// verdict pass, in one transaction. The pass runs on one replica at a time
// (the expiry job's sweep lock), so the read-modify-write of the meta row
// does not race another pass.
func (s *Service) recordAlarms(ctx context.Context, tallies map[string]*hostTally, now time.Time) ([]HostAlarmChange, error) {
	// The common case, no alarm raised and none due, costs a read only,
	// not SQLite's one writer.
	alarms, err := s.HostAlarms(ctx)
	if err != nil {
		return nil, err
	}
	due := len(alarms) > 0
	for _, t := range tallies {
		due = due || s.cfg.HookAlarm.alarmed(*t)
	}
	if !due {
		return nil, nil
	}
	var out []HostAlarmChange
	err = s.store.Update(ctx, func(tx Tx) error {
		alarms, err := readAlarms(ctx, tx)
		if err != nil {
			return err
		}
		heard, err := heardHosts(ctx, tx, tallies, alarms, now)
		if err != nil {
			return err
		}
		out = s.cfg.HookAlarm.transitions(tallies, alarms, heard, now)
		if len(out) == 0 {
			return nil
		}
		for i := range out {
			c := &out[i]
			if c.EventID, err = tx.AppendEvent(ctx, c.event()); err != nil {
				return fmt.Errorf("append host alarm event of %s: %w", c.Host, err)
			}
			if c.Raised {
				alarms[c.Host] = HostAlarmState{Since: c.Since, EventID: c.EventID, Leases: c.Leases, Stale: c.Stale}
			} else {
				delete(alarms, c.Host)
			}
		}
		b, err := json.Marshal(alarms)
		if err != nil {
			return fmt.Errorf("encode host alarms: %w", err)
		}
		return tx.SetMeta(ctx, MetaHostAlarms, string(b))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// heardHosts returns the hosts that sent a heartbeat within the adoption
// window, read only when a raised alarm's host holds no lease any more
// (the one case transitions needs it); nil otherwise.
func heardHosts(ctx context.Context, tx Tx, tallies map[string]*hostTally, alarms map[string]HostAlarmState, now time.Time) (map[string]bool, error) {
	need := false
	for h := range alarms {
		need = need || tallies[h] == nil || tallies[h].held == 0
	}
	if !need {
		return nil, nil
	}
	ad, err := tx.Adoption(ctx, now.Add(-DefaultAdoptionWindow))
	if err != nil {
		return nil, fmt.Errorf("adoption: %w", err)
	}
	heard := map[string]bool{}
	for _, a := range ad {
		heard[a.Host] = true
	}
	return heard, nil
}

// transitions decides, from one pass's tallies, the raised alarms and the
// hosts heard within the adoption window, which alarms to raise and which
// to clear, in host order: raise when a host meets the thresholds; clear
// when it no longer does and either hook-backed activity returned after
// the alarm was raised, or the host holds no lease and was not heard from.
// Anything else keeps the alarm: nothing proves the hook works again.
func (a HookAlarm) transitions(tallies map[string]*hostTally, alarms map[string]HostAlarmState, heard map[string]bool, now time.Time) []HostAlarmChange {
	hosts := make([]string, 0, len(tallies)+len(alarms))
	for h := range tallies {
		hosts = append(hosts, h)
	}
	for h := range alarms {
		if tallies[h] == nil {
			hosts = append(hosts, h)
		}
	}
	sort.Strings(hosts)
	var out []HostAlarmChange
	for _, h := range hosts {
		t := hostTally{}
		if tallies[h] != nil {
			t = *tallies[h]
		}
		st, raised := alarms[h]
		switch {
		case !raised && a.alarmed(t):
			out = append(out, HostAlarmChange{Host: h, Raised: true, At: now, Since: now, Leases: t.held, Stale: t.stale})
		case raised && !a.alarmed(t):
			reason := ""
			if t.activeAt.After(st.Since) {
				reason = AlarmClearedActivity
			} else if t.held == 0 && !heard[h] {
				reason = AlarmClearedHostGone
			}
			if reason != "" {
				out = append(out, HostAlarmChange{Host: h, At: now, Since: st.Since, Leases: t.held, Stale: t.stale, Reason: reason})
			}
		}
	}
	return out
}

// event is the global event that records c.
func (c HostAlarmChange) event() Event {
	if c.Raised {
		return NewEvent("", 0, c.At, HostAlarmData{Host: c.Host, Leases: c.Leases, Stale: c.Stale, Message: AlarmMessage(c.Host)})
	}
	return NewEvent("", 0, c.At, HostAlarmClearedData{Host: c.Host, Leases: c.Leases, Stale: c.Stale, Reason: c.Reason, Since: c.Since.UTC()})
}

// HostAlarms returns the raised host alarms by host.
func (s *Service) HostAlarms(ctx context.Context) (map[string]HostAlarmState, error) {
	var out map[string]HostAlarmState
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		out, err = readAlarms(ctx, tx)
		return err
	})
	return out, err
}

// HostStatus is one host of the hosts overview: its held leases by
// verdict, its hook health, its schema adoption and its alarm.
type HostStatus struct {
	Host     string
	Leases   int // held leases
	Verdicts map[Verdict]int
	// HookSeen counts held leases by what their loop reports about the hook.
	HookSeen map[HookSeen]int
	// Adoption is the host's line of the adoption query; nil when the host
	// sent no heartbeat within the window.
	Adoption *HostAdoption
	// Alarm is the raised alarm; nil when none.
	Alarm *HostAlarmState
}

// hostsBatch is how many held leases one read of a host's leases takes.
const hostsBatch = 1000

// Hosts returns every host that holds a lease, heartbeated within window or
// is in alarm, sorted by name. Its leases by verdict and by hook health
// come from heldCounts, so its cost follows the hosts and what is due, not
// the held leases.
func (s *Service) Hosts(ctx context.Context, window time.Duration) ([]HostStatus, error) {
	if window <= 0 {
		return nil, Errorf(ErrInvalid, "adoption window must be positive, got %s", window)
	}
	if err := s.FlushCounts(ctx); err != nil {
		return nil, fmt.Errorf("write adoption counts: %w", err)
	}
	now := s.now()
	byHost := hostStatuses{}
	err := s.store.View(ctx, func(tx Tx) error {
		held, err := s.heldCounts(ctx, tx, now)
		if err != nil {
			return err
		}
		a, err := s.adoptionTx(ctx, tx, window, now)
		if err != nil {
			return err
		}
		alarms, err := readAlarms(ctx, tx)
		if err != nil {
			return err
		}
		byHost.add(held, a, alarms)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]HostStatus, 0, len(byHost))
	for _, st := range byHost {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, nil
}

// hostStatuses gathers the hosts overview by host.
type hostStatuses map[string]*HostStatus

// get returns h's status, made with every verdict at 0.
func (hs hostStatuses) get(h string) *HostStatus {
	st := hs[h]
	if st == nil {
		st = &HostStatus{Host: h, Verdicts: map[Verdict]int{}, HookSeen: map[HookSeen]int{}}
		for _, v := range Verdicts() {
			st.Verdicts[v] = 0
		}
		hs[h] = st
	}
	return st
}

// add adds the held-lease counts, the adoption and the alarms by host.
func (hs hostStatuses) add(held map[string]*hostHeld, a Adoption, alarms map[string]HostAlarmState) {
	for h, c := range held {
		st := hs.get(h)
		for v, n := range c.verdicts {
			st.Verdicts[v] += int(n)
			st.Leases += int(n)
		}
		for k, n := range c.hooks {
			st.HookSeen[k] += int(n)
		}
	}
	for _, h := range a.Hosts {
		hs.get(h.Host).Adoption = &h
	}
	for h, al := range alarms {
		hs.get(h).Alarm = &al
	}
}
