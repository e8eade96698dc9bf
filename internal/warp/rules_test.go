package warp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// TestStartGrace: the startup grace a server start opens, or leaves as it
// is when another replica swept within the last two sweep intervals.
func TestStartGrace(t *testing.T) {
	const self, other = "host-a 0.0.0.0:7077", "host-b 0.0.0.0:7077"
	interval := 30 * time.Second
	withGrace := warp.DefaultPolicy() // a startup grace of warp.DefaultStartupGrace
	noGrace := warp.DefaultPolicy()
	noGrace.StartupGrace = 0
	full := warp.Grace{From: t0, Until: t0.Add(withGrace.StartupGrace)}
	for _, tc := range []struct {
		name     string
		policy   warp.Policy
		last     warp.LastSweep
		want     warp.Grace
		wantOpen bool
	}{
		{"first start: no sweep recorded", withGrace, warp.LastSweep{}, full, true},
		{"another replica swept a moment ago", withGrace, warp.LastSweep{At: t0.Add(-10 * time.Second), By: other}, warp.Grace{}, false},
		{"another replica swept just inside two intervals", withGrace, warp.LastSweep{At: t0.Add(-2*interval + time.Nanosecond), By: other}, warp.Grace{}, false},
		{"another replica swept two intervals ago: an outage, protecting what was not due then", withGrace,
			warp.LastSweep{At: t0.Add(-2 * interval), By: other}, dueBefore(full, t0.Add(-2*interval)), true},
		{"this instance swept last: a restart, protecting what was not due at its last sweep", withGrace,
			warp.LastSweep{At: t0.Add(-10 * time.Second), By: self}, dueBefore(full, t0.Add(-10*time.Second)), true},
		{"a sweep recorded before its sweeper was", withGrace, warp.LastSweep{At: t0.Add(-10 * time.Second)}, warp.Grace{}, false},
		{"a sweep time ahead of this clock: nothing known of the gap", withGrace, warp.LastSweep{At: t0.Add(time.Second), By: other}, full, true},
		{"no grace configured ends the earlier one", noGrace, warp.LastSweep{At: t0.Add(-10 * time.Second), By: other}, warp.Grace{From: t0, Until: t0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, open := tc.policy.StartGrace(t0, tc.last, self, interval)
			if g != tc.want || open != tc.wantOpen {
				t.Errorf("got %+v, open %v; want %+v, open %v", g, open, tc.want, tc.wantOpen)
			}
		})
	}
}

func dueBefore(g warp.Grace, at time.Time) warp.Grace {
	g.DueBefore = at
	return g
}

// TestGapGrace: a sweep after more than three sweep intervals without one
// (warp frozen, its database unwritable or unreachable, the clock stepped
// forward) opens a grace from now that protects what was not due when the
// gap began.
func TestGapGrace(t *testing.T) {
	interval := 30 * time.Second
	p := warp.DefaultPolicy()
	noGrace := warp.DefaultPolicy()
	noGrace.StartupGrace = 0
	for _, tc := range []struct {
		name     string
		policy   warp.Policy
		last     warp.LastSweep
		want     warp.Grace
		wantOpen bool
	}{
		{"no sweep recorded: the start's grace covers it", p, warp.LastSweep{}, warp.Grace{}, false},
		{"the last sweep one interval ago: no gap", p, warp.LastSweep{At: t0.Add(-interval), By: "a"}, warp.Grace{}, false},
		{"exactly three intervals: no gap", p, warp.LastSweep{At: t0.Add(-3 * interval), By: "a"}, warp.Grace{}, false},
		{"just over three intervals: a gap", p, warp.LastSweep{At: t0.Add(-3*interval - time.Nanosecond), By: "a"},
			warp.Grace{From: t0, Until: t0.Add(p.StartupGrace), DueBefore: t0.Add(-3*interval - time.Nanosecond)}, true},
		{"an 8-hour laptop sleep", p, warp.LastSweep{At: t0.Add(-8 * time.Hour), By: "a"},
			warp.Grace{From: t0, Until: t0.Add(p.StartupGrace), DueBefore: t0.Add(-8 * time.Hour)}, true},
		{"a clock stepped back: no gap", p, warp.LastSweep{At: t0.Add(time.Hour), By: "a"}, warp.Grace{}, false},
		{"no grace configured: none", noGrace, warp.LastSweep{At: t0.Add(-time.Hour), By: "a"}, warp.Grace{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, open := tc.policy.GapGrace(t0, tc.last, interval)
			if g != tc.want || open != tc.wantOpen {
				t.Errorf("got %+v, open %v; want %+v, open %v", g, open, tc.want, tc.wantOpen)
			}
		})
	}
}

// TestCheckActivityAdoption: activity mode is refused while a host sent
// v1 heartbeats within the window, naming them.
func TestCheckActivityAdoption(t *testing.T) {
	w := warp.DefaultAdoptionWindow
	for _, tc := range []struct {
		name  string
		hosts []warp.HostAdoption
		want  string // the error message; empty: allowed
	}{
		{"no host seen", nil, ""},
		{"every host on v2", []warp.HostAdoption{{Host: "a", V2Count: 3}, {Host: "b", V2Count: 1}}, ""},
		{"a host seen without counts in the window", []warp.HostAdoption{{Host: "a"}}, ""},
		{"one host on v1", []warp.HostAdoption{{Host: "a", V2Count: 3}, {Host: "b", V1Count: 1}},
			"refusing activity mode: 1 host(s) sent v1 heartbeats in the last 24h0m0s (b); migrate them or pass --force"},
		{"a host on both", []warp.HostAdoption{{Host: "a", V1Count: 2, V2Count: 5}, {Host: "c", V1Count: 1}},
			"refusing activity mode: 2 host(s) sent v1 heartbeats in the last 24h0m0s (a, c); migrate them or pass --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := warp.CheckActivityAdoption(warp.Adoption{Window: w, Hosts: tc.hosts})
			if tc.want == "" {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, warp.ErrAdoptionIncomplete) || warp.ErrorMessage(err) != tc.want {
				t.Errorf("got %v, want ErrAdoptionIncomplete %q", err, tc.want)
			}
		})
	}
}

// TestCheckHostBound: an agent token may report up to the bound of hosts
// within the window, the new one counted; no bound when it is 0.
func TestCheckHostBound(t *testing.T) {
	for _, tc := range []struct {
		bound, hosts int
		refused      bool
	}{
		{0, 1_000_000, false},
		{-1, 5, false},
		{3, 1, false},
		{3, 3, false},
		{3, 4, true},
		{1, 2, true},
	} {
		err := warp.CheckHostBound(tc.bound, tc.hosts)
		if got := errors.Is(err, warp.ErrTooManyHosts); got != tc.refused || (err != nil && !got) {
			t.Errorf("bound %d, %d hosts: got %v, want refused %v", tc.bound, tc.hosts, err, tc.refused)
		}
	}
}
