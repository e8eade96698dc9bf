package gyrumcli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Why --release-on-exit stays opt-in (issue 32, ask 5): an agent gyrum
// does not recognise runs start-work from a shell of its own per tool call
// (as Codex does), so start-work falls back to watching that shell, which
// exits as soon as the call returns. The loop then sends an exit report
// within a tick while the agent lives on: with release on exit by
// default, its ticket would be handed back at once.
func TestUnknownAgentsCallShellReportsExitWhileTheAgentLives(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-ux")
	wt := mkdir(t)
	out := filepath.Join(t.TempDir(), "start.json")
	// The "agent": a long-lived process of no known kind whose tool call is
	// a shell of its own running start-work, then more work.
	call := shellquote.Quote(gyrumBin) + " start-work T-ux --json > " + shellquote.Quote(out)
	agentCmd := exec.Command("/bin/sh", "-c", "/bin/sh -c "+shellquote.Quote(call)+"; exec sleep 1000")
	agentCmd.Dir, agentCmd.Env = wt, e.environ()
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })

	waitFor(t, "an exit report", func() bool { l := e.ws.Ticket("T-ux").Lease; return l != nil && l.Exit != "" })
	v := e.ws.Ticket("T-ux")
	if v.Lease.Exit != "parent-exited" || v.Verdict != warp.VerdictExited {
		t.Fatalf("exit %q verdict %q", v.Lease.Exit, v.Verdict)
	}
	if err := agentCmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the agent is gone (%v): the premise of the test is lost", err)
	}
	sr := e.startResult(result{stdout: readFile(t, out)})
	if sr.WatchedHow != "parent" || strings.Contains(sr.Watched, "sleep") {
		t.Errorf("start-work watched %s (%s), want the call's shell as its parent", sr.Watched, sr.WatchedHow)
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
