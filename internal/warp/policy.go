package warp

import "time"

// Defaults of the server side (docs/DESIGN.md section 2).
const (
	DefaultLeaseWindow       = 30 * time.Minute
	DefaultStallAfter        = 15 * time.Minute
	DefaultHeartbeatInterval = 240 * time.Second
	DefaultSilentAfter       = 2*DefaultHeartbeatInterval + 60*time.Second
	DefaultSweepInterval     = 30 * time.Second
	DefaultStartupGrace      = 10 * time.Minute
	DefaultAdoptionWindow    = 24 * time.Hour
	// DefaultSpinAfter is the progress deadline of the verdict spinning
	// (issue 44): an active lease whose work has not progressed for
	// longer is spinning. It only reports; --progress-deadline enforces.
	DefaultSpinAfter = 45 * time.Minute
)

// Policy holds the durations that decide expiry and verdicts.
type Policy struct {
	LeaseWindow  time.Duration
	StallAfter   time.Duration
	SilentAfter  time.Duration
	StartupGrace time.Duration
	// SpinAfter is the progress deadline of the verdict spinning; 0: no
	// lease is ever spinning.
	SpinAfter time.Duration
	// ProgressDeadline, when positive (warp serve --progress-deadline),
	// lapses a looping lease this long after its last progress, and a
	// spinning one this long after it or once it is spinning, whichever
	// is later: reason no-progress. 0 (the default): the verdicts only
	// report.
	ProgressDeadline time.Duration
}

// DefaultPolicy returns the documented defaults.
func DefaultPolicy() Policy {
	return Policy{
		LeaseWindow:  DefaultLeaseWindow,
		StallAfter:   DefaultStallAfter,
		SilentAfter:  DefaultSilentAfter,
		StartupGrace: DefaultStartupGrace,
		SpinAfter:    DefaultSpinAfter,
	}
}

// MaxPolicyDuration bounds each of a policy's durations: times a lease
// stores are nanoseconds since 1970 in 64 bits (until 2262), and a
// threshold or window past a few years would put them beyond that.
const MaxPolicyDuration = 10 * 365 * 24 * time.Hour

// verdictKey names the thresholds verdicts and their due times follow;
// Init recomputes the held leases' due times when it changes.
func (p Policy) verdictKey() string {
	return "stall=" + p.StallAfter.String() + " silent=" + p.SilentAfter.String() + " spin=" + p.SpinAfter.String()
}

// Validate reports an ErrInvalid error for a policy that cannot work.
func (p Policy) Validate() error {
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"lease window", p.LeaseWindow}, {"stall threshold", p.StallAfter}, {"silent threshold", p.SilentAfter}, {"startup grace", p.StartupGrace}, {"spin threshold", p.SpinAfter}, {"progress deadline", p.ProgressDeadline}} {
		if d.d > MaxPolicyDuration {
			return Errorf(ErrInvalid, "%s must be at most %s (10 years), got %s", d.name, MaxPolicyDuration, d.d)
		}
	}
	switch {
	case p.LeaseWindow <= 0:
		return Errorf(ErrInvalid, "lease window must be positive, got %s", p.LeaseWindow)
	case p.StallAfter <= 0:
		return Errorf(ErrInvalid, "stall threshold must be positive, got %s", p.StallAfter)
	case p.SilentAfter <= 0:
		return Errorf(ErrInvalid, "silent threshold must be positive, got %s", p.SilentAfter)
	case p.StartupGrace < 0:
		return Errorf(ErrInvalid, "startup grace must not be negative, got %s", p.StartupGrace)
	case p.SpinAfter < 0:
		return Errorf(ErrInvalid, "spin threshold must not be negative, got %s", p.SpinAfter)
	case p.ProgressDeadline < 0:
		return Errorf(ErrInvalid, "progress deadline must not be negative, got %s", p.ProgressDeadline)
	}
	return nil
}

// MaxRetryGap is the longest a heartbeat loop may leave between two
// attempts, told to loops in every answer: 90 % of the startup grace, so a
// loop that failed during an outage of any length retries before the grace
// of the restart ends. 0 when there is no grace.
func (p Policy) MaxRetryGap() time.Duration { return p.StartupGrace * 9 / 10 }

// Effective returns the time a lease's expiry counts from under mode, and
// whether that time came from the heartbeat rather than activity alone
// (the v1 fallback or legacy mode).
//
//   - legacy: last_heartbeat_at; for a lease whose latest heartbeat was v2,
//     refreshed_at, the last heartbeat that claimed progress (a stale report
//     keeps the loop's heartbeat fresh but claims none).
//   - transition: last_activity_at when the latest heartbeat was v2;
//     MAX(last_activity_at, last_heartbeat_at) otherwise (v1, or the claim only).
//   - activity: last_activity_at.
func Effective(mode Mode, l Lease) (at time.Time, fromHeartbeat bool) {
	switch mode {
	case ModeLegacy:
		if l.SchemaVersion == 2 && !l.RefreshedAt.IsZero() {
			return l.RefreshedAt, true
		}
		return l.LastHeartbeatAt, true
	case ModeActivity:
		return l.LastActivityAt, false
	default: // transition
		if l.SchemaVersion == 2 {
			return l.LastActivityAt, false
		}
		if l.LastHeartbeatAt.After(l.LastActivityAt) {
			return l.LastHeartbeatAt, true
		}
		return l.LastActivityAt, false
	}
}

// ExpiresAt returns when l expires under mode with this policy: a lease
// window after its effective time, or earlier when the progress deadline
// lapses it first (ProgressLapseAt).
func (p Policy) ExpiresAt(mode Mode, l Lease) time.Time {
	at, _ := Effective(mode, l)
	exp := at.Add(p.LeaseWindow)
	if pl := p.ProgressLapseAt(l); !pl.IsZero() && pl.Before(exp) {
		return pl
	}
	return exp
}

// ProgressLapseAt returns when the progress deadline lapses l: for a
// looping lease its last progress + ProgressDeadline; for any other, the
// later of that and the moment it turns spinning. Zero without a
// deadline, or for a lease whose loop never reported progress. A lease
// that stalls or goes silent first lapses as such, on activity.
func (p Policy) ProgressLapseAt(l Lease) time.Time {
	if p.ProgressDeadline <= 0 || l.LastProgressAt.IsZero() {
		return time.Time{}
	}
	at := l.LastProgressAt.Add(p.ProgressDeadline)
	if l.Loop.Looping() {
		return at
	}
	if p.SpinAfter <= 0 {
		return time.Time{}
	}
	if spin := l.LastProgressAt.Add(p.SpinAfter + time.Nanosecond); spin.After(at) {
		return spin
	}
	return at
}

// LapseReasonOf is LapseReason under this policy: no-progress for a
// lease the progress deadline lapsed before activity would have.
func (p Policy) LapseReasonOf(mode Mode, l Lease) (reason string, fallbackExtended bool) {
	if pl := p.ProgressLapseAt(l); l.Exit == "" && !pl.IsZero() {
		if at, _ := Effective(mode, l); pl.Before(at.Add(p.LeaseWindow)) {
			return LapseNoProgress, false
		}
	}
	return LapseReason(mode, l)
}

// expiryKey names what held leases' expiry follows besides the mode;
// Init recomputes their expiry when it changes. Without a progress
// deadline it is the lease window alone, as before issue 44.
func (p Policy) expiryKey() string {
	if p.ProgressDeadline <= 0 {
		return p.LeaseWindow.String()
	}
	return p.LeaseWindow.String() + " progress=" + p.ProgressDeadline.String() + " spin=" + p.SpinAfter.String()
}

// LapseReason returns why l lapses under mode, and whether the v1 fallback
// kept it alive longer than activity alone would have.
func LapseReason(mode Mode, l Lease) (reason string, fallbackExtended bool) {
	at, fromHeartbeat := Effective(mode, l)
	fallbackExtended = mode == ModeTransition && fromHeartbeat && at.After(l.LastActivityAt)
	switch {
	case l.Exit != "":
		reason = LapseAgentExited
	case fromHeartbeat:
		reason = LapseNoHeartbeat
	default:
		reason = LapseNoActivity
	}
	return reason, fallbackExtended
}

// Verdict is the derived health of a claimed ticket's lease.
type Verdict string

// Verdicts, from best to worst news. VerdictNone is for tickets without a
// held lease.
const (
	VerdictNone    Verdict = ""
	VerdictActive  Verdict = "active"
	VerdictStalled Verdict = "stalled"
	// VerdictLooping: the loop reports that the agent's latest calls
	// repeat (the same call with the same result; issue 44).
	VerdictLooping Verdict = "looping"
	// VerdictSpinning: active, but the work has not progressed for the
	// progress deadline (Policy.SpinAfter).
	VerdictSpinning Verdict = "spinning"
	// VerdictUnwired: the loop says the agent's activity hook has not fired
	// since it started, and the claim is older than the stall threshold —
	// the agent may be working, but nothing proves it.
	VerdictUnwired Verdict = "unwired"
	VerdictSilent  Verdict = "silent"
	VerdictExited  Verdict = "exited"
)

// Verdicts returns every verdict of a held lease, in the order of
// precedence of Policy.Verdict (the first that applies wins).
func Verdicts() []Verdict {
	return []Verdict{VerdictExited, VerdictSilent, VerdictUnwired, VerdictStalled, VerdictLooping, VerdictSpinning, VerdictActive}
}

// ParseVerdict returns the verdict named s or an ErrInvalid error.
func ParseVerdict(s string) (Verdict, error) {
	switch v := Verdict(s); v {
	case VerdictActive, VerdictStalled, VerdictUnwired, VerdictSilent, VerdictExited, VerdictLooping, VerdictSpinning:
		return v, nil
	}
	return "", Errorf(ErrInvalid, "unknown verdict %q: want active, looping, spinning, stalled, unwired, silent or exited", s)
}

// UnwiredFix is what an operator does about an unwired lease on host: the
// text the CLI and the dashboard show next to the verdict.
func UnwiredFix(host string) string {
	if host == "" {
		host = "the agent's host"
	}
	return "run `gyrum doctor` on host " + host
}

// ProgressAt is the time the verdict measures activity from: last_activity_at
// for a lease whose latest heartbeat was v2; for a v1 (or not yet
// heartbeating) lease the later of activity and heartbeat, since a v1 host
// cannot report anything better. It does not depend on the expiry mode.
func ProgressAt(l Lease) time.Time {
	at, _ := Effective(ModeTransition, l)
	return at
}

// Verdict derives the verdict of a held lease at now. Thresholds are
// exclusive: an age equal to the threshold is still the better verdict.
//
// Order of precedence: exited, silent, unwired, stalled, looping,
// spinning, active. Looping and spinning judge an agent that is active:
// one stalled or silent has a worse problem. Exited and
// silent are facts the server holds itself (an exit report; heartbeats
// stopped), and they decide what happens to the lease next, so they win.
// Unwired — the loop reports hook_seen false and the claim is older than
// the stall threshold — beats stalled because it names the cause: without
// a hook there can be no activity, so "stalled" would send the operator
// after an idle agent instead of a broken hook. A lease whose loop sends
// no hook fields (HookUnknown: a loop without hook health) is never
// unwired: verdicts stay what they were.
func (p Policy) Verdict(l Lease, now time.Time) Verdict {
	if !l.Held() {
		return VerdictNone
	}
	switch {
	case l.Exit != "":
		return VerdictExited
	case now.Sub(l.LastHeartbeatAt) > p.SilentAfter:
		return VerdictSilent
	case l.HookSeen == HookNo && now.Sub(l.ClaimedAt) > p.StallAfter:
		return VerdictUnwired
	case now.Sub(ProgressAt(l)) > p.StallAfter:
		return VerdictStalled
	case l.Loop.Looping():
		return VerdictLooping
	case p.spinning(l, now):
		return VerdictSpinning
	}
	return VerdictActive
}

// spinning reports whether l's work has not progressed for longer than
// the progress deadline. A lease whose loop never reported progress
// (LastProgressAt zero: a loop from before issue 44) is never spinning.
func (p Policy) spinning(l Lease, now time.Time) bool {
	return p.SpinAfter > 0 && !l.LastProgressAt.IsZero() && now.Sub(l.LastProgressAt) > p.SpinAfter
}

// VerdictBounds expresses a verdict as conditions on stored columns so a
// store can filter by verdict with indexed comparisons. A zero time means
// no bound.
type VerdictBounds struct {
	Exited *bool
	// HeartbeatBefore: last_heartbeat_at < t. HeartbeatFrom: >= t.
	HeartbeatBefore, HeartbeatFrom time.Time
	// ProgressBefore: progress_at < t. ProgressFrom: >= t.
	ProgressBefore, ProgressFrom time.Time
	// HookNo: hook_seen = 'no' when true, hook_seen <> 'no' when false.
	HookNo *bool
	// ClaimedBefore: claimed_at < t.
	ClaimedBefore time.Time
	// NotUnwiredAt, when not zero, excludes the leases that are unwired at
	// that stall cut: NOT (hook_seen = 'no' AND claimed_at < t), that is
	// hook_seen <> 'no' OR claimed_at >= t.
	NotUnwiredAt time.Time
	// Looping: loop_count > 0 when true, loop_count = 0 when false.
	Looping *bool
	// SpinningBefore: last_progress_at <> 0 AND last_progress_at < t.
	// NotSpinningAt: last_progress_at = 0 OR last_progress_at >= t.
	SpinningBefore, NotSpinningAt time.Time
}

// Bounds returns the column conditions equivalent to p.Verdict(l, now) == v
// for held leases.
func (p Policy) Bounds(v Verdict, now time.Time) VerdictBounds {
	yes, no := true, false
	silentCut := now.Add(-p.SilentAfter)
	stallCut := now.Add(-p.StallAfter)
	switch v {
	case VerdictExited:
		return VerdictBounds{Exited: &yes}
	case VerdictSilent:
		return VerdictBounds{Exited: &no, HeartbeatBefore: silentCut}
	case VerdictUnwired:
		return VerdictBounds{Exited: &no, HeartbeatFrom: silentCut, HookNo: &yes, ClaimedBefore: stallCut}
	case VerdictStalled:
		return VerdictBounds{Exited: &no, HeartbeatFrom: silentCut, ProgressBefore: stallCut, NotUnwiredAt: stallCut}
	}
	b := VerdictBounds{Exited: &no, HeartbeatFrom: silentCut, ProgressFrom: stallCut, NotUnwiredAt: stallCut, Looping: &no}
	switch v {
	case VerdictLooping:
		b.Looping = &yes
	case VerdictSpinning:
		if p.SpinAfter <= 0 {
			b.SpinningBefore = time.Unix(0, 1) // no lease: none has progress before 1970
			break
		}
		b.SpinningBefore = now.Add(-p.SpinAfter)
	default:
		if p.SpinAfter > 0 {
			b.NotSpinningAt = now.Add(-p.SpinAfter)
		}
	}
	return b
}
