package heartbeat_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// warpServer is the real warp of these tests (internal/warptest).
type warpServer = warptest.Server

func newWarp(t testing.TB) *warpServer { return warptest.Start(t) }

// watched starts a real process standing in for the agent; it is killed
// and reaped at the end of the test.
func watched(t *testing.T) (*exec.Cmd, proc.Identity) {
	return warptest.StartProcess(t, "sleep", "1000")
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	warptest.WaitFor(t, what, cond)
}

// worktree prepares .gyrum/ as start-work does: lease, watched identity,
// fresh activity.
func worktree(t *testing.T, ws *warpServer, ticket string, epoch int64, parent proc.Identity) gyrumdir.Dir {
	t.Helper()
	d, err := gyrumdir.Create(t.TempDir())
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
