package proc

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// startSleep starts a real process that waits to be killed.
func startSleep(t *testing.T) (*exec.Cmd, Identity) {
	t.Helper()
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	id, err := Lookup(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return c, id
}

// TestWatchSeesExit: a watched process killed with SIGKILL is gone as soon
// as it exits, a zombie not yet reaped included (as Identity.Alive says),
// and stays gone; on Linux through a pidfd, not /proc.
func TestWatchSeesExit(t *testing.T) {
	c, id := startSleep(t)
	w := NewWatch(id)
	defer w.Close()
	if runtime.GOOS == "linux" && w.fd < 0 {
		t.Fatal("no pidfd on Linux: the watch would read /proc every time")
	}
	for range 3 {
		if !w.Alive() {
			t.Fatal("a running process is reported gone")
		}
	}
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("a killed process is still reported alive")
		}
		time.Sleep(time.Millisecond)
	}
	if id.Alive() {
		t.Fatal("Identity.Alive disagrees: the process is gone")
	}
	_ = c.Wait()
	if w.Alive() {
		t.Fatal("a gone process came back")
	}
	if w.fd >= 0 {
		t.Fatal("the pidfd of a gone process is still held")
	}
}

// TestWatchRefusesAnotherProcess: an identity whose pid now belongs to a
// process with another start time (a recycled pid) is gone from the start,
// though the pid runs — the pidfd opened for it is checked and dropped.
func TestWatchRefusesAnotherProcess(t *testing.T) {
	_, id := startSleep(t)
	other := Identity{PID: id.PID, StartTime: id.StartTime + 1}
	w := NewWatch(other)
	if w.Alive() || w.fd >= 0 {
		t.Fatalf("a recycled pid is watched as alive (fd %d)", w.fd)
	}
	for _, bad := range []Identity{{}, {PID: -1, StartTime: 1}} {
		if NewWatch(bad).Alive() {
			t.Errorf("identity %v is alive", bad)
		}
	}
}

// TestWatchWithoutPidfd: after Close (or where there is no pidfd) the
// watch asks /proc and still tells a running process from a killed one.
func TestWatchWithoutPidfd(t *testing.T) {
	c, id := startSleep(t)
	w := NewWatch(id)
	w.Close()
	if !w.Alive() {
		t.Fatal("a running process is reported gone without a pidfd")
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	if w.Alive() {
		t.Fatal("a killed process is reported alive without a pidfd")
	}
}

// Exited fires when the process exits (a zombie not yet reaped included),
// not before; a watch of a process already gone fires at once; Close stops
// the wait without firing.
func TestWatchExited(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no exit notification here")
	}
	c, id := startSleep(t)
	w := NewWatch(id)
	defer w.Close()
	ch := w.Exited()
	if ch == nil {
		t.Fatal("Exited gave no channel: the loop would learn of the exit only at its next tick")
	}
	if w.Exited() != ch {
		t.Error("Exited gave another channel on the second call")
	}
	select {
	case <-ch:
		t.Fatal("fired while the process runs")
	default:
	}
	if !w.Alive() {
		t.Fatal("a running process is reported gone")
	}
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit notification 30 s after SIGKILL")
	}
	if w.Alive() {
		t.Error("notified of the exit, but Alive says it runs")
	}

	gone := NewWatch(Identity{PID: c.Process.Pid, StartTime: id.StartTime + 1})
	select {
	case <-gone.Exited():
	default:
		t.Error("a watch of a process already gone: Exited did not fire at once")
	}

	_, id2 := startSleep(t)
	w2 := NewWatch(id2)
	ch2 := w2.Exited()
	w2.Close()
	select {
	case <-ch2:
		t.Error("Close fired Exited")
	case <-time.After(50 * time.Millisecond):
	}
}
