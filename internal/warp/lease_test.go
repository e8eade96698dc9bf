package warp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The lease core's table tests. Each case is one sentence of the rules, as
// the decision record states them: the case name says the rule, the fields
// the lease before, the request, and what must hold after.

// corePolicy is a small policy: 30 min lease window, stalled after 15 min,
// silent after 9 min without heartbeat, 10 min startup grace.
func corePolicy() warp.Policy {
	return warp.Policy{LeaseWindow: 30 * time.Minute, StallAfter: 15 * time.Minute, SilentAfter: 9 * time.Minute, StartupGrace: 10 * time.Minute}
}

func claimedTicket(epoch int64) warp.Ticket {
	return warp.Ticket{ID: "T-1", Seq: 7, State: warp.TicketClaimed, Epoch: epoch, Labels: []string{"go"}, CreatedAt: p0, UpdatedAt: p0}
}

// heldAt is lease epoch 1 of T-1, claimed at p0, last heartbeat and
// activity at the given offsets from p0, schema 2.
func heldAt(heartbeat, activity time.Duration) warp.Lease {
	l := mkLease(2, heartbeat, activity)
	l.Agent, l.Host, l.RefreshedAt, l.FirstV2At = "a", "h", pAt(heartbeat), p0
	return l
}

func kinds(es []warp.Event) string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Kind))
	}
	return strings.Join(out, ",")
}

func TestFence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ticket   warp.Ticket
		epoch    int64
		disclose bool
		want     int64
		err      error
		msg      string
	}{
		{"a write naming the current epoch applies to it", claimedTicket(3), 3, false, 3, nil, ""},
		{"epoch 0 (v1 heartbeat, operator release) means the current lease", claimedTicket(3), 0, false, 3, nil, ""},
		{"the loop of a replaced lease is fenced off", claimedTicket(3), 2, false, 0, warp.ErrStaleEpoch, "has a newer lease"},
		{"an operator is told the current epoch", claimedTicket(3), 2, true, 0, warp.ErrStaleEpoch, "current epoch is 3"},
		{"a ticket never claimed has no lease", warp.Ticket{ID: "T-1", State: warp.TicketOpen}, 0, true, 0, warp.ErrLeaseEnded, "claim it first"},
		{"an epoch from the future is stale too", claimedTicket(3), 4, false, 0, warp.ErrStaleEpoch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := warp.Fence(tc.ticket, tc.epoch, tc.disclose)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("epoch %d, want %d", got, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not say %q", err, tc.msg)
			}
			if err != nil && !tc.disclose && strings.Contains(err.Error(), "current epoch") {
				t.Errorf("message %q tells an agent the current epoch", err)
			}
		})
	}
}

func TestCheckWrite(t *testing.T) {
	secret := "s3cret"
	bound := heldAt(0, 0)
	bound.SecretHash = warp.TokenID(secret)
	tokenOnly := heldAt(0, 0)
	tokenOnly.Claimant = "tok-a"
	released := bound
	released.State, released.EndReason = warp.LeaseReleased, "operator"
	agent := func(token, secret string) warp.Caller {
		return warp.Caller{Agent: true, Token: token, LeaseSecret: secret}
	}
	for _, tc := range []struct {
		name   string
		lease  warp.Lease
		caller warp.Caller
		err    error
		reason string // the end_reason the error must carry ("-": none)
	}{
		{"a call without a caller (CLI, tests) may write", bound, warp.Caller{}, nil, ""},
		{"an admin may write to any lease", bound, warp.Caller{Token: "admin"}, nil, ""},
		{"the agent with the lease secret may write", bound, agent("tok-a", secret), nil, ""},
		{"an agent without the secret is not the holder", bound, agent("tok-a", ""), warp.ErrNotHolder, ""},
		{"an agent with another lease's secret is not the holder", bound, agent("tok-a", "other"), warp.ErrNotHolder, ""},
		{"a lease claimed without a secret is bound to its token", tokenOnly, agent("tok-a", ""), nil, ""},
		{"another token cannot write to it", tokenOnly, agent("tok-b", ""), warp.ErrNotHolder, ""},
		{"an ended lease says how it ended, with the reason, to its holder", released, agent("tok-a", secret), warp.ErrLeaseEnded, "operator"},
		{"an ended lease does not tell the reason to another agent", released, agent("tok-b", ""), warp.ErrLeaseEnded, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := warp.CheckWrite(tc.lease, tc.caller)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if tc.err != warp.ErrLeaseEnded {
				return
			}
			var e *warp.Error
			if !errors.As(err, &e) || e.Detail[warp.DetailLeaseState] != string(tc.lease.State) {
				t.Fatalf("lease_ended without lease_state: %#v", err)
			}
			got, ok := e.Detail[warp.DetailEndReason]
			if tc.reason == "-" && ok || tc.reason != "-" && got != tc.reason {
				t.Errorf("end_reason %q (present %v), want %q", got, ok, tc.reason)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	p := corePolicy()
	now := pAt(time.Hour)
	open := warp.Ticket{ID: "T-1", Seq: 7, State: warp.TicketOpen, Epoch: 2, CreatedAt: p0, UpdatedAt: p0}
	t.Run("claiming an open ticket makes the next epoch, fresh, bound to the caller", func(t *testing.T) {
		ch, err := p.Claim(warp.ModeActivity, open, nil, warp.ClaimRequest{Agent: "a", Host: "h"}, warp.Caller{Agent: true, Token: "tok"}, "hash", now)
		if err != nil {
			t.Fatal(err)
		}
		l := ch.Lease
		if !ch.InsertLease || !ch.TicketDirty || l.Epoch != 3 || l.State != warp.LeaseHeld || l.Agent != "a" || l.Host != "h" {
			t.Fatalf("change %+v", ch)
		}
		for _, at := range []time.Time{l.ClaimedAt, l.LastHeartbeatAt, l.LastActivityAt, l.RefreshedAt} {
			if !at.Equal(now) {
				t.Errorf("a claim counts as heartbeat, activity and refresh at now; got %v", l)
			}
		}
		if !l.ExpiresAt.Equal(now.Add(p.LeaseWindow)) || l.Claimant != "tok" || l.SecretHash != "hash" {
			t.Errorf("expiry %v claimant %q secret %q", l.ExpiresAt, l.Claimant, l.SecretHash)
		}
		if ch.Ticket.State != warp.TicketClaimed || ch.Ticket.Epoch != 3 || ch.Ticket.Seq != 7 || !ch.Ticket.UpdatedAt.Equal(now) {
			t.Errorf("ticket %+v", ch.Ticket)
		}
		if kinds(ch.Events) != "claimed" || ch.Events[0].Data.(warp.ClaimedData).Agent != "a" {
			t.Errorf("events %v", ch.Events)
		}
	})
	holder := heldAt(0, 0)
	holder.Epoch = 2
	for _, tc := range []struct {
		name   string
		ticket warp.Ticket
		caller warp.Caller
		msg    string
	}{
		{"a claimed ticket is a conflict that names its holder to an operator", claimedTicket(2), warp.Caller{}, `claimed by agent "a" on host "h" (epoch 2): claim another with --next, or, if that agent is gone, free it with warp release T-1 --reason REASON`},
		{"an agent is not told who holds it", claimedTicket(2), warp.Caller{Agent: true}, "held by another agent: claim another with --next"},
		{"a completed ticket cannot be claimed", warp.Ticket{ID: "T-1", State: warp.TicketCompleted, Epoch: 2}, warp.Caller{}, "is completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Claim(warp.ModeTransition, tc.ticket, &holder, warp.ClaimRequest{}, tc.caller, "", now)
			if !errors.Is(err, warp.ErrConflict) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v, want a conflict saying %q", err, tc.msg)
			}
		})
	}
}

func TestHeartbeatTransition(t *testing.T) {
	p := corePolicy()
	now := pAt(time.Hour)
	yes, no := true, false
	// The lease before: last heartbeat 4 min ago, activity 20 min ago.
	before := heldAt(56*time.Minute, 40*time.Minute)
	v1 := before
	v1.SchemaVersion, v1.FirstV2At = 1, time.Time{}
	exited := before
	exited.Exit, exited.ExitedAt = warp.ExitParentExited, pAt(50*time.Minute)
	for _, tc := range []struct {
		name      string
		lease     warp.Lease
		mode      warp.Mode
		hb        warp.Heartbeat
		release   bool
		activity  time.Time // last_activity_at after
		refreshed bool      // refreshed_at moves to now
		extended  bool
		expires   time.Time
		verdict   warp.Verdict
		events    string
		state     warp.LeaseState
	}{
		{name: "a v2 heartbeat moves activity to now minus its age and extends from activity",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 30},
			activity: now.Add(-30 * time.Second), refreshed: true, extended: true, expires: now.Add(-30 * time.Second).Add(30 * time.Minute), verdict: warp.VerdictActive},
		{name: "the age counts back from when warp received the heartbeat, not from when a batch applies it",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 30, ReceivedAt: now.Add(-2 * time.Second)},
			activity: now.Add(-32 * time.Second), refreshed: true, extended: true, expires: now.Add(-32 * time.Second).Add(30 * time.Minute), verdict: warp.VerdictActive},
		{name: "a receipt time after now (the clock stepped back since) counts as now",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 30, ReceivedAt: now.Add(time.Minute)},
			activity: now.Add(-30 * time.Second), refreshed: true, extended: true, expires: now.Add(-30 * time.Second).Add(30 * time.Minute), verdict: warp.VerdictActive},
		{name: "activity never goes back: an older age than recorded changes nothing",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 3600},
			activity: pAt(40 * time.Minute), refreshed: true, extended: true, expires: pAt(70 * time.Minute), verdict: warp.VerdictStalled},
		{name: "in transition a v1 heartbeat extends through the fallback MAX(activity, heartbeat)",
			lease: v1, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 1},
			activity: pAt(40 * time.Minute), refreshed: true, extended: true, expires: now.Add(30 * time.Minute), verdict: warp.VerdictActive},
		{name: "in legacy mode a heartbeat extends whatever the activity",
			lease: before, mode: warp.ModeLegacy, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 3600},
			activity: pAt(40 * time.Minute), refreshed: true, extended: true, expires: now.Add(30 * time.Minute), verdict: warp.VerdictStalled},
		{name: "in activity mode a v1 heartbeat is recorded but extends nothing (its verdict still counts the heartbeat)",
			lease: v1, mode: warp.ModeActivity, hb: warp.Heartbeat{SchemaVersion: 1},
			activity: pAt(40 * time.Minute), extended: false, expires: pAt(70 * time.Minute), verdict: warp.VerdictActive},
		{name: "a stale report keeps the loop heard (not silent) but extends nothing",
			lease: before, mode: warp.ModeLegacy, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 1500, Stale: true},
			activity: pAt(40 * time.Minute), extended: false, expires: pAt(56 * time.Minute).Add(30 * time.Minute), verdict: warp.VerdictStalled},
		{name: "the first v2 heartbeat of a v1 lease is recorded as an event",
			lease: v1, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 1},
			activity: now.Add(-time.Second), refreshed: true, extended: true, expires: now.Add(-time.Second).Add(30 * time.Minute), verdict: warp.VerdictActive, events: "first-v2-heartbeat"},
		{name: "an exit report is recorded once and makes the lease exited",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 1, Exit: warp.ExitParentExited},
			activity: now.Add(-time.Second), refreshed: true, extended: true, expires: now.Add(-time.Second).Add(30 * time.Minute), verdict: warp.VerdictExited, events: "exit-report"},
		{name: "a second exit report adds nothing",
			lease: exited, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 600, Exit: warp.ExitWorktreeGone},
			activity: pAt(50 * time.Minute), refreshed: true, extended: true, expires: pAt(80 * time.Minute), verdict: warp.VerdictExited},
		{name: "with release-on-exit an exit report releases the lease at once",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 1, Exit: warp.ExitWorktreeGone}, release: true,
			activity: now.Add(-time.Second), refreshed: true, extended: true, expires: now, verdict: warp.VerdictExited, events: "exit-report,released", state: warp.LeaseReleased},
		{name: "a hook that never fired is recorded as no",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 1, HookSeen: &no},
			activity: now.Add(-time.Second), refreshed: true, extended: true, expires: now.Add(-time.Second).Add(30 * time.Minute), verdict: warp.VerdictUnwired},
		{name: "a hook that fired is recorded as yes",
			lease: before, mode: warp.ModeTransition, hb: warp.Heartbeat{SchemaVersion: 2, ActivityAge: 1, HookSeen: &yes, HookEvents: 5},
			activity: now.Add(-time.Second), refreshed: true, extended: true, expires: now.Add(-time.Second).Add(30 * time.Minute), verdict: warp.VerdictActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hb.Ticket, tc.hb.Epoch = "T-1", 1
			ch, res := p.Heartbeat(tc.mode, claimedTicket(1), tc.lease, tc.hb, tc.release, now)
			l := ch.Lease
			if !l.LastHeartbeatAt.Equal(now) || l.SchemaVersion != tc.hb.SchemaVersion {
				t.Errorf("every heartbeat records itself: heartbeat %v schema %d", l.LastHeartbeatAt, l.SchemaVersion)
			}
			if !l.LastActivityAt.Equal(tc.activity) {
				t.Errorf("activity %v, want %v", l.LastActivityAt, tc.activity)
			}
			if got := l.RefreshedAt.Equal(now); got != tc.refreshed {
				t.Errorf("refreshed %v, want %v", got, tc.refreshed)
			}
			if res.Extended != tc.extended || (res.Note == "") != tc.extended {
				t.Errorf("extended %v note %q, want extended %v with a note exactly when not", res.Extended, res.Note, tc.extended)
			}
			if !res.ExpiresAt.Equal(tc.expires) {
				t.Errorf("expires %v, want %v", res.ExpiresAt, tc.expires)
			}
			if res.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, tc.verdict)
			}
			if kinds(ch.Events) != tc.events {
				t.Errorf("events %q, want %q", kinds(ch.Events), tc.events)
			}
			state := tc.state
			if state == "" {
				state = warp.LeaseHeld
			}
			if l.State != state || !ch.LeaseDirty || ch.InsertLease {
				t.Errorf("lease state %s (dirty %v insert %v), want %s written", l.State, ch.LeaseDirty, ch.InsertLease, state)
			}
			if state == warp.LeaseReleased && (ch.Ticket.State != warp.TicketOpen || !ch.TicketDirty || l.EndReason != warp.ReleaseExitReport) {
				t.Errorf("release on exit: ticket %s dirty %v reason %q", ch.Ticket.State, ch.TicketDirty, l.EndReason)
			}
			if res.MaxRetryGap != p.MaxRetryGap() {
				t.Errorf("max retry gap %s, want %s", res.MaxRetryGap, p.MaxRetryGap())
			}
		})
	}
	t.Run("hook events add up and saturate", func(t *testing.T) {
		l := before
		l.HookEvents = 1<<63 - 2
		ch, _ := p.Heartbeat(warp.ModeTransition, claimedTicket(1), l, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookEvents: 10}, false, now)
		if ch.Lease.HookEvents != 1<<63-1 {
			t.Errorf("hook events %d", ch.Lease.HookEvents)
		}
	})
}

func TestEndAndLapse(t *testing.T) {
	now := pAt(time.Hour)
	t.Run("a release reopens the ticket and records the reason", func(t *testing.T) {
		ch := warp.End(claimedTicket(1), heldAt(0, 0), warp.LeaseReleased, "operator", "", now)
		if ch.Lease.State != warp.LeaseReleased || !ch.Lease.EndedAt.Equal(now) || ch.Lease.EndReason != "operator" ||
			ch.Ticket.State != warp.TicketOpen || kinds(ch.Events) != "released" || ch.Events[0].Data.(warp.ReleasedData).Reason != "operator" {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("a completion completes the ticket and records the PR", func(t *testing.T) {
		ch := warp.End(claimedTicket(1), heldAt(0, 0), warp.LeaseCompleted, "", "https://x/pr/1", now)
		if ch.Lease.State != warp.LeaseCompleted || ch.Lease.PRURL != "https://x/pr/1" || ch.Ticket.State != warp.TicketCompleted ||
			kinds(ch.Events) != "completed" || ch.Events[0].Data.(warp.CompletedData).PRURL != "https://x/pr/1" {
			t.Errorf("%+v", ch)
		}
	})
	// The lease before a lapse: v1 heartbeat 5 min ago, activity 50 min ago.
	v1 := mkLease(1, 55*time.Minute, 10*time.Minute)
	v2 := mkLease(2, 55*time.Minute, 10*time.Minute)
	gone := v2
	gone.Exit = warp.ExitWorktreeGone
	for _, tc := range []struct {
		name     string
		mode     warp.Mode
		lease    warp.Lease
		ticket   warp.Ticket
		reason   string
		fallback bool
		reopen   bool
	}{
		{"in legacy mode a lease lapses for want of heartbeats", warp.ModeLegacy, v1, claimedTicket(1), warp.LapseNoHeartbeat, false, true},
		{"in transition a v1 lease kept alive by its heartbeats says the fallback extended it", warp.ModeTransition, v1, claimedTicket(1), warp.LapseNoHeartbeat, true, true},
		{"in transition a v2 lease lapses for want of activity", warp.ModeTransition, v2, claimedTicket(1), warp.LapseNoActivity, false, true},
		{"in activity mode every lease lapses for want of activity", warp.ModeActivity, v1, claimedTicket(1), warp.LapseNoActivity, false, true},
		{"a lease whose loop reported its agent gone lapses as agent-exited", warp.ModeActivity, gone, claimedTicket(1), warp.LapseAgentExited, false, true},
		{"a lapse leaves a ticket that moved on alone", warp.ModeActivity, v2, claimedTicket(2), warp.LapseNoActivity, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := warp.Lapse(tc.mode, tc.ticket, tc.lease, now)
			if ch.Lease.State != warp.LeaseLapsed || !ch.Lease.EndedAt.Equal(now) || ch.Lease.EndReason != tc.reason || ch.Lease.FallbackExtended != tc.fallback {
				t.Errorf("lease %s at %v reason %q fallback %v, want lapsed reason %q fallback %v", ch.Lease.State, ch.Lease.EndedAt, ch.Lease.EndReason, ch.Lease.FallbackExtended, tc.reason, tc.fallback)
			}
			if ch.TicketDirty != tc.reopen || tc.reopen && ch.Ticket.State != warp.TicketOpen {
				t.Errorf("ticket %s written %v, want reopened %v", ch.Ticket.State, ch.TicketDirty, tc.reopen)
			}
			if kinds(ch.Events) != "lapsed" || ch.Events[0].Data.(warp.LapsedData).Reason != tc.reason || ch.Events[0].Data.(warp.LapsedData).FallbackExtended != tc.fallback {
				t.Errorf("events %v", ch.Events)
			}
		})
	}
}

func TestRecordVerdict(t *testing.T) {
	p := corePolicy()
	now := pAt(time.Hour)
	stalled := heldAt(58*time.Minute, 40*time.Minute) // activity 20 min ago
	recorded := stalled
	recorded.RecordedVerdict = warp.VerdictStalled
	back := heldAt(59*time.Minute, 59*time.Minute)
	back.RecordedVerdict = warp.VerdictSilent
	for _, tc := range []struct {
		name  string
		lease warp.Lease
		ok    bool
		from  warp.Verdict
		to    warp.Verdict
		since time.Time
	}{
		{"a lease never recorded counts as active: going stalled is recorded", stalled, true, warp.VerdictActive, warp.VerdictStalled, pAt(55 * time.Minute)},
		{"the same verdict again records nothing", recorded, false, "", "", time.Time{}},
		{"coming back is recorded from the heartbeat that brought activity", back, true, warp.VerdictSilent, warp.VerdictActive, pAt(59 * time.Minute)},
		{"an active lease never recorded needs no write", heldAt(59*time.Minute, 59*time.Minute), false, "", "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, vc, ok := p.RecordVerdict(claimedTicket(1), tc.lease, now)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if vc.From != tc.from || vc.To != tc.to || !vc.Since.Equal(tc.since) || ch.Lease.RecordedVerdict != tc.to || kinds(ch.Events) != "verdict-changed" {
				t.Errorf("change %+v lease recorded %s events %v", vc, ch.Lease.RecordedVerdict, ch.Events)
			}
		})
	}
}

func TestNextVerdictChange(t *testing.T) {
	p := corePolicy()
	now := pAt(time.Hour)
	unwiredSoon := heldAt(59*time.Minute, 59*time.Minute)
	unwiredSoon.HookSeen = warp.HookNo
	unwiredSoon.ClaimedAt = pAt(50 * time.Minute)
	exited := heldAt(59*time.Minute, 59*time.Minute)
	exited.Exit = warp.ExitParentExited
	for _, tc := range []struct {
		name  string
		lease warp.Lease
		want  time.Time
	}{
		{"an active lease turns stalled 15 min after its progress", heldAt(59*time.Minute, 50*time.Minute), pAt(65 * time.Minute)},
		{"unless its heartbeats stop first: silent 9 min after the last", heldAt(52*time.Minute, 59*time.Minute), pAt(61 * time.Minute)},
		{"a loop that reports the hook silent turns unwired 15 min after the claim", unwiredSoon, pAt(65 * time.Minute)},
		{"a stalled lease turns silent 9 min after its last heartbeat", heldAt(58*time.Minute, 30*time.Minute), pAt(67 * time.Minute)},
		{"an exited lease stays exited", exited, time.Time{}},
		{"a silent lease stays silent until a heartbeat", heldAt(40*time.Minute, 40*time.Minute), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.NextVerdictChange(tc.lease, now); !got.Equal(tc.want) {
				t.Errorf("next change %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNextVerdictChangeIsExact checks, over a grid of leases around every
// threshold, that the verdict holds until the returned time and differs
// just after it, and that a lease with no next change keeps its verdict.
func TestNextVerdictChangeIsExact(t *testing.T) {
	p := corePolicy()
	now := pAt(2 * time.Hour)
	ages := thresholdAges(p)
	n := 0
	for _, schema := range []int{0, 1, 2} {
		for _, hb := range ages {
			for _, act := range ages {
				for _, claim := range ages {
					for _, hs := range []warp.HookSeen{warp.HookUnknown, warp.HookNo, warp.HookYes} {
						for _, exit := range []string{"", warp.ExitParentExited} {
							l := warp.Lease{State: warp.LeaseHeld, SchemaVersion: schema, Exit: exit, HookSeen: hs,
								ClaimedAt: now.Add(-claim), LastHeartbeatAt: now.Add(-hb), LastActivityAt: now.Add(-act)}
							v := p.Verdict(l, now)
							next := p.NextVerdictChange(l, now)
							n++
							if next.IsZero() {
								if far := p.Verdict(l, now.Add(1000*time.Hour)); far != v {
									t.Fatalf("%+v: no next change, but %s turns %s", l, v, far)
								}
								continue
							}
							if next.Before(now) {
								t.Fatalf("%+v: next change %v is in the past", l, next)
							}
							if at := p.Verdict(l, next); at != v {
								t.Fatalf("%+v: %s at now but %s at the next change %v (thresholds are exclusive)", l, v, at, next)
							}
							if after := p.Verdict(l, next.Add(time.Nanosecond)); after == v {
								t.Fatalf("%+v: still %s just after the next change %v", l, v, next)
							}
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no case ran")
	}
}

func TestGraceDue(t *testing.T) {
	p := corePolicy()
	start := pAt(time.Hour)
	gapStart := pAt(20 * time.Minute)
	g := p.NewGrace(start, gapStart)
	old := heldAt(0, 0)
	old.ExpiresAt, old.RefreshedAt = pAt(30*time.Minute), pAt(0)
	fresh := old
	fresh.RefreshedAt = start.Add(time.Minute)
	dead := old // due before the gap began: dead before the outage
	dead.ExpiresAt = pAt(15 * time.Minute)
	atGap := old
	atGap.ExpiresAt = gapStart
	for _, tc := range []struct {
		name  string
		now   time.Time
		lease warp.Lease
		due   bool
	}{
		{"during the grace a lease refreshed before the start does not lapse", start.Add(5 * time.Minute), old, false},
		{"a lease refreshed after the start lapses on schedule", start.Add(5 * time.Minute), fresh, true},
		{"once the grace is over the old lease lapses", start.Add(10 * time.Minute), old, true},
		{"a lease whose expiry has not passed is never due", pAt(29 * time.Minute), old, false},
		{"a lease already due when the gap began lapses during the grace", start.Add(5 * time.Minute), dead, true},
		{"... and one due at the gap's very start", start.Add(5 * time.Minute), atGap, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := warp.Due(tc.now, g).Match(tc.lease); got != tc.due {
				t.Errorf("due %v, want %v", got, tc.due)
			}
		})
	}
	if g := p.NewGrace(start, time.Time{}); warp.Due(start.Add(time.Minute), g).Match(dead) {
		t.Errorf("without a known gap start the grace protects every old lease: %+v lapses %+v", g, dead)
	}
	if (warp.Policy{LeaseWindow: time.Minute}).NewGrace(start, gapStart) != (warp.Grace{}) {
		t.Error("a policy without grace opens one")
	}
}

// TestVerdictDueMissesNoChange checks the invariant the verdict pass
// rests on, over a grid of leases, recorded verdicts and later times: a
// lease written at t0 with VerdictDueAt = VerdictDue(l, t0) is due (so a
// pass reads it) at every later time its verdict differs from the
// recorded one; and a lease that is due at t0 already differs then.
func TestVerdictDueMissesNoChange(t *testing.T) {
	p := corePolicy()
	t0 := pAt(2 * time.Hour)
	ages := thresholdAges(p)
	var later []time.Duration
	for _, d := range []time.Duration{0, time.Nanosecond, time.Minute, p.SilentAfter, p.StallAfter, p.StallAfter + time.Nanosecond, 2 * time.Hour} {
		later = append(later, d)
	}
	recorded := []warp.Verdict{warp.VerdictNone, warp.VerdictActive, warp.VerdictStalled, warp.VerdictUnwired, warp.VerdictSilent, warp.VerdictExited}
	n := 0
	for _, hb := range ages {
		for _, act := range ages {
			for _, claim := range ages {
				for _, hs := range []warp.HookSeen{warp.HookUnknown, warp.HookNo} {
					for _, exit := range []string{"", warp.ExitParentExited} {
						for _, rec := range recorded {
							l := warp.Lease{State: warp.LeaseHeld, SchemaVersion: 2, Exit: exit, HookSeen: hs, RecordedVerdict: rec,
								ClaimedAt: t0.Add(-claim), LastHeartbeatAt: t0.Add(-hb), LastActivityAt: t0.Add(-act)}
							due := p.VerdictDue(l, t0)
							want := rec
							if want == warp.VerdictNone {
								want = warp.VerdictActive
							}
							if due.Equal(t0) && p.Verdict(l, t0) == want {
								t.Fatalf("%+v: due at once but its verdict is the recorded one", l)
							}
							for _, d := range later {
								at := t0.Add(d)
								if p.Verdict(l, at) != want && (due.IsZero() || due.After(at)) {
									t.Fatalf("%+v: verdict %s at +%v differs from the recorded %s, but the lease is due at %v",
										l, p.Verdict(l, at), d, want, due)
								}
								n++
							}
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no case ran")
	}
	ended := heldAt(0, 0)
	ended.State = warp.LeaseReleased
	if !p.VerdictDue(ended, t0).IsZero() {
		t.Error("an ended lease is due")
	}
}

// thresholdAges are ages around every threshold of p (a minute and a
// nanosecond before, at, a nanosecond after): the grid the exactness
// tests walk.
func thresholdAges(p warp.Policy) []time.Duration {
	var ages []time.Duration
	for _, base := range []time.Duration{0, p.SilentAfter, p.StallAfter, time.Hour} {
		for _, d := range []time.Duration{-time.Minute, -time.Nanosecond, 0, time.Nanosecond} {
			if base+d >= 0 {
				ages = append(ages, base+d)
			}
		}
	}
	return ages
}

// Hook health is counted per host beside the verdicts: each transition
// moves the lease's count as the rules above move its hook_seen.
func TestHookCounts(t *testing.T) {
	p := corePolicy()
	now := pAt(time.Minute)
	yes, no := true, false
	key := warp.HookCountKey
	for _, tc := range []struct {
		name    string
		seen    warp.HookSeen
		hb      warp.Heartbeat
		release bool
		want    map[warp.Verdict]int64
	}{
		{"a first hook_seen moves the lease from unknown", warp.HookUnknown,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookSeen: &no}, false,
			map[warp.Verdict]int64{key(warp.HookUnknown): -1, key(warp.HookNo): 1}},
		{"a hook that starts firing moves it from no to yes", warp.HookNo,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookSeen: &yes}, false,
			map[warp.Verdict]int64{key(warp.HookNo): -1, key(warp.HookYes): 1}},
		{"the same report moves nothing", warp.HookYes,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookSeen: &yes}, false, nil},
		{"a heartbeat without hook fields moves nothing", warp.HookNo,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1}, false, nil},
		{"an exit report that releases removes the lease under what it was before", warp.HookNo,
			warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, HookSeen: &yes, Exit: warp.ExitParentExited}, true,
			map[warp.Verdict]int64{warp.VerdictActive: -1, key(warp.HookNo): -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := heldAt(0, 0)
			l.HookSeen = tc.seen
			ch, _ := p.Heartbeat(warp.ModeTransition, claimedTicket(1), l, tc.hb, tc.release, now)
			got := map[warp.Verdict]int64{}
			for k, n := range ch.Counts {
				if n != 0 {
					got[k] = n
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("counts %v, want %v", ch.Counts, tc.want)
			}
			for k, n := range tc.want {
				if got[k] != n {
					t.Fatalf("counts %v, want %v", ch.Counts, tc.want)
				}
			}
		})
	}
	c, err := p.Claim(warp.ModeTransition, warp.Ticket{ID: "T-1", State: warp.TicketOpen}, nil, warp.ClaimRequest{Agent: "a", Host: "h"}, warp.Caller{}, "", now)
	if err != nil || c.Counts[warp.VerdictActive] != 1 || c.Counts[key(warp.HookUnknown)] != 1 || len(c.Counts) != 2 {
		t.Errorf("claim: counts %v, %v; want one active, one hook unknown", c.Counts, err)
	}
	if h, ok := warp.HookCountOf(key(warp.HookYes)); !ok || h != warp.HookYes {
		t.Errorf("HookCountOf(key(yes)) = %q, %v", h, ok)
	}
	for _, v := range warp.Verdicts() {
		if _, ok := warp.HookCountOf(v); ok {
			t.Errorf("verdict %s reads as a hook count key", v)
		}
	}
}
