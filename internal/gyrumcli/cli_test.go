package gyrumcli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestStartWorkBadInput(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-1")
	_, watched := agent(t, "sleep", "1000")
	wp := strconv.Itoa(watched.PID)
	dead := "999999999"
	cases := []struct {
		name string
		args []string
		env  map[string]string
		code int
		msg  string
	}{
		{"invalid ticket id", []string{"start-work", "bad/id"}, nil, 2, "invalid"},
		{"ticket and --next", []string{"start-work", "T-1", "--next"}, nil, 2, "not both"},
		{"nothing", []string{"start-work"}, nil, 2, "give one TICKET"},
		{"label without next", []string{"start-work", "T-1", "--label", "x"}, nil, 2, "--label goes with --next"},
		{"empty command", []string{"start-work", "T-1", "--"}, nil, 2, "nothing after --"},
		{"watch-pid with command", []string{"start-work", "T-1", "--watch-pid", wp, "--", "true"}, nil, 2, "exclude"},
		{"dead watch-pid", []string{"start-work", "T-1", "--watch-pid", dead}, nil, 2, "no such live process"},
		{"bad schema", []string{"start-work", "T-1", "--watch-pid", wp, "--schema-version", "3"}, nil, 2, "want 1 or 2"},
		{"bad CLAUDE_PID", []string{"start-work", "T-1"}, map[string]string{"CLAUDE_PID": "abc"}, 2, "CLAUDE_PID"},
		{"dead CLAUDE_PID", []string{"start-work", "T-1"}, map[string]string{"CLAUDE_PID": dead}, 2, "no such live process"},
		{"bad OPENCODE_PID", []string{"start-work", "T-1"}, map[string]string{"OPENCODE_PID": "-3"}, 2, "OPENCODE_PID"},
		{"bad agent regexp", []string{"start-work", "T-1"}, map[string]string{"GYRUM_AGENT_PROCESS": "("}, 2, "GYRUM_AGENT_PROCESS"},
		{"bad interval", []string{"start-work", "T-1", "--watch-pid", wp}, map[string]string{"HEARTBEAT_INTERVAL_SECS": "soon"}, 2, "HEARTBEAT_INTERVAL_SECS"},
		{"missing dir", []string{"start-work", "T-1", "--watch-pid", wp, "--dir", "/nonexistent/x"}, nil, 2, "not a directory"},
		{"unknown ticket", []string{"start-work", "T-404", "--watch-pid", wp}, nil, 1, "not found"},
		{"unknown flag", []string{"start-work", "T-1", "--frobnicate"}, nil, 2, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, nil, 2, "unknown command"},
		{"release with a ticket", []string{"release", "T-8"}, nil, 2, "releases the lease of this worktree (name another with --dir D)"},
		{"complete-pr with a ticket", []string{"complete-pr", "T-8"}, nil, 2, "takes no arguments"},
		{"wait with a length", []string{"wait", "45m"}, nil, 2, "--for 45m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saved := map[string]string{}
			for k, v := range c.env {
				saved[k] = e.vars[k]
				e.vars[k] = v
			}
			defer func() {
				for k, v := range saved {
					e.vars[k] = v
				}
			}()
			wt := mkdir(t)
			r := e.inproc(wt, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, c.code, c.msg)
			}
			if ents, _ := os.ReadDir(wt); len(ents) != 0 {
				t.Fatalf("wrote %v", ents)
			}
			if v := e.ws.Ticket("T-1"); v.Ticket.State != warp.TicketOpen {
				t.Fatalf("T-1 is %s after a refused start-work", v.Ticket.State)
			}
		})
	}
}

func TestStartWorkRefusesAHeldWorktree(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-1")
	e.ws.Create("T-2")
	_, watched := agent(t, "sleep", "1000")
	wp := strconv.Itoa(watched.PID)
	wt := mkdir(t)
	e.startResult(e.gyrum(wt, "", "start-work", "T-1", "--watch-pid", wp, "--json"))
	d, _ := gyrumdir.Open(wt)
	before, _ := os.ReadFile(d.File(gyrumdir.LeaseFile))
	r := e.inproc(wt, "start-work", "T-2", "--watch-pid", wp)
	if r.code != 1 || !strings.Contains(r.stderr, "already holds ticket T-1") || !strings.Contains(r.stderr, "is running") ||
		strings.Contains(r.stderr, "--help") {
		t.Fatalf("second start-work: %+v", r)
	}
	after, _ := os.ReadFile(d.File(gyrumdir.LeaseFile))
	if string(before) != string(after) {
		t.Fatal("lease.json changed")
	}
	if v := e.ws.Ticket("T-2"); v.Ticket.State != warp.TicketOpen {
		t.Fatal("T-2 was claimed")
	}
	// Claimed elsewhere already: 409, nothing written.
	other := mkdir(t)
	r = e.inproc(other, "start-work", "T-1", "--watch-pid", wp)
	if r.code != 1 || !strings.Contains(r.stderr, "conflict") {
		t.Fatalf("claimed ticket: %+v", r)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Fatalf("wrote %v", ents)
	}
	e.inproc(wt, "release")
}

func TestCompleteAndRelease(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-c")
	e.ws.Create("T-r")
	_, watched := agent(t, "sleep", "1000")
	wp := strconv.Itoa(watched.PID)

	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-c", "--watch-pid", wp, "--json"))
	loop, _ := proc.Lookup(sr.LoopPID)
	waitFor(t, "a heartbeat", func() bool { return e.ws.Count() >= 1 })
	// The helper the "no loop left" checks use sees the running loop.
	if pids := heartbeatProcesses(wt); len(pids) != 1 || pids[0] != loop.PID {
		t.Fatalf("heartbeatProcesses(%s) = %v, want the loop %d", wt, pids, loop.PID)
	}
	// The loop runs with one P unless the user's environment names a
	// GOMAXPROCS (this test process's does not).
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", loop.PID)); err == nil && os.Getenv("GOMAXPROCS") == "" &&
		!slices.Contains(strings.Split(string(env), "\x00"), "GOMAXPROCS=1") {
		t.Errorf("the loop's environment has no GOMAXPROCS=1: %q", env)
	}
	sub := filepath.Join(wt, "deep")
	os.Mkdir(sub, 0o755)
	r := e.gyrum(sub, "", "complete-pr", "--pr", "https://example.com/pr/7", "--json")
	var fr gyrumcli.FinishResult
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &fr) != nil {
		t.Fatalf("complete-pr: %+v", r)
	}
	if fr.Action != "completed" || fr.Server != "ok" || fr.Loop.Result != "terminated" || fr.Loop.PID != loop.PID {
		t.Fatalf("complete-pr printed %+v", fr)
	}
	if loop.Alive() {
		t.Fatal("loop still alive")
	}
	v := e.ws.Ticket("T-c")
	if v.Ticket.State != warp.TicketCompleted || v.Lease.PRURL != "https://example.com/pr/7" {
		t.Fatalf("server: %+v", v)
	}
	d, _ := gyrumdir.Open(wt)
	for _, f := range []string{gyrumdir.LeaseFile, gyrumdir.LoopPIDFile, gyrumdir.ParentPIDFile, gyrumdir.StateFile} {
		if _, err := os.Stat(d.File(f)); err == nil {
			t.Errorf("%s left after complete-pr", f)
		}
	}
	if _, err := os.Stat(d.File(gyrumdir.LogFile)); err != nil {
		t.Error("the log should stay")
	}
	// Nothing left to end.
	if r := e.gyrum(wt, "", "release"); r.code != 2 || !strings.Contains(r.stderr, "no .gyrum directory") {
		t.Fatalf("release after complete: %+v", r)
	}
	if r := e.gyrum(wt, "", "release", "--dir", wt); r.code != 1 || !strings.Contains(r.stderr, "holds no lease") {
		t.Fatalf("release --dir after complete: %+v", r)
	}

	// complete-pr on a lease an operator released: 410 reported (exit 1),
	// local state cleaned anyway.
	wt2 := mkdir(t)
	sr = e.startResult(e.gyrum(wt2, "", "start-work", "T-r", "--watch-pid", wp, "--json"))
	if _, err := e.ws.Svc.Release(context.Background(), "T-r", sr.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	r = e.gyrum(wt2, "", "complete-pr")
	if r.code != 1 || !strings.Contains(r.stderr, "lease_ended") || !strings.Contains(r.stderr, "local state cleaned") {
		t.Fatalf("complete-pr after release: %+v", r)
	}
	if d, _ := gyrumdir.At(wt2); d.HasLease() {
		t.Fatal("lease.json kept after a 410")
	}
	if len(heartbeatProcesses(wt2)) != 0 {
		t.Fatal("loop left")
	}
}

func TestReleaseKeepsStateWhenWarpIsDown(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-d")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-d", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	e.ws.Down()
	r := e.gyrum(wt, "", "release")
	if r.code != 1 || !strings.Contains(r.stderr, "lease.json kept") || !strings.Contains(r.stderr, "is warp running") {
		t.Fatalf("release with warp down: %+v", r)
	}
	d, _ := gyrumdir.Open(wt)
	if l, err := d.ReadLease(); err != nil || l.Epoch != sr.Epoch {
		t.Fatalf("lease.json: %+v %v", l, err)
	}
	if loop, _ := proc.Lookup(sr.LoopPID); loop.Alive() {
		t.Fatal("loop not stopped")
	}
	e.ws.Up()
	if r := e.gyrum(wt, "", "release"); r.code != 0 || !strings.Contains(r.stdout, "released T-d") {
		t.Fatalf("retry: %+v", r)
	}
}

// lease.json carries the lease's deadline on this host's clock (held_until):
// the lease's length by warp's clock, from when the claim was sent, so the
// loop holds a deadline before warp ever answers it.
func TestStartWorkWritesTheDeadlineItHolds(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-h")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	before := time.Now()
	e.startResult(e.gyrum(wt, "", "start-work", "T-h", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	after := time.Now()
	d, _ := gyrumdir.Open(wt)
	l, err := d.ReadLease()
	if err != nil {
		t.Fatal(err)
	}
	// The claim's own length, before any heartbeat moved expires_at: the
	// epoch-1 lease as claimed is expires_at − claimed_at of the first
	// answer, which warp derives from the window alone.
	length := e.ws.Svc.Policy().LeaseWindow
	if l.HeldUntil.Before(before.Add(length)) || l.HeldUntil.After(after.Add(length)) {
		t.Errorf("held_until %v, want the claim's send time plus the window %v (between %v and %v)", l.HeldUntil, length, before.Add(length), after.Add(length))
	}
}

func TestCorruptLeaseIsNotTouched(t *testing.T) {
	e := newEnv(t)
	wt := mkdir(t)
	d, _ := gyrumdir.Create(wt)
	os.WriteFile(d.File(gyrumdir.LeaseFile), []byte(`{"ticket":"T-1","epoch":`), 0o600)
	for _, args := range [][]string{{"release"}, {"complete-pr"}} {
		r := e.inproc(wt, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "lease.json") || !strings.Contains(r.stderr, "nothing was changed") {
			t.Fatalf("%v: %+v", args, r)
		}
		if data, _ := os.ReadFile(d.File(gyrumdir.LeaseFile)); string(data) != `{"ticket":"T-1","epoch":` {
			t.Fatal("corrupt lease.json changed")
		}
	}
	r := e.inproc(wt, "start-work", "T-1")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot be read") {
		t.Fatalf("start-work over a corrupt lease: %+v", r)
	}
}

func TestStatusHeartbeatStatusAndKill(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-st")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	sr := e.startResult(e.gyrum(wt, "", "start-work", "T-st", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	d, _ := gyrumdir.Open(wt)
	waitFor(t, "a recorded POST", func() bool { s, err := d.ReadState(); return err == nil && s.Posts >= 1 })
	os.WriteFile(filepath.Join(e.home, "run", "77.json"), []byte("{torn"), 0o600)

	r := e.gyrum(t.TempDir(), "", "status", "--json")
	var hs gyrumcli.HostStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hs) != nil {
		t.Fatalf("status: %+v", r)
	}
	if len(hs.Loops) != 1 || len(hs.Corrupt) != 1 {
		t.Fatalf("status: %+v", hs)
	}
	s := hs.Loops[0]
	if s.Ticket != "T-st" || s.Epoch != sr.Epoch || s.LoopPID != sr.LoopPID || !s.LoopAlive || !s.Registered || s.ParentPID != watched.PID ||
		!s.ParentOK || s.ActivityS == nil || s.LastPOST == nil || s.Outcome != "ok" || s.Dir != wt {
		t.Fatalf("status loop: %+v", s)
	}
	r = e.gyrum(t.TempDir(), "", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "T-st") || !strings.Contains(r.stdout, "alive") || !strings.Contains(r.stderr, "corrupt registry entry") {
		t.Fatalf("status table: %+v", r)
	}
	r = e.gyrum(wt, "", "heartbeat", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "T-st epoch 1") || !strings.Contains(r.stdout, "(ok)") {
		t.Fatalf("heartbeat status: %+v", r)
	}
	r = e.gyrum(wt, "", "heartbeat", "status", "--json")
	if hbs := (gyrumcli.LoopStatus{}); r.code != 0 || json.Unmarshal([]byte(r.stdout), &hbs) != nil || !hbs.Registered || !hbs.LoopAlive {
		t.Fatalf("heartbeat status --json of a running loop: %+v", r)
	}
	r = e.gyrum(wt, "", "heartbeat", "kill")
	if r.code != 0 || !strings.Contains(r.stdout, "terminated") {
		t.Fatalf("heartbeat kill: %+v", r)
	}
	if loop, _ := proc.Lookup(sr.LoopPID); loop.Alive() || len(e.loopsRunning()) != 0 {
		t.Fatal("loop survived heartbeat kill")
	}
	if !d.HasLease() {
		t.Fatal("heartbeat kill removed the lease")
	}
	r = e.gyrum(wt, "", "heartbeat", "status", "--json")
	var ls gyrumcli.LoopStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ls) != nil || ls.LoopAlive || ls.Registered || ls.Outcome != "exit: signal" {
		t.Fatalf("heartbeat status after kill: %+v %+v", r, ls)
	}
	r = e.gyrum(wt, "", "heartbeat", "kill")
	if r.code != 0 || !strings.Contains(r.stdout, "no loop") {
		t.Fatalf("second kill: %+v", r)
	}
	r = e.gyrum(wt, "", "heartbeat", "kill", "--json")
	var ks struct{ Result string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ks) != nil || ks.Result != "none" {
		t.Fatalf("heartbeat kill --json with no loop: %+v", r)
	}
	// wait --json prints the declaration, --done --json the end.
	r = e.gyrum(wt, "", "wait", "--for", "30s", "--reason", "CI", "--json")
	var w gyrumdir.Wait
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &w) != nil || w.Reason != "CI" || w.Until.Sub(w.DeclaredAt) != 30*time.Second {
		t.Fatalf("wait --json: %+v", r)
	}
	r = e.gyrum(wt, "", "wait", "--done", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{
  "ended": true
}` {
		t.Fatalf("wait --done --json: %+v", r)
	}
	// A restarted loop by hand keeps the same lease going.
	e.gyrum(wt, "", "release")
}

func TestHeartbeatKillLeavesForeignProcess(t *testing.T) {
	e := newEnv(t)
	wt := mkdir(t)
	d, _ := gyrumdir.Create(wt)
	d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: e.ws.URL()})
	_, other := agent(t, "sleep", "1000")
	d.WritePID(gyrumdir.LoopPIDFile, proc.Identity{PID: other.PID, StartTime: other.StartTime + 1}) // recycled pid
	if r := e.inproc(wt, "heartbeat", "kill"); r.code != 0 || !strings.Contains(r.stdout, "was not running") {
		t.Fatalf("kill with a recycled pid: %+v", r)
	}
	d.WritePID(gyrumdir.LoopPIDFile, other) // a live process that is not a loop
	if r := e.inproc(wt, "heartbeat", "kill"); r.code != 1 || !strings.Contains(r.stderr, "not a gyrum heartbeat loop") {
		t.Fatalf("kill of a foreign process: %+v", r)
	}
	if !other.Alive() {
		t.Fatal("a foreign process was signalled")
	}
}

func TestWaitCommand(t *testing.T) {
	e := newEnv(t)
	wt := mkdir(t)
	if r := e.inproc(wt, "wait", "--for", "10m", "--reason", "CI"); r.code != 2 {
		t.Fatalf("wait outside a worktree: %+v", r)
	}
	d, _ := gyrumdir.Create(wt)
	d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: e.ws.URL()})
	for _, args := range [][]string{
		{"wait", "--reason", "CI"},
		{"wait", "--for", "10m"},
		{"wait", "--for", "-5m", "--reason", "CI"},
		{"wait", "--for", "soon", "--reason", "CI"},
		{"wait", "--done", "--for", "1m"},
	} {
		if r := e.inproc(wt, args...); r.code != 2 {
			t.Errorf("%v: %+v, want exit 2", args, r)
		}
	}
	r := e.inproc(wt, "wait", "--for", "2h", "--reason", "CI on PR 12")
	if r.code != 0 || !strings.Contains(r.stderr, "longer than the in-flight cap") {
		t.Fatalf("wait: %+v", r)
	}
	w, err := d.ReadWait()
	if err != nil || w.Reason != "CI on PR 12" || w.Until.Sub(w.DeclaredAt) != time.Minute {
		t.Fatalf("declaration %+v, %v; want capped at the 60 s cap", w, err)
	}
	if a, _ := d.Activity(time.Now(), time.Minute); a.InFlight != "wait: CI on PR 12" || a.Age != 0 {
		t.Fatalf("activity during the wait: %+v", a)
	}
	if r := e.inproc(wt, "wait", "--done"); r.code != 0 {
		t.Fatalf("wait --done: %+v", r)
	}
	if _, err := d.ReadWait(); err == nil || !touched(t, d) {
		t.Fatal("wait --done did not end the wait and touch")
	}
}
