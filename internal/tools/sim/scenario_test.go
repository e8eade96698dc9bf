package sim_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/tools/sim"
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
	want := map[sim.Class]int{sim.ClassOrphan: 3, sim.ClassOrphanGone: 3, sim.ClassWedged: 4, sim.ClassWedgedDenied: 2,
		sim.ClassLongStep: 6, sim.ClassIdle: 2, sim.ClassProjectCwd: 4, sim.ClassReleased: 2, sim.ClassLooping: 2, sim.ClassSpinning: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("classes: got %v, want %v (the night of ADR-138: 6 orphans, 4 wedged; and the measured client's ways)", got, want)
	}
	long := map[time.Duration]int{}
	for _, a := range p.Agents {
		if a.Class == sim.ClassLongStep {
			long[a.LongStep]++
		}
	}
	if long[20*time.Minute] != 3 || long[40*time.Minute] != 3 {
		t.Errorf("background jobs: got %v, want three of 20 min and three of 40 min", long)
	}
	if n := p.BackgroundJobs(); n < 1 || n > 6 {
		t.Errorf("background jobs at once: got %d, want 1 to 6", n)
	}
}

func TestBuildSmallFleetHasEveryClass(t *testing.T) {
	for _, n := range []int{sim.MinAgents, 11, 13} {
		p, err := sim.Build(sim.ScenarioADR138, n, sim.ClientV2, sim.DefaultTiming())
		if err != nil {
			t.Fatal(err)
		}
		got := classCounts(p)
		for _, c := range sim.Classes() {
			if got[c] == 0 {
				t.Errorf("%d agents: no %s agent (classes %v)", n, c, got)
			}
		}
		if got[sim.ClassOrphan]+got[sim.ClassOrphanGone] < 2 {
			t.Errorf("%d agents: %d orphans, want at least 2", n, got[sim.ClassOrphan]+got[sim.ClassOrphanGone])
		}
		if len(p.Agents) != n {
			t.Errorf("%d agents: plan has %d", n, len(p.Agents))
		}
	}
}

// The schedule must be one the product can pass and the measured client
// could produce: foreground calls of at most 10 minutes, longer work in
// the background with no hook until it ends, denied calls without a Post
// event, idle gaps under the staleness limit, failures that stop all
// activity, and a run that lasts until every failure can have lapsed.
func TestBuildScheduleInvariants(t *testing.T) {
	tm := sim.DefaultTiming()
	p, err := sim.Build(sim.ScenarioADR138, 30, sim.ClientV2, tm)
	if err != nil {
		t.Fatal(err)
	}
	var lastFail time.Duration
	seen := map[string]int{}
	for _, a := range p.Agents {
		if a.Actions[0].Kind != sim.ActStart {
			t.Fatalf("%s: first action %s, want start", a.Name, a.Actions[0].Kind)
		}
		open := map[string]sim.Action{}
		var lastEvidence, prev, jobEnd time.Duration
		killed, released := false, false
		denied := 0
		for _, act := range a.Actions {
			if act.At < prev {
				t.Fatalf("%s: actions out of order at %s", a.Name, act.At)
			}
			prev = act.At
			if act.At >= p.End {
				t.Errorf("%s: action %s at %s is after the end %s", a.Name, act.Kind, act.At, p.End)
			}
			if (act.Kind == sim.ActPreTool || act.Kind == sim.ActPostTool) && act.At > jobEnd-time.Second && act.At < jobEnd {
				// the Post of the background call itself is 0.1 s after its start
				if o, ok := open[act.ToolUseID]; !ok || o.Background == 0 {
					t.Errorf("%s: hook at %s while its background job runs (until %s)", a.Name, act.At, jobEnd)
				}
			}
			switch act.Kind {
			case sim.ActPreTool:
				seen["pre"]++
				if killed {
					t.Errorf("%s: tool call after the kill", a.Name)
				}
				if len(open) == 0 && !a.Class.Failure() && act.At-lastEvidence >= tm.Staleness {
					t.Errorf("%s: idle %s before %s, not under the staleness limit %s", a.Name, act.At-lastEvidence, act.At, tm.Staleness)
				}
				lastEvidence = act.At
				if act.Denied {
					denied++
					seen["denied"]++
					continue
				}
				if act.Background > 0 {
					seen["background"]++
					if act.Tool != "Bash" || a.Class != sim.ClassLongStep {
						t.Errorf("%s (%s): background %s call", a.Name, a.Class, act.Tool)
					}
					jobEnd = act.At + act.Background
				}
				open[act.ToolUseID] = act
			case sim.ActPostTool:
				pre, ok := open[act.ToolUseID]
				if !ok {
					t.Errorf("%s: PostToolUse %s without its PreToolUse", a.Name, act.ToolUseID)
					continue
				}
				d := act.At - pre.At
				switch {
				case pre.Background > 0 && d > time.Second:
					t.Errorf("%s: PostToolUse of a background call %s after its start, want ~0.1 s", a.Name, d)
				case d > sim.MaxForeground:
					t.Errorf("%s: foreground call of %s, over the %s Claude Code allows", a.Name, d, sim.MaxForeground)
				}
				if act.Failed {
					seen["failed"]++
				}
				if d == sim.MaxForeground {
					seen["10min"]++
				}
				delete(open, act.ToolUseID)
				lastEvidence = act.At
				if pre.Background > 0 {
					lastEvidence = jobEnd // the job's CPU is the evidence until it ends
				}
				if (a.Class == sim.ClassWedged || a.Class == sim.ClassWedgedDenied) && act.At > a.FailAt {
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
			case sim.ActRelease:
				released = true
				if a.Class != sim.ClassReleased || act.At != a.ReleaseAt {
					t.Errorf("%s (%s): release at %s, planned %s", a.Name, a.Class, act.At, a.ReleaseAt)
				}
				if act.At > p.RestartAt-2*time.Minute && act.At < p.RestartAt+p.RestartOutage+time.Minute {
					t.Errorf("%s: release at %s, too close to the warp restart", a.Name, act.At)
				}
			}
		}
		switch a.Class {
		case sim.ClassOrphan, sim.ClassOrphanGone:
			if !killed {
				t.Errorf("%s: orphan never killed", a.Name)
			}
		case sim.ClassWedged:
			if lastEvidence != a.FailAt {
				t.Errorf("%s: last activity %s, want the failure %s", a.Name, lastEvidence, a.FailAt)
			}
		case sim.ClassWedgedDenied:
			if last := a.Actions[len(a.Actions)-1]; last.Kind != sim.ActPreTool || !last.Denied || last.At != a.FailAt {
				t.Errorf("%s: last action %+v, want a denied call at the failure %s", a.Name, last, a.FailAt)
			}
		case sim.ClassReleased:
			if !released || p.End-a.ReleaseAt < tm.Interval+sim.MaxForeground {
				t.Errorf("%s: released=%v at %s: want a release with time left to be told", a.Name, released, a.ReleaseAt)
			}
		case sim.ClassLongStep, sim.ClassIdle, sim.ClassProjectCwd:
			if a.FailAt != 0 {
				t.Errorf("%s: healthy agent with a failure at %s", a.Name, a.FailAt)
			}
			if p.End-lastEvidence >= tm.Staleness {
				t.Errorf("%s: idle from %s to the end %s", a.Name, lastEvidence, p.End)
			}
			if (a.Class == sim.ClassIdle || a.Class == sim.ClassProjectCwd) && denied != 1 {
				t.Errorf("%s: %d denied calls, want 1", a.Name, denied)
			}
			if a.ProjectCwd != (a.Class == sim.ClassProjectCwd) {
				t.Errorf("%s (%s): project cwd %v", a.Name, a.Class, a.ProjectCwd)
			}
		}
		if len(open) != 0 && a.Class != sim.ClassOrphan && a.Class != sim.ClassOrphanGone {
			t.Errorf("%s: %d tool calls never end", a.Name, len(open))
		}
		lastFail = max(lastFail, a.FailAt)
	}
	for _, k := range []string{"denied", "background", "failed", "10min"} {
		if seen[k] == 0 {
			t.Errorf("no %s call in the scenario (%v)", k, seen)
		}
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
