package sim_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sim"
	"github.com/gyrum-labs/warp/internal/warp"
)

func classCounts(p sim.Plan) map[sim.Class]int {
	n := map[sim.Class]int{}
	for _, a := range p.Agents {
		n[a.Class]++
	}
	return n
}

func TestBuildADR138Fleet(t *testing.T) {
	p, err := sim.Build(sim.ScenarioADR138, 30, sim.ClientV2, sim.DefaultTiming())
	if err != nil {
		t.Fatal(err)
	}
	got := classCounts(p)
	want := map[sim.Class]int{sim.ClassOrphan: 3, sim.ClassOrphanGone: 3, sim.ClassWedged: 4, sim.ClassLongStep: 10, sim.ClassIdle: 10}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("classes: got %v, want %v (the night of ADR-138: 6 orphans, 4 wedged)", got, want)
	}
	long := map[time.Duration]int{}
	for _, a := range p.Agents {
		if a.Class == sim.ClassLongStep {
			long[a.LongStep]++
		}
	}
	if long[20*time.Minute] != 5 || long[40*time.Minute] != 5 {
		t.Errorf("long steps: got %v, want five of 20 min and five of 40 min", long)
	}
}

func TestBuildSmallFleetHasEveryClass(t *testing.T) {
	for _, n := range []int{sim.MinAgents, 8, 13} {
		p, err := sim.Build(sim.ScenarioADR138, n, sim.ClientV2, sim.DefaultTiming())
		if err != nil {
			t.Fatal(err)
		}
		got := classCounts(p)
		for _, c := range []sim.Class{sim.ClassOrphan, sim.ClassOrphanGone, sim.ClassWedged, sim.ClassLongStep, sim.ClassIdle} {
			if got[c] == 0 {
				t.Errorf("%d agents: no %s agent (classes %v)", n, c, got)
			}
		}
		if len(p.Agents) != n {
			t.Errorf("%d agents: plan has %d", n, len(p.Agents))
		}
	}
}

// The schedule must be one the product can pass: healthy idle gaps stay
// under the staleness limit, failures stop all activity, and the run lasts
// until every failure can have lapsed.
func TestBuildScheduleInvariants(t *testing.T) {
	tm := sim.DefaultTiming()
	p, err := sim.Build(sim.ScenarioADR138, 30, sim.ClientV2, tm)
	if err != nil {
		t.Fatal(err)
	}
	var lastFail time.Duration
	for _, a := range p.Agents {
		if a.Actions[0].Kind != sim.ActStart {
			t.Fatalf("%s: first action %s, want start", a.Name, a.Actions[0].Kind)
		}
		open := map[string]time.Duration{}
		var lastPost, prev time.Duration
		killed := false
		for _, act := range a.Actions {
			if act.At < prev {
				t.Fatalf("%s: actions out of order at %s", a.Name, act.At)
			}
			prev = act.At
			if act.At >= p.End {
				t.Errorf("%s: action %s at %s is after the end %s", a.Name, act.Kind, act.At, p.End)
			}
			switch act.Kind {
			case sim.ActPreTool:
				if killed {
					t.Errorf("%s: tool call after the kill", a.Name)
				}
				if len(open) == 0 && lastPost > 0 && !a.Class.Failure() && act.At-lastPost >= tm.Staleness {
					t.Errorf("%s: idle %s between tool calls, not under the staleness limit %s", a.Name, act.At-lastPost, tm.Staleness)
				}
				open[act.ToolUseID] = act.At
			case sim.ActPostTool:
				at, ok := open[act.ToolUseID]
				if !ok {
					t.Errorf("%s: PostToolUse %s without its PreToolUse", a.Name, act.ToolUseID)
				}
				if d := act.At - at; a.Class == sim.ClassLongStep && d > time.Minute && d != a.LongStep {
					t.Errorf("%s: long call of %s, want %s", a.Name, d, a.LongStep)
				}
				delete(open, act.ToolUseID)
				lastPost = act.At
				if a.Class == sim.ClassWedged && act.At > a.FailAt {
					t.Errorf("%s: wedged agent active at %s after its failure at %s", a.Name, act.At, a.FailAt)
				}
			case sim.ActKill:
				killed = true
				if act.At != a.FailAt {
					t.Errorf("%s: killed at %s, planned failure %s", a.Name, act.At, a.FailAt)
				}
			case sim.ActDeleteWorktree:
				if !killed || a.Class != sim.ClassOrphanGone {
					t.Errorf("%s (%s): worktree deleted without a kill before", a.Name, a.Class)
				}
			}
		}
		switch a.Class {
		case sim.ClassOrphan, sim.ClassOrphanGone:
			if !killed {
				t.Errorf("%s: orphan never killed", a.Name)
			}
		case sim.ClassWedged:
			if lastPost != a.FailAt {
				t.Errorf("%s: last activity %s, want the failure %s", a.Name, lastPost, a.FailAt)
			}
		case sim.ClassLongStep, sim.ClassIdle:
			if a.FailAt != 0 {
				t.Errorf("%s: healthy agent with a failure at %s", a.Name, a.FailAt)
			}
			if p.End-lastPost >= tm.Staleness {
				t.Errorf("%s: idle from %s to the end %s", a.Name, lastPost, p.End)
			}
		}
		lastFail = max(lastFail, a.FailAt)
	}
	if min := lastFail + tm.LeaseWindow + tm.Interval; p.End < min {
		t.Errorf("end %s: want at least the last failure + lease window + one tick = %s", p.End, min)
	}
	if p.RestartAt <= 0 || p.RestartAt+p.RestartOutage >= p.End {
		t.Errorf("restart at %s for %s: want one inside the run (end %s)", p.RestartAt, p.RestartOutage, p.End)
	}
}

func TestBuildMixedPutsEveryClassOnBothClients(t *testing.T) {
	p, err := sim.Build(sim.ScenarioADR138, 30, sim.ClientMixed, sim.DefaultTiming())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[sim.Class]map[sim.Client]int{}
	for _, a := range p.Agents {
		if a.Client != sim.ClientV1 && a.Client != sim.ClientV2 {
			t.Fatalf("%s: client %q, want v1 or v2", a.Name, a.Client)
		}
		if seen[a.Class] == nil {
			seen[a.Class] = map[sim.Client]int{}
		}
		seen[a.Class][a.Client]++
		if (a.Client == sim.ClientV1) != (a.Host == "sim-host-legacy") {
			t.Errorf("%s: client %s on host %s", a.Name, a.Client, a.Host)
		}
	}
	for c, m := range seen {
		if m[sim.ClientV1] == 0 || m[sim.ClientV2] == 0 {
			t.Errorf("%s: clients %v, want both", c, m)
		}
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	a, err := sim.Build(sim.ScenarioADR138, 12, sim.ClientV2, sim.DefaultTiming())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sim.Build(sim.ScenarioADR138, 12, sim.ClientV2, sim.DefaultTiming())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two builds of the same scenario differ")
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	tm := sim.DefaultTiming()
	short := tm
	short.Staleness = 5 * time.Minute
	for _, tc := range []struct {
		name     string
		scenario string
		n        int
		client   sim.Client
		timing   sim.Timing
	}{
		{"unknown scenario", "adr-139", 30, sim.ClientV2, tm},
		{"too few agents", sim.ScenarioADR138, sim.MinAgents - 1, sim.ClientV2, tm},
		{"too many agents", sim.ScenarioADR138, sim.MaxAgents + 1, sim.ClientV2, tm},
		{"unknown client", sim.ScenarioADR138, 30, "v3", tm},
		{"staleness under the idle gaps", sim.ScenarioADR138, 30, sim.ClientV2, short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sim.Build(tc.scenario, tc.n, tc.client, tc.timing)
			if !errors.Is(err, warp.ErrInvalid) {
				t.Fatalf("got %v, want an ErrInvalid error", err)
			}
		})
	}
}

func TestParseClient(t *testing.T) {
	for _, s := range []string{"v1", "v2", "mixed"} {
		if c, err := sim.ParseClient(s); err != nil || string(c) != s {
			t.Errorf("ParseClient(%q) = %q, %v", s, c, err)
		}
	}
	if _, err := sim.ParseClient("V2"); !errors.Is(err, warp.ErrInvalid) {
		t.Errorf("ParseClient(V2): got %v, want ErrInvalid", err)
	}
}
