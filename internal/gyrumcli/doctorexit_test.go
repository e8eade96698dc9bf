package gyrumcli_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/warp"
)

// startWatched claims ticket in a fresh worktree watching a stand-in
// agent it returns, so the test can end the agent.
func startWatched(t *testing.T, e *env, ticket string) (wt string, kill func(), loop proc.Identity) {
	t.Helper()
	e.ws.Create(ticket)
	cmd, watched := agent(t, "sleep", "1000")
	wt = mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", ticket, "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	loop, err := proc.Lookup(sr.LoopPID)
	if err != nil {
		t.Fatal(err)
	}
	return wt, func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }, loop
}

// The agent exited and its loop with it (the usual end without a
// release): restarting the loop cannot help — it would watch the same dead
// process — so doctor's fix hands the ticket back, and says how to go on
// (issue 46). Its command is tested like every other.
func TestDoctorFixExitedAgent(t *testing.T) {
	e, _ := fixEnv(t)
	wt, kill, loop := startWatched(t, e, "T-X1")
	kill()
	waitFor(t, "the loop to exit after its agent", func() bool { return !loop.Alive() })
	c := failing(t, doctorReport(t, e, wt), "loop (this worktree)", false)
	if !strings.Contains(c.Detail, "has exited") || strings.Contains(c.Command, "heartbeat run") ||
		!strings.HasPrefix(c.Command, "gyrum release --dir ") || !strings.Contains(c.Fix, "gyrum start-work T-X1") {
		t.Errorf("the fix of an exited agent: detail %q, command %q, fix %q", c.Detail, c.Command, c.Fix)
	}
	runFix(t, e, wt, c)
	passes(t, e, wt, "loop (this worktree)")
}

// The loop was killed and its agent is gone too: the stale entry is
// dropped and the ticket handed back, not the loop restarted.
func TestDoctorFixDeadLoopOfAnExitedAgent(t *testing.T) {
	e, home := fixEnv(t)
	_, kill, loop := startWatched(t, e, "T-X2")
	syscall.Kill(loop.PID, syscall.SIGKILL)
	waitFor(t, "the loop to die", func() bool { return !loop.Alive() })
	kill()
	c := failing(t, doctorReport(t, e, home), "loop T-X2", false)
	if !strings.Contains(c.Command, "gyrum release --dir ") || strings.Contains(c.Command, "heartbeat run") {
		t.Errorf("command %q, want the entry dropped and the ticket released", c.Command)
	}
	runFix(t, e, home, c)
	passes(t, e, home, "loop T-X2")
	if got := e.ws.Ticket("T-X2"); got.Ticket.State != warp.TicketOpen {
		t.Errorf("after the fix T-X2 is %s, want open", got.Ticket.State)
	}
}

// doctor's warp check probes (Warp-Probe: 1): it passes and leaves
// nothing behind, no host counted for adoption (issue 46: each run used to
// count a heartbeat not_found).
func TestDoctorProbeLeavesNoTrace(t *testing.T) {
	e, home := fixEnv(t)
	var warpCheck doctor.Check
	for _, c := range doctorReport(t, e, home).Checks {
		if c.Name == "warp" {
			warpCheck = c
		}
	}
	if warpCheck.Status != doctor.StatusOK || strings.Contains(warpCheck.Detail, "before probes") {
		t.Fatalf("warp check %+v, want ok from a warp that knows probes", warpCheck)
	}
	beats := e.ws.Beats()
	if len(beats) != 1 || beats[0].Body.Ticket != doctor.ProbeTicket || beats[0].Status != 200 {
		t.Fatalf("warp received %+v, want one probe answered 200", beats)
	}
	a, err := e.ws.Svc.Adoption(context.Background(), warp.DefaultAdoptionWindow)
	if err != nil || a.HostCount != 0 {
		t.Errorf("adoption after doctor: %+v, %v; want no host counted", a, err)
	}
}
