package warp_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// p0 is the policy tests' reference time.
var p0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func pAt(d time.Duration) time.Time { return p0.Add(d) }

// lease builds a held lease with heartbeat and activity at the offsets
// from p0 and the given schema of the latest heartbeat.
func hook(l warp.Lease, seen warp.HookSeen) warp.Lease {
	l.HookSeen = seen
	return l
}

func mkLease(schema int, heartbeat, activity time.Duration) warp.Lease {
	return warp.Lease{Ticket: "T-1", Epoch: 1, State: warp.LeaseHeld, SchemaVersion: schema,
		ClaimedAt: p0, LastHeartbeatAt: pAt(heartbeat), LastActivityAt: pAt(activity)}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want warp.Mode
		err  bool
	}{
		{"legacy", warp.ModeLegacy, false},
		{"transition", warp.ModeTransition, false},
		{"activity", warp.ModeActivity, false},
		{"", "", true},
		{"Activity", "", true},
		{"activity ", "", true},
		{"fast", "", true},
	} {
		got, err := warp.ParseMode(tc.in)
		if tc.err {
			if !errors.Is(err, warp.ErrInvalid) {
				t.Errorf("ParseMode(%q): got %q, %v, want ErrInvalid", tc.in, got, err)
			} else if !strings.Contains(warp.ErrorMessage(err), "legacy, transition or activity") {
				t.Errorf("ParseMode(%q) message %q does not list the modes", tc.in, warp.ErrorMessage(err))
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseMode(%q): got %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	if n := len(warp.Verdicts()); n != 7 {
		t.Errorf("Verdicts: %d, want 7", n)
	}
	for _, v := range warp.Verdicts() {
		if got, err := warp.ParseVerdict(string(v)); err != nil || got != v {
			t.Errorf("ParseVerdict(%q): got %q, %v", v, got, err)
		}
	}
	for _, s := range []string{"", "none", "ACTIVE"} {
		if _, err := warp.ParseVerdict(s); !errors.Is(err, warp.ErrInvalid) {
			t.Errorf("ParseVerdict(%q): got %v, want ErrInvalid", s, err)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := warp.DefaultPolicy().Validate(); err != nil {
		t.Errorf("default policy: %v", err)
	}
	ok := warp.DefaultPolicy()
	ok.StartupGrace = 0
	if err := ok.Validate(); err != nil {
		t.Errorf("zero grace: %v, want allowed", err)
	}
	ok.LeaseWindow, ok.StallAfter, ok.SilentAfter, ok.StartupGrace = warp.MaxPolicyDuration, warp.MaxPolicyDuration, warp.MaxPolicyDuration, warp.MaxPolicyDuration
	if err := ok.Validate(); err != nil {
		t.Errorf("every duration at the bound: %v, want allowed", err)
	}
	for name, mut := range map[string]func(*warp.Policy){
		"zero lease window":   func(p *warp.Policy) { p.LeaseWindow = 0 },
		"negative stall":      func(p *warp.Policy) { p.StallAfter = -time.Second },
		"zero silent":         func(p *warp.Policy) { p.SilentAfter = 0 },
		"negative grace":      func(p *warp.Policy) { p.StartupGrace = -1 },
		"negative lease wind": func(p *warp.Policy) { p.LeaseWindow = -time.Minute },
		// Times past 2262 wrap the stores' 64-bit nanoseconds.
		"lease window of centuries": func(p *warp.Policy) { p.LeaseWindow = 2200000 * time.Hour },
		"stall beyond the bound":    func(p *warp.Policy) { p.StallAfter = warp.MaxPolicyDuration + 1 },
		"silent beyond the bound":   func(p *warp.Policy) { p.SilentAfter = 90000 * 24 * time.Hour },
		"grace beyond the bound":    func(p *warp.Policy) { p.StartupGrace = warp.MaxPolicyDuration + time.Hour },
	} {
		p := warp.DefaultPolicy()
		mut(&p)
		if err := p.Validate(); !errors.Is(err, warp.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestEffective(t *testing.T) {
	// heartbeat at +10m, activity at +8m unless said otherwise.
	for _, tc := range []struct {
		name          string
		mode          warp.Mode
		l             warp.Lease
		want          time.Time
		fromHeartbeat bool
	}{
		{"legacy v2", warp.ModeLegacy, mkLease(2, 10*time.Minute, 8*time.Minute), pAt(10 * time.Minute), true},
		{"legacy v1", warp.ModeLegacy, mkLease(1, 10*time.Minute, 0), pAt(10 * time.Minute), true},
		{"legacy activity newer than heartbeat", warp.ModeLegacy, mkLease(2, 5*time.Minute, 8*time.Minute), pAt(5 * time.Minute), true},
		{"transition v2 uses activity", warp.ModeTransition, mkLease(2, 10*time.Minute, 8*time.Minute), pAt(8 * time.Minute), false},
		{"transition v1 uses the later heartbeat", warp.ModeTransition, mkLease(1, 10*time.Minute, 8*time.Minute), pAt(10 * time.Minute), true},
		{"transition v1 with newer activity", warp.ModeTransition, mkLease(1, 5*time.Minute, 8*time.Minute), pAt(8 * time.Minute), false},
		{"transition v1 tie is activity", warp.ModeTransition, mkLease(1, 8*time.Minute, 8*time.Minute), pAt(8 * time.Minute), false},
		{"transition claim only", warp.ModeTransition, mkLease(0, 0, 0), p0, false},
		{"transition claim only, later heartbeat", warp.ModeTransition, mkLease(0, time.Minute, 0), pAt(time.Minute), true},
		{"activity v1", warp.ModeActivity, mkLease(1, 10*time.Minute, 0), p0, false},
		{"activity v2", warp.ModeActivity, mkLease(2, 10*time.Minute, 8*time.Minute), pAt(8 * time.Minute), false},
		{"unknown mode acts as transition", warp.Mode("x"), mkLease(1, 10*time.Minute, 0), pAt(10 * time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fh := warp.Effective(tc.mode, tc.l)
			if !got.Equal(tc.want) || fh != tc.fromHeartbeat {
				t.Errorf("Effective: got %s, %v, want %s, %v", got, fh, tc.want, tc.fromHeartbeat)
			}
			p := warp.DefaultPolicy()
			if exp := p.ExpiresAt(tc.mode, tc.l); !exp.Equal(tc.want.Add(p.LeaseWindow)) {
				t.Errorf("ExpiresAt: got %s, want %s", exp, tc.want.Add(p.LeaseWindow))
			}
		})
	}
}

func TestProgressAtIgnoresMode(t *testing.T) {
	for _, tc := range []struct {
		l    warp.Lease
		want time.Time
	}{
		{mkLease(2, 10*time.Minute, 8*time.Minute), pAt(8 * time.Minute)},
		{mkLease(1, 10*time.Minute, 8*time.Minute), pAt(10 * time.Minute)},
		{mkLease(0, 0, 0), p0},
	} {
		if got := warp.ProgressAt(tc.l); !got.Equal(tc.want) {
			t.Errorf("ProgressAt(schema %d): got %s, want %s", tc.l.SchemaVersion, got, tc.want)
		}
	}
}

func TestLapseReason(t *testing.T) {
	exited := mkLease(2, 10*time.Minute, 0)
	exited.Exit = warp.ExitParentExited
	exitedV1 := mkLease(1, 10*time.Minute, 0)
	exitedV1.Exit = warp.ExitWorktreeGone
	for _, tc := range []struct {
		name     string
		mode     warp.Mode
		l        warp.Lease
		reason   string
		fallback bool
	}{
		{"transition v2", warp.ModeTransition, mkLease(2, 10*time.Minute, 8*time.Minute), warp.LapseNoActivity, false},
		{"transition v1 kept alive by the heartbeat", warp.ModeTransition, mkLease(1, 10*time.Minute, 8*time.Minute), warp.LapseNoHeartbeat, true},
		{"transition v1 with newer activity", warp.ModeTransition, mkLease(1, 5*time.Minute, 8*time.Minute), warp.LapseNoActivity, false},
		{"transition claim only", warp.ModeTransition, mkLease(0, 0, 0), warp.LapseNoActivity, false},
		{"legacy is about heartbeats, never a fallback", warp.ModeLegacy, mkLease(2, 10*time.Minute, 8*time.Minute), warp.LapseNoHeartbeat, false},
		{"legacy v1", warp.ModeLegacy, mkLease(1, 10*time.Minute, 0), warp.LapseNoHeartbeat, false},
		{"activity v1", warp.ModeActivity, mkLease(1, 10*time.Minute, 0), warp.LapseNoActivity, false},
		{"exit report wins", warp.ModeTransition, exited, warp.LapseAgentExited, false},
		{"exit report on a v1-extended lease keeps the fallback flag", warp.ModeTransition, exitedV1, warp.LapseAgentExited, true},
		{"exit report in legacy", warp.ModeLegacy, exited, warp.LapseAgentExited, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, fb := warp.LapseReason(tc.mode, tc.l)
			if reason != tc.reason || fb != tc.fallback {
				t.Errorf("got %q, fallback %v, want %q, %v", reason, fb, tc.reason, tc.fallback)
			}
		})
	}
}

func verdictPolicy() warp.Policy {
	return warp.Policy{LeaseWindow: 30 * time.Minute, StallAfter: 15 * time.Minute, SilentAfter: 9 * time.Minute, StartupGrace: 10 * time.Minute,
		SpinAfter: 45 * time.Minute}
}

func TestVerdict(t *testing.T) {
	p := verdictPolicy()
	ns := time.Nanosecond
	exited := mkLease(2, 0, 0)
	exited.Exit = warp.ExitParentExited
	ended := mkLease(2, 0, 0)
	ended.State = warp.LeaseLapsed
	for _, tc := range []struct {
		name string
		l    warp.Lease
		now  time.Time
		want warp.Verdict
	}{
		{"fresh", mkLease(2, 0, 0), p0, warp.VerdictActive},
		{"activity age == stall", mkLease(2, 10*time.Minute, 0), pAt(15 * time.Minute), warp.VerdictActive},
		{"activity age == stall + 1ns", mkLease(2, 10*time.Minute, 0), pAt(15*time.Minute + ns), warp.VerdictStalled},
		{"heartbeat age == silent", mkLease(2, 0, 0), pAt(9 * time.Minute), warp.VerdictActive},
		{"heartbeat age == silent + 1ns", mkLease(2, 0, 0), pAt(9*time.Minute + ns), warp.VerdictSilent},
		{"silent beats stalled", mkLease(2, 0, 0), pAt(16 * time.Minute), warp.VerdictSilent},
		{"v1: heartbeat is progress", mkLease(1, 20*time.Minute, 0), pAt(21 * time.Minute), warp.VerdictActive},
		{"v1: stale heartbeat is silent", mkLease(1, 20*time.Minute, 0), pAt(29*time.Minute + ns), warp.VerdictSilent},
		{"v2 after v1: activity alone", mkLease(2, 20*time.Minute, 0), pAt(21 * time.Minute), warp.VerdictStalled},
		{"exited beats everything", exited, pAt(time.Hour), warp.VerdictExited},
		{"exited even when fresh", exited, p0, warp.VerdictExited},
		{"ended lease has no verdict", ended, p0, warp.VerdictNone},
		{"hook not seen, claim age == stall", hook(mkLease(2, 14*time.Minute, 14*time.Minute), warp.HookNo), pAt(15 * time.Minute), warp.VerdictActive},
		{"hook not seen, claim age == stall + 1ns", hook(mkLease(2, 14*time.Minute, 14*time.Minute), warp.HookNo), pAt(15*time.Minute + ns), warp.VerdictUnwired},
		{"hook seen: active", hook(mkLease(2, 14*time.Minute, 14*time.Minute), warp.HookYes), pAt(16 * time.Minute), warp.VerdictActive},
		{"hook unknown: active as before", mkLease(2, 14*time.Minute, 14*time.Minute), pAt(16 * time.Minute), warp.VerdictActive},
		{"unwired beats stalled", hook(mkLease(2, 14*time.Minute, 0), warp.HookNo), pAt(16 * time.Minute), warp.VerdictUnwired},
		{"silent beats unwired", hook(mkLease(2, 0, 0), warp.HookNo), pAt(16 * time.Minute), warp.VerdictSilent},
		{"a loop reported", looping(mkLease(2, 0, 0)), pAt(time.Minute), warp.VerdictLooping},
		{"stalled beats looping", looping(mkLease(2, 10*time.Minute, 0)), pAt(15*time.Minute + ns), warp.VerdictStalled},
		{"progress age == deadline", progressed(fresh(50*time.Minute), 5*time.Minute), pAt(50 * time.Minute), warp.VerdictActive},
		{"progress age == deadline + 1ns", progressed(fresh(50*time.Minute), 5*time.Minute), pAt(50*time.Minute + ns), warp.VerdictSpinning},
		{"looping beats spinning", looping(progressed(fresh(50*time.Minute), 5*time.Minute)), pAt(50*time.Minute + ns), warp.VerdictLooping},
		{"no progress report: never spinning", fresh(50 * time.Minute), pAt(50 * time.Minute), warp.VerdictActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Verdict(tc.l, tc.now); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBoundsAgreeWithVerdict checks, over a grid of leases and times
// around every threshold, that each lease matches the bounds of exactly
// the verdict Verdict derives: the listing filter and the shown verdict
// cannot disagree.
func TestBoundsAgreeWithVerdict(t *testing.T) {
	p := verdictPolicy()
	var offsets []time.Duration
	for _, base := range []time.Duration{0, p.SilentAfter, p.StallAfter, p.SilentAfter + p.StallAfter, time.Hour} {
		for _, d := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond} {
			offsets = append(offsets, base+d)
		}
	}
	now := pAt(2 * time.Hour)
	// -1: no progress report (LastProgressAt zero).
	progressAges := []time.Duration{-1, 0, p.SpinAfter - time.Nanosecond, p.SpinAfter, p.SpinAfter + time.Nanosecond}
	n := 0
	seen := map[warp.Verdict]bool{}
	for _, schema := range []int{0, 1, 2} {
		for _, hbAge := range offsets {
			for _, actAge := range offsets {
				for _, claimAge := range offsets {
					for _, hs := range []warp.HookSeen{warp.HookUnknown, warp.HookNo, warp.HookYes} {
						for _, exit := range []string{"", warp.ExitWorktreeGone} {
							for _, loop := range []int{0, 4} {
								for _, progAge := range progressAges {
									// The claim is not required to precede activity here: the
									// bounds must agree on any columns a store may hold.
									l := warp.Lease{State: warp.LeaseHeld, SchemaVersion: schema, Exit: exit, HookSeen: hs,
										ClaimedAt: now.Add(-claimAge), LastHeartbeatAt: now.Add(-hbAge), LastActivityAt: now.Add(-actAge),
										Loop: warp.Loop{Count: loop}}
									if progAge >= 0 {
										l.LastProgressAt = now.Add(-progAge)
									}
									want := p.Verdict(l, now)
									seen[want] = true
									for _, v := range warp.Verdicts() {
										if got := p.Bounds(v, now).Match(l); got != (v == want) {
											t.Errorf("schema %d hb age %s activity age %s claim age %s hook %q exit %q loop %d progress age %s: bounds of %s match=%v, but the verdict is %s",
												schema, hbAge, actAge, claimAge, hs, exit, loop, progAge, v, got, want)
										}
									}
									n++
								}
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
	for _, v := range warp.Verdicts() {
		if !seen[v] {
			t.Errorf("the grid never produced %s", v)
		}
	}
}

func TestValidateHeartbeat(t *testing.T) {
	yes := true
	ok2 := warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 3, Host: "h", Agent: "O", ActivityAge: 42.5, InFlight: "Bash"}
	with := func(f func(*warp.Heartbeat)) warp.Heartbeat { h := ok2; f(&h); return h }
	long := strings.Repeat("x", warp.MaxIdentLen+1)
	for _, tc := range []struct {
		name string
		h    warp.Heartbeat
		want error // nil: valid
	}{
		{"v2", ok2, nil},
		{"v2 age 0", with(func(h *warp.Heartbeat) { h.ActivityAge = 0 }), nil},
		{"v2 age at the maximum", with(func(h *warp.Heartbeat) { h.ActivityAge = warp.MaxActivityAge }), nil},
		{"v2 exit parent-exited", with(func(h *warp.Heartbeat) { h.Exit = warp.ExitParentExited }), nil},
		{"v2 exit worktree-gone", with(func(h *warp.Heartbeat) { h.Exit = warp.ExitWorktreeGone }), nil},
		{"v2 hook fields", with(func(h *warp.Heartbeat) { h.HookSeen = &yes; h.HookEvents = 4 }), nil},
		{"v1 ticket only", warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"}, nil},
		{"v1 ignores v2 fields", warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", ActivityAge: -5, Exit: "x"}, nil},
		{"schema 0", with(func(h *warp.Heartbeat) { h.SchemaVersion = 0 }), warp.ErrUnsupportedSchema},
		{"schema 3", with(func(h *warp.Heartbeat) { h.SchemaVersion = 3 }), warp.ErrUnsupportedSchema},
		{"schema -1", with(func(h *warp.Heartbeat) { h.SchemaVersion = -1 }), warp.ErrUnsupportedSchema},
		{"empty ticket", with(func(h *warp.Heartbeat) { h.Ticket = "" }), warp.ErrInvalid},
		{"bad ticket", with(func(h *warp.Heartbeat) { h.Ticket = "T 1" }), warp.ErrInvalid},
		{"v1 bad ticket", warp.Heartbeat{SchemaVersion: 1, Ticket: "../x"}, warp.ErrInvalid},
		{"long host", with(func(h *warp.Heartbeat) { h.Host = long }), warp.ErrInvalid},
		{"long agent", with(func(h *warp.Heartbeat) { h.Agent = long }), warp.ErrInvalid},
		{"long in_flight", with(func(h *warp.Heartbeat) { h.InFlight = long }), warp.ErrInvalid},
		{"v2 epoch 0", with(func(h *warp.Heartbeat) { h.Epoch = 0 }), warp.ErrInvalid},
		{"v2 negative epoch", with(func(h *warp.Heartbeat) { h.Epoch = -2 }), warp.ErrInvalid},
		{"negative age", with(func(h *warp.Heartbeat) { h.ActivityAge = -0.001 }), warp.ErrInvalid},
		{"NaN age", with(func(h *warp.Heartbeat) { h.ActivityAge = math.NaN() }), warp.ErrInvalid},
		{"+Inf age", with(func(h *warp.Heartbeat) { h.ActivityAge = math.Inf(1) }), warp.ErrInvalid},
		{"-Inf age", with(func(h *warp.Heartbeat) { h.ActivityAge = math.Inf(-1) }), warp.ErrInvalid},
		{"age over the maximum", with(func(h *warp.Heartbeat) { h.ActivityAge = math.Nextafter(warp.MaxActivityAge, math.Inf(1)) }), warp.ErrInvalid},
		{"unknown exit", with(func(h *warp.Heartbeat) { h.Exit = "crashed" }), warp.ErrInvalid},
		{"negative hook events", with(func(h *warp.Heartbeat) { h.HookEvents = -1 }), warp.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := warp.ValidateHeartbeat(tc.h)
			if tc.want == nil {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if err != nil && warp.ErrorMessage(err) == "" {
				t.Errorf("error without a message")
			}
		})
	}
}

func ExamplePolicy_Verdict() {
	p := warp.DefaultPolicy()
	l := warp.Lease{State: warp.LeaseHeld, SchemaVersion: 2, LastHeartbeatAt: p0, LastActivityAt: p0.Add(-20 * time.Minute)}
	fmt.Println(p.Verdict(l, p0.Add(time.Minute)))
	// Output: stalled
}

// looping returns l reporting a loop.
func looping(l warp.Lease) warp.Lease {
	l.Loop = warp.Loop{Label: "Bash: npm test", Count: 4, Error: "exit 1"}
	return l
}

// fresh returns a v2 lease claimed at p0 whose heartbeat and activity are
// at p0 + at: active then.
func fresh(at time.Duration) warp.Lease {
	l := mkLease(2, 0, 0)
	l.LastHeartbeatAt, l.LastActivityAt = pAt(at), pAt(at)
	return l
}

// progressed returns l whose work last progressed at p0 + at.
func progressed(l warp.Lease, at time.Duration) warp.Lease {
	l.LastProgressAt = pAt(at)
	return l
}

// warp serve --progress-deadline D (issue 44): a looping lease lapses D
// after its last progress; a spinning one D after it, or once it is
// spinning when that is later; reason no-progress. Without D, or for a
// lease whose loop never reported progress, expiry is activity's alone.
func TestProgressDeadline(t *testing.T) {
	p := verdictPolicy()
	p.ProgressDeadline = 20 * time.Minute
	busy := fresh(50 * time.Minute) // active at p0+50m: window ends p0+80m
	for _, tc := range []struct {
		name       string
		p          warp.Policy
		l          warp.Lease
		wantExpiry time.Time
		wantReason string
	}{
		{"looping: last progress + D", p, looping(progressed(busy, 10*time.Minute)), pAt(30 * time.Minute), warp.LapseNoProgress},
		{"not looping: once spinning (later than D)", p, progressed(busy, 10*time.Minute), pAt(55*time.Minute + time.Nanosecond), warp.LapseNoProgress},
		{"progress recent: activity's window first", p, progressed(busy, 49*time.Minute), pAt(80 * time.Minute), warp.LapseNoActivity},
		{"no progress report", p, looping(busy), pAt(80 * time.Minute), warp.LapseNoActivity},
		{"no deadline: report only", verdictPolicy(), looping(progressed(busy, 10*time.Minute)), pAt(80 * time.Minute), warp.LapseNoActivity},
	} {
		if got := tc.p.ExpiresAt(warp.ModeActivity, tc.l); !got.Equal(tc.wantExpiry) {
			t.Errorf("%s: expires %v, want %v", tc.name, got.Sub(p0), tc.wantExpiry.Sub(p0))
		}
		if got, _ := tc.p.LapseReasonOf(warp.ModeActivity, tc.l); got != tc.wantReason {
			t.Errorf("%s: lapse reason %q, want %q", tc.name, got, tc.wantReason)
		}
	}
	p.ProgressDeadline = -time.Minute
	if err := p.Validate(); !errors.Is(err, warp.ErrInvalid) {
		t.Errorf("a negative progress deadline: %v, want ErrInvalid", err)
	}
}
