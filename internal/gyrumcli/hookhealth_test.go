package gyrumcli_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// hookPolicy scales the verdict thresholds down: stalled/unwired past 3 s,
// silent past 20 s (the loops here beat every 0.2 s).
func hookPolicy() warp.Policy {
	return warp.Policy{LeaseWindow: time.Hour, StallAfter: 3 * time.Second, SilentAfter: 20 * time.Second}
}

// newHookEnv is newEnv against a warp with hookPolicy.
func newHookEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.ws = warptest.StartWithPolicy(t, hookPolicy())
	e.vars["WARP_URL"] = e.ws.URL()
	return e
}

// TestLoopWithoutHookIsUnwiredThenActive: the whole path with the real
// binary — start-work, the detached loop, the server's verdict. The agent
// declares a wait, so activity stays fresh, but no hook ever runs: past
// the stall threshold the lease is unwired. One hook run later it is
// active, and the lease says the hook fired.
func TestLoopWithoutHookIsUnwiredThenActive(t *testing.T) {
	e := newHookEnv(t)
	e.ws.Create("T-uw")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	e.startResult(e.gyrum(wt, "", "start-work", "T-uw", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	if r := e.gyrum(wt, "", "wait", "--for", "10m", "--reason", "a long build"); r.code != 0 {
		t.Fatalf("wait: %+v", r)
	}
	claimed := e.ws.Lease("T-uw").ClaimedAt
	waitFor(t, "the unwired verdict", func() bool { return e.ws.Ticket("T-uw").Verdict == warp.VerdictUnwired })
	if age := time.Since(claimed); age <= hookPolicy().StallAfter {
		t.Fatalf("unwired %s after the claim, before the stall threshold", age)
	}
	l := e.ws.Lease("T-uw")
	if l.HookSeen != warp.HookNo || l.HookEvents != 0 || l.InFlight != "wait: a long build" {
		t.Fatalf("lease while unwired: hook %q/%d in flight %q", l.HookSeen, l.HookEvents, l.InFlight)
	}
	for _, b := range e.ws.Beats() {
		if b.Body.HookSeen == nil || *b.Body.HookSeen {
			t.Fatalf("a heartbeat before any hook run says hook_seen %v", b.Body.HookSeen)
		}
	}
	// The hook runs once (Claude Code after a tool call).
	silentOK(t, e.gyrum(t.TempDir(), hookPayload("PostToolUse", wt), "touch-activity"))
	waitFor(t, "the active verdict", func() bool { return e.ws.Ticket("T-uw").Verdict == warp.VerdictActive })
	if l := e.ws.Lease("T-uw"); l.HookSeen != warp.HookYes || l.HookEvents != 1 {
		t.Errorf("lease after one hook run: hook %q/%d, want yes/1", l.HookSeen, l.HookEvents)
	}
	d, _ := gyrumdir.Open(wt)
	// The loop writes its state right after the answer the verdict came from.
	waitFor(t, "heartbeat.state to show the hook", func() bool { st, _ := d.ReadState(); return st.HookSeen })
	if st, _ := d.ReadState(); st.HookEvents != 1 {
		t.Errorf("heartbeat.state: hook_events %d, want 1", st.HookEvents)
	}
	e.inproc(wt, "release")
}

// TestLoopWithHookFromTheStartIsNeverUnwired: a wired agent whose hook
// runs right after the claim stays active past the stall threshold.
func TestLoopWithHookFromTheStartIsNeverUnwired(t *testing.T) {
	e := newHookEnv(t)
	e.ws.Create("T-ok")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	e.startResult(e.gyrum(wt, "", "start-work", "T-ok", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	claimed := e.ws.Lease("T-ok").ClaimedAt
	for i := 0; time.Since(claimed) < hookPolicy().StallAfter+time.Second; i++ {
		// Each call its own command: the same failing call again and
		// again would be a loop (issue 44), not what this test is about.
		p := strings.ReplaceAll(hookPayload("PostToolUseFailure", wt), `"npm test"`, fmt.Sprintf(`"npm test -- --shard=%d"`, i))
		silentOK(t, e.gyrum(t.TempDir(), p, "touch-activity"))
		if v := e.ws.Ticket("T-ok").Verdict; v != warp.VerdictActive {
			t.Fatalf("verdict %s %s after the claim, want active throughout", v, time.Since(claimed))
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitFor(t, "hook_seen reported", func() bool { return e.ws.Lease("T-ok").HookSeen == warp.HookYes })
	e.inproc(wt, "release")
}

// TestOlderLoopWithoutHookFieldsKeepsTheOldVerdicts: raw v2 heartbeats
// without hook_seen or hook_events (loops from before hook reporting):
// past the stall threshold, the one reporting fresh activity is active and
// the one reporting activity as old as its claim is stalled, as before —
// neither is unwired.
func TestOlderLoopWithoutHookFieldsKeepsTheOldVerdicts(t *testing.T) {
	e := newHookEnv(t)
	epochs := map[string]int64{"T-busy": e.ws.Claim("T-busy", "O"), "T-idle": e.ws.Claim("T-idle", "O")}
	post := func(id string, age time.Duration) {
		t.Helper()
		body := `{"schema_version":2,"ticket":"` + id + `","epoch":` + strconv.FormatInt(epochs[id], 10) +
			`,"host":"test-host","agent":"O","activity_age_s":` + strconv.FormatFloat(age.Seconds(), 'f', 3, 64) + `}`
		resp, err := http.Post(e.ws.URL()+"/v1/heartbeat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("raw v2 heartbeat: %d", resp.StatusCode)
		}
	}
	claimed := e.ws.Lease("T-idle").ClaimedAt
	for time.Since(claimed) <= hookPolicy().StallAfter+500*time.Millisecond {
		post("T-busy", 0)
		post("T-idle", time.Since(claimed))
		time.Sleep(100 * time.Millisecond)
	}
	if v := e.ws.Ticket("T-busy").Verdict; v != warp.VerdictActive {
		t.Errorf("fresh activity, no hook fields, past the stall threshold: verdict %s, want active", v)
	}
	if v := e.ws.Ticket("T-idle").Verdict; v != warp.VerdictStalled {
		t.Errorf("no activity since the claim, no hook fields: verdict %s, want stalled", v)
	}
	for id := range epochs {
		if l := e.ws.Lease(id); l.HookSeen != warp.HookUnknown || l.HookEvents != 0 {
			t.Errorf("%s: hook %q/%d, want unknown", id, l.HookSeen, l.HookEvents)
		}
	}
}
