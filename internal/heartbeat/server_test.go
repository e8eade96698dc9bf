package heartbeat_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// warpServer is the real warp of these tests (internal/testsupport/warptest).
type warpServer = warptest.Server

func newWarp(t testing.TB) *warpServer { return warptest.Start(t) }

// watched starts a real process standing in for the agent; it is killed
// and reaped at the end of the test.
func watched(t testing.TB) (*exec.Cmd, proc.Identity) {
	return warptest.StartProcess(t, "sleep", "1000")
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	warptest.WaitFor(t, what, cond)
}

// worktree prepares .gyrum/ as start-work does: lease, watched identity,
// fresh activity.
func worktree(t testing.TB, ws *warpServer, ticket string, epoch int64, parent proc.Identity) gyrumdir.Dir {
	t.Helper()
	return worktreeIn(t, t.TempDir(), ws, ticket, epoch, parent)
}

// worktreeIn is worktree in the directory root.
func worktreeIn(t testing.TB, root string, ws *warpServer, ticket string, epoch int64, parent proc.Identity) gyrumdir.Dir {
	t.Helper()
	d, err := gyrumdir.Create(root)
	if err != nil {
		t.Fatal(err)
	}
	l := gyrumdir.Lease{Ticket: ticket, Epoch: epoch, WarpURL: ws.URL(), Agent: "A", Host: "test-host", ClaimedAt: time.Now()}
	if err := d.WriteLease(l); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePID(gyrumdir.ParentPIDFile, parent); err != nil {
		t.Fatal(err)
	}
	if err := d.TouchActivity(time.Now()); err != nil {
		t.Fatal(err)
	}
	return d
}

// agent is a real process standing in for an agent that runs commands as
// its children, as Claude Code runs a Bash call's shell and its background
// jobs: each line written to its FIFO becomes a `sh -c LINE` child.
type agent struct {
	t    *testing.T
	id   proc.Identity
	fifo string
}

func startAgent(t *testing.T) *agent {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "commands")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `while :; do if read -r line < "$1"; then sh -c "$line" & fi; done`, "agent", fifo)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children die with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return &agent{t: t, id: id, fifo: fifo}
}

// run starts line as a child of the agent, and returns once the agent
// has one more descendant: a loop started after it finds the call's
// process (the agent's shell forks it on its own time; under load a loop
// sampled before it and saw an unbacked call, failed CI).
func (a *agent) run(line string) {
	a.t.Helper()
	descendants := func() int {
		snap, err := proc.TakeSnapshot()
		if err != nil {
			a.t.Fatal(err)
		}
		return len(snap.Descendants(a.id.PID))
	}
	before := descendants()
	defer waitFor(a.t, "the agent to start "+line, func() bool { return descendants() > before })
	f, err := os.OpenFile(a.fifo, os.O_WRONLY, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		a.t.Fatal(err)
	}
}
