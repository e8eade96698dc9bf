package gyrumcli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
)

// An agent that exited leaves its worktree's lease.json behind; status
// says the agent is gone and what to do — release, or start the work
// again from a new session — instead of a bare "DEAD" (issue 46). A
// restarted loop could not help: it would watch the same dead process.
func TestStatusSaysWhatToDoWhenTheAgentExited(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-ex")
	cmd, w := agent(t, "sleep", "1000")
	wt := mkdir(t)
	e.startResult(e.gyrum(wt, "", "start-work", "T-ex", "--watch-pid", strconv.Itoa(w.PID), "--json"))
	t.Cleanup(func() { e.gyrum(wt, "", "release") })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitFor(t, "the loop to exit after its agent", func() bool { return len(e.loopsRunning()) == 0 })

	r := e.gyrum(t.TempDir(), "", "status", "--json")
	var hs gyrumcli.HostStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hs) != nil || len(hs.Loops) != 1 {
		t.Fatalf("status: %+v", r)
	}
	if len(hs.Problems) != 1 || !strings.Contains(hs.Problems[0].Problem, "T-ex: the agent it watched (pid "+strconv.Itoa(w.PID)+") has exited") ||
		!strings.Contains(hs.Problems[0].Fix, "gyrum release --dir "+wt) || !strings.Contains(hs.Problems[0].Fix, "gyrum start-work T-ex") ||
		strings.Contains(hs.Problems[0].Fix, "heartbeat run") {
		t.Errorf("status --json problems %+v, want the exit and release or start-work again", hs.Problems)
	}
	if r := e.gyrum(t.TempDir(), "", "status"); !strings.Contains(r.stdout, "exited") || strings.Contains(r.stdout, "DEAD") ||
		!strings.Contains(r.stderr, "fix: gyrum release --dir") {
		t.Errorf("status text:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	if r := e.gyrum(wt, "", "heartbeat", "status"); !strings.Contains(r.stdout, "next      gyrum release --dir") {
		t.Errorf("heartbeat status: %s", r.stdout)
	}
	// The fix it names works: the worktree is clean, nothing left to say.
	if r := e.gyrum(wt, "", "release"); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	if r := e.gyrum(t.TempDir(), "", "status", "--json"); strings.Contains(r.stdout, "problems") {
		t.Errorf("status after the release: %s", r.stdout)
	}
}

// A loop that is gone while its agent lives: restarting the loop is the
// fix (or a release).
func TestStatusSaysWhatToDoWhenTheLoopIsGone(t *testing.T) {
	e := newEnv(t)
	wt := leaseWithoutLoop(t, e, "T-nl")
	r := e.gyrum(t.TempDir(), "", "status", "--json")
	var hs gyrumcli.HostStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hs) != nil {
		t.Fatalf("status: %+v", r)
	}
	if len(hs.Problems) != 1 || !strings.Contains(hs.Problems[0].Problem, "loop is gone") ||
		!strings.Contains(hs.Problems[0].Fix, "nohup gyrum heartbeat run --dir "+wt) {
		t.Errorf("status --json problems %+v, want the loop restarted", hs.Problems)
	}
}
