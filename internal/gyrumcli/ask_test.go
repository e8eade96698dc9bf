package gyrumcli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// `gyrum heartbeat ask` says whether the worktree's lease holds, and how
// it ended when it does not.
func TestHeartbeatAsk(t *testing.T) {
	e := newEnv(t)
	wt := leaseWithoutLoop(t, e, "T-ask")
	r := e.gyrum(wt, "", "heartbeat", "ask", "--json")
	var a gyrumcli.AskResult
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &a) != nil || a.Ticket != "T-ask" || a.Ended || a.Notice != nil {
		t.Fatalf("ask of a held lease: %+v (%+v)", r, a)
	}
	if r := e.gyrum(wt, "", "heartbeat", "ask"); r.code != 0 || !strings.Contains(r.stdout, "T-ask epoch 1: held") {
		t.Fatalf("ask (text) of a held lease: %+v", r)
	}
	release(t, e, wt)
	r = e.gyrum(wt, "", "heartbeat", "ask", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &a) != nil || !a.Ended || a.Notice == nil ||
		a.Notice.How != gyrumdir.EndReleased || a.Notice.Reason != "operator" || !strings.Contains(a.Message, "T-ask") {
		t.Fatalf("ask of a released lease: %+v (%+v)", r, a)
	}
	// warp unreachable: exit 1 and a message that says what failed.
	e.vars["WARP_URL"] = "http://127.0.0.1:9"
	d, _ := gyrumdir.Open(wt)
	l, _ := d.ReadLease()
	l.WarpURL = "http://127.0.0.1:9"
	if err := d.WriteLease(l); err != nil {
		t.Fatal(err)
	}
	if r := e.gyrum(wt, "", "heartbeat", "ask"); r.code != 1 || !strings.Contains(r.stderr, "ask warp about the lease") {
		t.Fatalf("ask with warp unreachable: %+v", r)
	}
}

// release ends the lease of worktree wt on warp behind its back, as an
// operator does.
func release(t *testing.T, e *env, wt string) {
	t.Helper()
	d, err := gyrumdir.Open(wt)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.ReadLease()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ws.Svc.Release(context.Background(), l.Ticket, l.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
}

// A lease that ends while its loop is gone (killed, crashed, or unable to
// write the notice on a full disk) still reaches the agent: the hook asks
// warp itself, once, and tells it; gyrum-hook through the gyrum beside it,
// touch-activity in process. A held lease says nothing.
func TestHookAsksWarpWhenTheLoopIsSilent(t *testing.T) {
	for _, c := range []struct {
		name string
		bin  string
		args []string
	}{
		{"gyrum-hook", filepath.Join(filepath.Dir(gyrumBin), "gyrum-hook"), nil},
		{"gyrum touch-activity", gyrumBin, []string{"touch-activity"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			wt := leaseWithoutLoop(t, e, "T-silent")
			if r := e.binary(c.bin, wt, hookPayload("PostToolUse", wt), c.args...); r.code != 0 || r.stdout != "" {
				t.Fatalf("hook while the lease holds: %+v", r)
			}
			release(t, e, wt)
			// At most one question a minute: the first was just now.
			if r := e.binary(c.bin, wt, hookPayload("PostToolUse", wt), c.args...); r.code != 0 || r.stdout != "" {
				t.Fatalf("hook within a minute of the last question: %+v", r)
			}
			d, _ := gyrumdir.Open(wt)
			markOld(t, d)
			r := e.binary(c.bin, wt, hookPayload("PostToolUse", wt), c.args...)
			if r.code != 0 || !strings.Contains(r.stdout, "T-silent") || !strings.Contains(r.stdout, "released") {
				t.Fatalf("hook after the lease was released with no loop: %+v", r)
			}
			// Told once: the next calls say nothing, even a minute later.
			markOld(t, d)
			if r := e.binary(c.bin, wt, hookPayload("PostToolUse", wt), c.args...); r.code != 0 || r.stdout != "" {
				t.Fatalf("hook after the agent was told: %+v", r)
			}
		})
	}
}

// markOld dates the hook's last question to warp two minutes back.
func markOld(t *testing.T, d gyrumdir.Dir) {
	t.Helper()
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(d.File(gyrumdir.AskedFile), old, old); err != nil {
		t.Fatal(err)
	}
}

// status names a worktree on a full disk, where the loop can write
// neither its state nor a notice; before, it showed the last state the
// loop wrote ("12s ago (ok)") as if all were well.
func TestStatusSaysDiskFull(t *testing.T) {
	fs := warptest.SmallFS(t, "4m")
	e := newEnv(t)
	wt := filepath.Join(fs, "wt")
	if err := os.Mkdir(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	leaseWithoutLoopIn(t, e, "T-df", wt)
	free := warptest.FillDisk(t, fs)
	defer free()
	r := e.gyrum(t.TempDir(), "", "status", "--json")
	var hs gyrumcli.HostStatus
	if err := json.Unmarshal([]byte(r.stdout), &hs); err != nil {
		t.Fatalf("status --json: %v: %+v", err, r)
	}
	found := false
	for _, l := range hs.Loops {
		found = found || l.Ticket == "T-df" && strings.Contains(l.Problem, "disk full")
	}
	if !found || len(hs.Problems) == 0 || !strings.Contains(hs.Problems[0].Fix, "df -h") {
		t.Fatalf("status --json on a full disk: loops %+v, problems %+v", hs.Loops, hs.Problems)
	}
	if r := e.gyrum(t.TempDir(), "", "status"); !strings.Contains(r.stderr, "T-df: disk full") {
		t.Fatalf("status on a full disk: %+v", r)
	}
	if r := e.gyrum(wt, "", "heartbeat", "status"); !strings.Contains(r.stdout, "problem   disk full") {
		t.Fatalf("heartbeat status on a full disk: %+v", r)
	}
}

// start-work and release retry a request warp refuses for now (429 from
// its per-client connection cap, 503): before, 46 of 500 start-work calls
// of a busy fleet failed outright on 429 too_many_connections.
func TestClientCommandsRetryRefusals(t *testing.T) {
	e := newEnv(t)
	front := warptest.StartRefusing(t, e.ws.URL())
	e.vars["WARP_URL"] = front.URL()
	e.vars["HEARTBEAT_INTERVAL_SECS"] = "600" // only the loop's start POST goes through the front
	e.ws.Create("T-busy")
	wt := mkdir(t)
	_, w := agent(t, "sleep", "1000")
	front.Refuse(http.StatusTooManyRequests, 2)
	r := e.gyrum(wt, "", "start-work", "T-busy", "--watch-pid", strconv.Itoa(w.PID), "--json")
	e.startResult(r)
	if front.Refused() != 2 || !strings.Contains(r.stderr, "retrying in 0s, attempt 2 of 4") {
		t.Fatalf("start-work through two 429s: refused %d, %+v", front.Refused(), r)
	}
	waitFor(t, "the loop's start POST", func() bool { return e.ws.Count() >= 1 })
	front.Refuse(http.StatusServiceUnavailable, 1)
	if r := e.gyrum(wt, "", "release"); r.code != 0 || front.Refused() != 3 {
		t.Fatalf("release through a 503: refused %d, %+v", front.Refused(), r)
	}
	if v := e.ws.Ticket("T-busy"); v.Ticket.State != "open" {
		t.Fatalf("ticket %s after release, want open", v.Ticket.State)
	}
	// More refusals than retries: the command fails and says why.
	front.Refuse(http.StatusTooManyRequests, 10)
	r = e.gyrum(wt, "", "start-work", "T-busy", "--watch-pid", strconv.Itoa(w.PID))
	if r.code == 0 || !strings.Contains(r.stderr, "too_many_connections") || front.Refused() != 3+4 {
		t.Fatalf("start-work through 10 refusals: refused %d, %+v", front.Refused()-3, r)
	}
}

// On a server with tokens, an agent token asks as well as an admin token:
// it reads its own lease with the lease's secret (before, reading the
// ticket needed an admin token and the hook learnt nothing). The answer
// names a later claim as a take-over.
func TestHeartbeatAskWithAnAgentToken(t *testing.T) {
	const tok = "agent-token-for-the-ask-test"
	e := newEnv(t)
	e.ws = warptest.StartWithTokens(t, warp.DefaultPolicy(), []httpapi.Token{{Role: httpapi.RoleAgent, Secret: tok}})
	e.vars["WARP_URL"] = e.ws.URL()
	e.vars["WARP_TOKEN"] = tok
	wt := leaseWithoutLoop(t, e, "T-agent-ask")
	ask := func() gyrumcli.AskResult {
		t.Helper()
		r := e.gyrum(wt, "", "heartbeat", "ask", "--json")
		var a gyrumcli.AskResult
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &a) != nil {
			t.Fatalf("ask with an agent token: %+v", r)
		}
		return a
	}
	if a := ask(); a.Ended {
		t.Fatalf("ask of a held lease with an agent token: %+v", a)
	}
	release(t, e, wt)
	if a := ask(); !a.Ended || a.Notice == nil || a.Notice.How != gyrumdir.EndReleased || a.Notice.Reason != "operator" {
		t.Fatalf("ask of a released lease with an agent token: %+v", a)
	}
	// The wrong secret learns nothing: exit 1, no notice.
	d, _ := gyrumdir.Open(wt)
	l, _ := d.ReadLease()
	l.LeaseSecret = "not-the-secret"
	if err := d.WriteLease(l); err != nil {
		t.Fatal(err)
	}
	if r := e.gyrum(wt, "", "heartbeat", "ask", "--json"); r.code != 1 || strings.Contains(r.stdout, "released") {
		t.Fatalf("ask with another secret: %+v", r)
	}
}
