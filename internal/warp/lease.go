package warp

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

// The lease core: every rule a lease obeys, as pure functions of the
// ticket, the lease, the request, the time and the expiry mode. Nothing
// here reads a clock, a context or a database. The Service validates a
// request, reads the rows, calls one of these and writes what it returns
// (Change); the stores only keep rows and indexes. Each transition has a
// table test in lease_test.go that reads like the decision record.

// Change is what one transition asks the Service to write, in order:
// the lease (inserted when InsertLease, else updated when LeaseDirty), the
// ticket when TicketDirty, then the events.
type Change struct {
	Ticket      Ticket
	TicketDirty bool
	Lease       Lease
	InsertLease bool
	LeaseDirty  bool
	Events      []Event
	// Counts is the change to the held-lease counts per recorded verdict
	// and per hook health (HookCountKey) (Store.AddVerdictCounts): a claim
	// adds an active lease, an end removes one of its recorded verdict, a
	// recorded change moves one; likewise for what the loop reports about
	// the hook.
	Counts map[Verdict]int64
	// EndedFrom is, for a change that ends a held lease, that lease as it
	// was held (its verdict at the end goes into the attempt's record).
	EndedFrom *Lease
}

// hookCountPrefix starts the count keys of hook health.
const hookCountPrefix = "hook-seen:"

// HookCountKey is the key under which Store.AddVerdictCounts keeps a
// host's held leases whose loop reports h about the hook, beside the
// verdicts: the hosts overview reads both from the counts, not from every
// held lease. It never equals a verdict.
func HookCountKey(h HookSeen) Verdict { return Verdict(hookCountPrefix + string(h)) }

// HookCountOf returns the hook health counted under key, ok false when key
// is a verdict.
func HookCountOf(key Verdict) (h HookSeen, ok bool) {
	v, ok := strings.CutPrefix(string(key), hookCountPrefix)
	return HookSeen(v), ok
}

// NewHeldCounts is what n new held leases whose loops report h about the
// hook add to their host's counts (Store.AddVerdictCounts): a claim's
// lease is active until the verdict pass says otherwise.
func NewHeldCounts(h HookSeen, n int64) map[Verdict]int64 {
	return map[Verdict]int64{VerdictActive: n, HookCountKey(h): n}
}

// addCounts adds b to a (a may be nil) and returns it.
func addCounts(a, b map[Verdict]int64) map[Verdict]int64 {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = make(map[Verdict]int64, len(b))
	}
	for k, n := range b {
		a[k] += n
	}
	return a
}

// Fence is the fencing check of a write that names epoch on ticket t: it
// returns the epoch whose lease the write applies to (epoch 0 means the
// current lease: v1 heartbeats, operator releases), or ErrLeaseEnded for a
// ticket never claimed, or ErrStaleEpoch for an epoch that is not the
// ticket's current one. disclose lets the message name the current epoch
// (not to agents).
func Fence(t Ticket, epoch int64, disclose bool) (int64, error) {
	if epoch == 0 {
		if t.Epoch == 0 {
			return 0, Errorf(ErrLeaseEnded, "ticket %s has no lease: claim it first", t.ID)
		}
		return t.Epoch, nil
	}
	if epoch != t.Epoch {
		if !disclose {
			return 0, Errorf(ErrStaleEpoch, "epoch %d of ticket %s is stale: the ticket has a newer lease", epoch, t.ID)
		}
		return 0, Errorf(ErrStaleEpoch, "epoch %d of ticket %s is stale: the current epoch is %d", epoch, t.ID, t.Epoch)
	}
	return epoch, nil
}

// CheckWrite says whether caller c may write to lease l (heartbeat v1 or
// v2, exit report, release, complete): the lease must be held (else
// ErrLeaseEnded, whose Detail says how it ended — the reason only to the
// holder — so a loop can tell its agent at once) and c must hold it (else
// ErrNotHolder).
func CheckWrite(l Lease, c Caller) error {
	if !l.Held() {
		e := &Error{Kind: ErrLeaseEnded, Message: fmt.Sprintf("lease %d of ticket %s has ended (%s)", l.Epoch, l.Ticket, l.State),
			Detail: map[string]string{DetailLeaseState: string(l.State)}}
		if c.authorize(l) == nil && l.EndReason != "" {
			e.Detail[DetailEndReason] = l.EndReason
		}
		return e
	}
	return c.authorize(l)
}

// authorize says whether c may write to lease l: admins and calls without
// a caller (the zero Caller) always; an agent when it presents the lease's
// secret, or — for a lease claimed by a client that asked for none — when
// it uses the token that claimed. The error never says who holds the lease.
func (c Caller) authorize(l Lease) error {
	if !c.Agent {
		return nil
	}
	if l.SecretHash != "" {
		if c.LeaseSecret != "" && subtle.ConstantTimeCompare([]byte(TokenID(c.LeaseSecret)), []byte(l.SecretHash)) == 1 {
			return nil
		}
		return Errorf(ErrNotHolder, "ticket %s is held by another agent: this request does not carry its lease secret", l.Ticket)
	}
	if subtle.ConstantTimeCompare([]byte(c.Token), []byte(l.Claimant)) == 1 {
		return nil
	}
	return Errorf(ErrNotHolder, "ticket %s is held by another agent", l.Ticket)
}

// discloses reports whether error messages may name a lease's holder and
// epochs to c: not to agents.
func (c Caller) discloses() bool { return !c.Agent }

// Claim makes the lease of a claim on ticket t: the next epoch, held, with
// claim, heartbeat, activity and refresh all at now, bound to the caller's
// token and to secretHash (empty when the client asked for no secret), its
// expiry under mode. holder is t's current lease when t is claimed (for
// the conflict message). A claimed or completed ticket is ErrConflict.
func (p Policy) Claim(mode Mode, t Ticket, holder *Lease, r ClaimRequest, c Caller, secretHash string, now time.Time) (Change, error) {
	switch t.State {
	case TicketClaimed:
		if holder == nil || !c.discloses() {
			return Change{}, Errorf(ErrConflict, "ticket %s is held by another agent: claim another with --next", t.ID)
		}
		return Change{}, Errorf(ErrConflict, "ticket %s is claimed by agent %q on host %q (epoch %d): claim another with --next, or, if that agent is gone, free it with warp release %s --reason REASON", t.ID, holder.Agent, holder.Host, holder.Epoch, t.ID)
	case TicketCompleted:
		return Change{}, Errorf(ErrConflict, "ticket %s is completed: claim another with --next", t.ID)
	case TicketCancelled:
		return Change{}, Errorf(ErrConflict, "ticket %s is cancelled: claim another with --next, or have an operator reopen it (warp ticket reopen %s)", t.ID, t.ID)
	case TicketBlocked:
		return Change{}, Errorf(ErrConflict, "ticket %s is blocked: too many attempts ended without completing (warp ticket show %s lists them); claim another with --next, or have an operator reopen it (warp ticket reopen %s)", t.ID, t.ID, t.ID)
	}
	l := Lease{
		Ticket: t.ID, Epoch: t.Epoch + 1, Agent: r.Agent, Host: r.Host, State: LeaseHeld,
		ClaimedAt: now, LastHeartbeatAt: now, LastActivityAt: now, RefreshedAt: now,
		Claimant: c.Token, SecretHash: secretHash,
	}
	l.ExpiresAt = p.ExpiresAt(mode, l)
	l.VerdictDueAt = p.VerdictDue(l, now)
	t.State, t.Epoch, t.UpdatedAt = TicketClaimed, l.Epoch, now
	return Change{
		Ticket: t, TicketDirty: true, Lease: l, InsertLease: true,
		Counts: NewHeldCounts(l.HookSeen, 1),
		Events: []Event{NewEvent(t.ID, l.Epoch, now, ClaimedData{Agent: l.Agent, Host: l.Host})},
	}, nil
}

// HeartbeatHost is the host a heartbeat is counted under for adoption: the
// one it names, else the lease's, else "unknown".
func HeartbeatHost(h Heartbeat, l Lease) string {
	switch {
	case h.Host != "":
		return h.Host
	case l.Host != "":
		return l.Host
	}
	return "unknown"
}

// Heartbeat applies heartbeat h (already validated, fenced and authorised)
// to held lease l of ticket t at now under mode:
//
//   - every heartbeat records last_heartbeat_at and its schema version;
//   - v2 moves last_activity_at to received − activity_age_s when that is
//     later (activity never goes back; received is Heartbeat.ReceivedAt,
//     or now), and records in_flight and the hook fields;
//   - it extends the lease (refreshed_at = now, expiry recomputed) unless it
//     is v1 in activity mode or a v2 stale report: those are recorded, the
//     answer says why, and the expiry stays where activity puts it;
//   - the first v2 heartbeat of a lease records first-v2-heartbeat;
//   - the first exit report records exit-report, and with releaseOnExit
//     ends the lease (released, reason exit-report) at once.
func (p Policy) Heartbeat(mode Mode, t Ticket, l Lease, h Heartbeat, releaseOnExit bool, now time.Time) (Change, HeartbeatResult) {
	host := HeartbeatHost(h, l)
	res := HeartbeatResult{Ticket: t.ID, Epoch: l.Epoch, Mode: mode, Extended: true, MaxRetryGap: p.MaxRetryGap()}
	ch := Change{Ticket: t}
	firstV2 := h.SchemaVersion == 2 && l.FirstV2At.IsZero()
	l.LastHeartbeatAt = now
	l.SchemaVersion = h.SchemaVersion
	if h.SchemaVersion == 2 {
		ch.Counts = applyReport(&l, h, now)
	} else {
		l.InFlight = ""
	}
	switch {
	case h.SchemaVersion == 1 && mode == ModeActivity:
		res.Extended = false
		res.Note = "activity mode: v1 heartbeats are recorded but no longer extend a lease; upgrade this host's loop to schema_version 2"
	case h.SchemaVersion == 2 && h.Stale:
		res.Extended = false
		res.Note = "stale report: the loop lives but the agent shows no activity; the lease is not extended"
	default:
		l.RefreshedAt = now
	}
	l.ExpiresAt = p.ExpiresAt(mode, l)
	if firstV2 {
		l.FirstV2At = now
		ch.Events = append(ch.Events, NewEvent(t.ID, l.Epoch, now, FirstV2HeartbeatData{Host: host}))
	}
	if h.SchemaVersion == 2 && h.Exit != "" && l.Exit == "" {
		l.Exit, l.ExitedAt = h.Exit, now
		ch.Events = append(ch.Events, NewEvent(t.ID, l.Epoch, now, ExitReportData{Exit: h.Exit, Host: host}))
		if releaseOnExit {
			end := End(t, l, LeaseReleased, ReleaseExitReport, "", now)
			end.Events = append(ch.Events, end.Events...)
			end.Counts = addCounts(end.Counts, ch.Counts)
			res.ExpiresAt, res.Verdict = now, VerdictExited
			return end, res
		}
	}
	l.VerdictDueAt = p.VerdictDue(l, now)
	ch.Lease, ch.LeaseDirty = l, true
	res.ExpiresAt = l.ExpiresAt
	res.Verdict = p.Verdict(l, now)
	return ch, res
}

// applyReport applies what a v2 heartbeat h reports to lease l, received
// by now: activity and progress counted back from when warp received it
// (never moved back), what is in flight, the hook's health and events, the
// loop. It returns the hook counts' change when the hook's health flips.
func applyReport(l *Lease, h Heartbeat, now time.Time) map[Verdict]int64 {
	var counts map[Verdict]int64
	received := now
	if !h.ReceivedAt.IsZero() && h.ReceivedAt.Before(now) {
		received = h.ReceivedAt
	}
	if act := received.Add(-time.Duration(h.ActivityAge * float64(time.Second))); act.After(l.LastActivityAt) {
		l.LastActivityAt = act
	}
	l.InFlight = h.InFlight
	if h.HookSeen != nil {
		was := l.HookSeen
		l.HookSeen = HookNo
		if *h.HookSeen {
			l.HookSeen = HookYes
		}
		if l.HookSeen != was {
			counts = map[Verdict]int64{HookCountKey(was): -1, HookCountKey(l.HookSeen): 1}
		}
	}
	l.HookEvents = addSaturating(l.HookEvents, h.HookEvents)
	if h.ProgressAge != nil {
		// A loop that reports progress says whether its agent loops
		// each time: no loop field is no loop.
		if at := received.Add(-time.Duration(*h.ProgressAge * float64(time.Second))); at.After(l.LastProgressAt) {
			l.LastProgressAt = at
		}
		l.Loop = Loop{}
		if h.Loop != nil {
			l.Loop = *h.Loop
		}
	}
	return counts
}

// End ends held lease l of ticket t at now: released (the ticket reopens,
// event released with reason) or completed (the ticket completes, event
// completed with prURL).
func End(t Ticket, l Lease, state LeaseState, reason, prURL string, now time.Time) Change {
	counts := map[Verdict]int64{recordedVerdict(l): -1, HookCountKey(l.HookSeen): -1}
	held := l
	l.State, l.EndedAt, l.EndReason, l.PRURL, l.VerdictDueAt = state, now, reason, prURL, time.Time{}
	var data EventData = ReleasedData{Reason: reason, Agent: l.Agent, Host: l.Host}
	t.State = TicketOpen
	if state == LeaseCompleted {
		data = CompletedData{PRURL: prURL, Agent: l.Agent, Host: l.Host}
		t.State = TicketCompleted
	}
	t.UpdatedAt = now
	return Change{Ticket: t, TicketDirty: true, Lease: l, LeaseDirty: true, Counts: counts, EndedFrom: &held,
		Events: []Event{NewEvent(t.ID, l.Epoch, now, data)}}
}

// CancelReason is the end reason of a lease its ticket's cancel released:
// "cancelled", or "cancelled: REASON" with the operator's reason.
func CancelReason(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	return "cancelled: " + reason
}

// Cancel cancels ticket t at now: an open ticket turns cancelled; a
// claimed one too, its held lease holder released first (end reason
// CancelReason, so its loop is told how it ended, and the event
// released). The event cancelled {from, reason} follows. A cancelled
// ticket is never claimed (Claim, claim-next's open tickets only) until
// it is reopened. A completed ticket is ErrConflict (reopen it first), as
// is one already cancelled.
func Cancel(t Ticket, holder *Lease, reason string, now time.Time) (Change, error) {
	var ch Change
	switch t.State {
	case TicketOpen, TicketBlocked:
		ch = Change{Ticket: t}
	case TicketClaimed:
		if holder == nil || !holder.Held() {
			return Change{}, fmt.Errorf("cancel ticket %s: claimed without a held lease", t.ID)
		}
		ch = End(t, *holder, LeaseReleased, CancelReason(reason), "", now)
	case TicketCompleted:
		return Change{}, Errorf(ErrConflict, "ticket %s is completed: nothing to cancel (reopen it first to cancel it: warp ticket reopen %s)", t.ID, t.ID)
	case TicketCancelled:
		return Change{}, Errorf(ErrConflict, "ticket %s is already cancelled", t.ID)
	default:
		return Change{}, fmt.Errorf("cancel ticket %s: unknown state %q", t.ID, t.State)
	}
	ch.Ticket.State, ch.Ticket.UpdatedAt, ch.TicketDirty = TicketCancelled, now, true
	ch.Events = append(ch.Events, NewEvent(t.ID, t.Epoch, now, CancelledData{From: t.State, Reason: reason}))
	return ch, nil
}

// Reopen reopens completed, cancelled or blocked ticket t at now: it turns open,
// to be claimed again with the next epoch (its leases, all ended, stay as
// they ended), and the event reopened {from, reason} is recorded. An open
// ticket is ErrConflict, and so is a claimed one: taking a ticket from its
// holder is a release.
func Reopen(t Ticket, reason string, now time.Time) (Change, error) {
	switch t.State {
	case TicketCompleted, TicketCancelled, TicketBlocked:
	case TicketOpen:
		return Change{}, Errorf(ErrConflict, "ticket %s is already open", t.ID)
	case TicketClaimed:
		return Change{}, Errorf(ErrConflict, "ticket %s is claimed: reopen is for completed, cancelled and blocked tickets; to take it from its holder, release its lease (warp release %s)", t.ID, t.ID)
	default:
		return Change{}, fmt.Errorf("reopen ticket %s: unknown state %q", t.ID, t.State)
	}
	from := t.State
	t.State, t.UpdatedAt = TicketOpen, now
	return Change{Ticket: t, TicketDirty: true, Events: []Event{NewEvent(t.ID, t.Epoch, now, ReopenedData{From: from, Reason: reason})}}, nil
}

// Lapse ends held lease l, whose expiry has passed, at now under mode: it
// records why (LapseReason) and whether the v1 fallback kept it alive, and
// reopens ticket t when l is still its current claim.
func Lapse(mode Mode, t Ticket, l Lease, now time.Time) Change {
	reason, fb := LapseReason(mode, l)
	return lapse(reason, fb, t, l, now)
}

// Lapse is Lapse under p: the reason is no-progress when p's progress
// deadline lapsed l (LapseReasonOf).
func (p Policy) Lapse(mode Mode, t Ticket, l Lease, now time.Time) Change {
	reason, fb := p.LapseReasonOf(mode, l)
	return lapse(reason, fb, t, l, now)
}

func lapse(reason string, fb bool, t Ticket, l Lease, now time.Time) Change {
	counts := map[Verdict]int64{recordedVerdict(l): -1, HookCountKey(l.HookSeen): -1}
	held := l
	l.State, l.EndedAt, l.EndReason, l.FallbackExtended, l.VerdictDueAt = LeaseLapsed, now, reason, fb, time.Time{}
	ch := Change{Ticket: t, Lease: l, LeaseDirty: true, Counts: counts, EndedFrom: &held}
	if t.Epoch == l.Epoch && t.State == TicketClaimed {
		ch.Ticket.State, ch.Ticket.UpdatedAt, ch.TicketDirty = TicketOpen, now, true
	}
	ch.Events = []Event{NewEvent(l.Ticket, l.Epoch, now, LapsedData{Reason: reason, FallbackExtended: fb, Agent: l.Agent, Host: l.Host,
		LastActivityAt: l.LastActivityAt.UTC(), LastHeartbeatAt: l.LastHeartbeatAt.UTC()})}
	return ch
}

// RecordVerdict is the verdict pass's step for a due lease l at now: when
// its verdict differs from the one last recorded, the lease with
// RecordedVerdict set, the verdict-changed event {from, to, since, agent,
// host} and the change (EventID filled by the Service once written), ok
// true. Either way the lease's VerdictDueAt moves to its next change, so
// the returned Change is always written.
func (p Policy) RecordVerdict(t Ticket, l Lease, now time.Time) (ch Change, vc VerdictChange, ok bool) {
	to, from := p.Verdict(l, now), recordedVerdict(l)
	if to != VerdictNone && to != from {
		vc = VerdictChange{Ticket: l.Ticket, Epoch: l.Epoch, From: from, To: to, At: now,
			Since: p.verdictSince(l, to), Agent: l.Agent, Host: l.Host}
		l.RecordedVerdict = to
		ch.Counts = map[Verdict]int64{from: -1, to: 1}
		ch.Events = []Event{NewEvent(l.Ticket, l.Epoch, now, VerdictChangedData{From: from, To: to, Since: vc.Since.UTC(), Agent: l.Agent, Host: l.Host})}
		ok = true
	}
	l.VerdictDueAt = p.VerdictDue(l, now)
	ch.Ticket, ch.Lease, ch.LeaseDirty = t, l, true
	return ch, vc, ok
}

// VerdictDue returns when the verdict pass must next look at held lease l,
// written at now: now when its verdict already differs from the recorded
// one (a heartbeat brought it back, a claim), else just after its next
// change (NextVerdictChange, thresholds being exclusive), zero when it
// never changes on its own. The stores index it, so each pass reads only
// the leases whose verdict changes.
func (p Policy) VerdictDue(l Lease, now time.Time) time.Time {
	if !l.Held() {
		return time.Time{}
	}
	if p.Verdict(l, now) != recordedVerdict(l) {
		return now
	}
	next := p.NextVerdictChange(l, now)
	if next.IsZero() {
		return next
	}
	return next.Add(time.Nanosecond)
}

// NextVerdictChange returns when held lease l's verdict next changes if
// nothing new arrives (no heartbeat, no exit report): the earliest
// threshold after now that its columns cross — silent after the last
// heartbeat + SilentAfter, stalled after progress + StallAfter, unwired
// after the claim + StallAfter for a loop that reports the hook silent.
// Zero when it never changes on its own (exited, silent, ended). A
// threshold is exclusive (Verdict), so the change is visible strictly
// after the returned time.
func (p Policy) NextVerdictChange(l Lease, now time.Time) time.Time {
	if !l.Held() {
		return time.Time{}
	}
	v := p.Verdict(l, now)
	if v == VerdictExited || v == VerdictSilent {
		return time.Time{}
	}
	next := l.LastHeartbeatAt.Add(p.SilentAfter) // → silent
	earlier := func(at time.Time) {
		if !at.Before(now) && at.Before(next) {
			next = at
		}
	}
	switch v {
	case VerdictActive, VerdictLooping, VerdictSpinning:
		earlier(ProgressAt(l).Add(p.StallAfter)) // → stalled
		if l.HookSeen == HookNo {
			earlier(l.ClaimedAt.Add(p.StallAfter)) // → unwired
		}
		if v == VerdictActive && p.SpinAfter > 0 && !l.LastProgressAt.IsZero() && !l.Loop.Looping() {
			earlier(l.LastProgressAt.Add(p.SpinAfter)) // → spinning
		}
	case VerdictStalled:
		if l.HookSeen == HookNo {
			earlier(l.ClaimedAt.Add(p.StallAfter)) // → unwired
		}
	}
	return next
}

// Protection is one grace in force: it keeps a lease last refreshed
// before RefreshedBefore whose expiry is after ExpiresAfter (any expiry
// when that is zero).
type Protection struct {
	RefreshedBefore time.Time
	ExpiresAfter    time.Time
}

// Match reports whether held lease l satisfies the bounds: the rule a
// store's query renders in SQL (internal/leasesql), written out so the
// domain can prove Bounds equal to Verdict without a database.
func (b VerdictBounds) Match(l Lease) bool {
	if !l.Held() {
		return false
	}
	if b.Exited != nil && (l.Exit != "") != *b.Exited {
		return false
	}
	before := func(at, cut time.Time) bool { return cut.IsZero() || at.Before(cut) }
	from := func(at, cut time.Time) bool { return cut.IsZero() || !at.Before(cut) }
	progress := ProgressAt(l)
	if !before(l.LastHeartbeatAt, b.HeartbeatBefore) || !from(l.LastHeartbeatAt, b.HeartbeatFrom) ||
		!before(progress, b.ProgressBefore) || !from(progress, b.ProgressFrom) || !before(l.ClaimedAt, b.ClaimedBefore) {
		return false
	}
	if b.HookNo != nil && (l.HookSeen == HookNo) != *b.HookNo {
		return false
	}
	if !b.NotUnwiredAt.IsZero() && l.HookSeen == HookNo && l.ClaimedAt.Before(b.NotUnwiredAt) {
		return false
	}
	if b.Looping != nil && l.Loop.Looping() != *b.Looping {
		return false
	}
	if !b.SpinningBefore.IsZero() && (l.LastProgressAt.IsZero() || !l.LastProgressAt.Before(b.SpinningBefore)) {
		return false
	}
	if !b.NotSpinningAt.IsZero() && !l.LastProgressAt.IsZero() && l.LastProgressAt.Before(b.NotSpinningAt) {
		return false
	}
	return true
}

// SameHolding reports whether next differs from prev only in what a
// heartbeat writes (its times, schema, in-flight call, fallback flag, hook
// health, recorded verdict and verdict-due time): the same holder, state,
// claim, exit and end. Stores then write the heartbeat columns alone.
func SameHolding(prev, next Lease) bool {
	return prev.Ticket == next.Ticket && prev.Epoch == next.Epoch && prev.Agent == next.Agent &&
		prev.Host == next.Host && prev.State == next.State && prev.ClaimedAt.Equal(next.ClaimedAt) &&
		prev.Exit == next.Exit && prev.ExitedAt.Equal(next.ExitedAt) && prev.EndedAt.Equal(next.EndedAt) &&
		prev.EndReason == next.EndReason && prev.PRURL == next.PRURL &&
		prev.Claimant == next.Claimant && prev.SecretHash == next.SecretHash
}
