package gyrumcli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warp"
)

// An agent gyrum does not know (issue 40) runs each tool call as a
// `bash -c` of its own and lives on between calls. start-work, run in one
// such call, watches the agent, not the call's shell: the lease stays
// active through later calls and a quiet step, and turns exited when the
// agent exits. Before, it watched the shell, which exited with the call:
// the lease said exited a second after the claim and lapsed mid-work.
func TestUnknownAgentIsWatchedAboveItsCallShell(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	sh, _ := exec.LookPath("sh")
	e := newEnv(t)
	e.ws.Create("T-ux")
	wt := mkdir(t)
	out := filepath.Join(t.TempDir(), "start.json")
	called := filepath.Join(t.TempDir(), "called") // made once every call returned
	// The stand-in agent: a process of no known kind (a copy of sh under
	// another name) whose tool calls are bash -c children; it exits when
	// its stdin closes.
	agentPath := copyBinary(t, sh, t.TempDir(), "stand-in-agent")
	call := func(cmd string) string { return shellquote.Quote(bash) + " -c " + shellquote.Quote(cmd+"; true") }
	gyrum := shellquote.Quote(gyrumBin)
	script := strings.Join([]string{
		call(gyrum + " start-work T-ux --json > " + shellquote.Quote(out)),
		call(gyrum + " touch-activity"),
		call("sleep 1"),                              // a quiet step
		call("cd / && " + gyrum + " touch-activity"), // credited through the agent index, not the cwd
		": > " + shellquote.Quote(called),
		"read _ || true", // lives until the test closes its stdin
	}, "; ")
	agentCmd := exec.Command(agentPath, "-c", script)
	agentCmd.Dir, agentCmd.Env = wt, e.environ()
	stdin, err := agentCmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })

	waitFor(t, "start-work's answer", func() bool {
		data, _ := os.ReadFile(out)
		return len(data) > 0 && strings.HasSuffix(string(data), "\n")
	})
	sr := e.startResult(result{stdout: readFile(t, out)})
	if sr.WatchedHow != "caller" || sr.WatchedPID != agentCmd.Process.Pid {
		t.Fatalf("start-work watched pid %d %s (%s), want the stand-in agent %d", sr.WatchedPID, sr.Watched, sr.WatchedHow, agentCmd.Process.Pid)
	}
	// Every call returned (their shells are gone) and the loop has posted
	// for a while since: the lease is still held, active, no exit report.
	d, err := gyrumdir.Open(wt)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the calls", func() bool { _, err := os.Stat(called); return err == nil })
	if st, err := os.Stat(d.File(gyrumdir.HookEventsFile)); err != nil || st.Size() != 2 {
		var n int64
		if err == nil {
			n = st.Size()
		}
		t.Errorf("hook-events holds %d bytes (%v), want 2 (two hook runs): the one run from / must find the agent's worktree through the index", n, err)
	}
	var posts int64 = -1
	waitFor(t, "10 more heartbeats", func() bool {
		st, err := d.ReadState()
		if err != nil {
			return false
		}
		if posts < 0 {
			posts = st.Posts
		}
		return st.Posts >= posts+10
	})
	if v := e.ws.Ticket("T-ux"); v.Lease == nil || v.Lease.Exit != "" || v.Verdict != warp.VerdictActive {
		t.Fatalf("after the calls: lease %+v verdict %q, want held and active", v.Lease, v.Verdict)
	}
	// status and doctor say which process is watched, and why.
	var hs gyrumcli.HostStatus
	if r := e.gyrum(wt, "", "status", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &hs) != nil || len(hs.Loops) != 1 ||
		hs.Loops[0].Watched != "stand-in-agent" || hs.Loops[0].WatchedHow != "caller" {
		t.Errorf("status --json: %+v (%+v), want the loop watching stand-in-agent, caller", hs, r)
	}
	if r := e.gyrum(wt, "", "doctor"); !strings.Contains(r.stdout, "did not recognise the agent") {
		t.Errorf("doctor does not say the agent was not recognised:\n%s%s", r.stdout, r.stderr)
	}
	// The agent exits: the lease says so.
	stdin.Close()
	if err := agentCmd.Wait(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an exit report", func() bool { l := e.ws.Ticket("T-ux").Lease; return l != nil && l.Exit != "" })
	if v := e.ws.Ticket("T-ux"); v.Lease.Exit != "parent-exited" || v.Verdict != warp.VerdictExited {
		t.Fatalf("after the agent's exit: exit %q verdict %q, want parent-exited, exited", v.Lease.Exit, v.Verdict)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
