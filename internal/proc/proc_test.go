package proc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/proc"
)

// startProcess starts a real process and makes sure it is killed and
// reaped when the test ends.
func startProcess(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Start returns once the kernel has passed execve's point of no return,
	// which is before it lays out the new argument pages: for a moment the
	// child has its new name but an empty /proc/PID/cmdline (seen in CI).
	waitFor(t, name+" to finish exec", func() bool {
		args, err := proc.Cmdline(cmd.Process.Pid)
		return err == nil && len(args) > 0
	})
	return cmd
}

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSelf(t *testing.T) {
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != os.Getpid() {
		t.Fatalf("got pid %d, want %d", self.PID, os.Getpid())
	}
	if self.StartTime == 0 {
		t.Fatal("got start time 0")
	}
	if !self.Alive() {
		t.Fatal("self is not alive")
	}
	again, err := proc.Lookup(os.Getpid())
	if err != nil || again != self {
		t.Fatalf("got %v, %v, want %v", again, err, self)
	}
	parent, err := proc.Parent(os.Getpid())
	if err != nil || parent != os.Getppid() {
		t.Fatalf("got parent %d, %v, want %d", parent, err, os.Getppid())
	}
}

func TestLiveChild(t *testing.T) {
	cmd := startProcess(t, "sleep", "1000")
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !id.Alive() {
		t.Fatal("live sleep is not alive")
	}
	if p, err := proc.Parent(id.PID); err != nil || p != os.Getpid() {
		t.Fatalf("got parent %d, %v, want %d", p, err, os.Getpid())
	}
	if name, err := proc.Executable(id.PID); err != nil || name != "sleep" {
		t.Fatalf("got name %q, %v, want sleep", name, err)
	}
	args, err := proc.Cmdline(id.PID)
	if err != nil || !slices.Equal(args, []string{"sleep", "1000"}) {
		t.Fatalf("got cmdline %q, %v, want [sleep 1000]", args, err)
	}
	pids, err := proc.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, id.PID) || !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("List misses %d or %d", id.PID, os.Getpid())
	}
}

func TestKilledAndReapedIsDead(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if id.Alive() {
		t.Fatal("killed and reaped process is alive")
	}
	if _, err := proc.Lookup(id.PID); !errors.Is(err, proc.ErrNoProcess) {
		t.Fatalf("got %v, want ErrNoProcess", err)
	}
	if _, err := proc.Cmdline(id.PID); !errors.Is(err, proc.ErrNoProcess) {
		t.Fatalf("Cmdline: got %v, want ErrNoProcess", err)
	}
}

func TestZombieIsDead(t *testing.T) {
	cmd := startProcess(t, "sleep", "1000")
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// Kill without reaping: the pid stays in the table as a zombie.
	if err := syscall.Kill(id.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the zombie", func() bool {
		in, err := proc.Stat(id.PID)
		return err == nil && in.Zombie
	})
	if id.Alive() {
		t.Fatal("zombie counts as alive")
	}
	if _, err := proc.Lookup(id.PID); !errors.Is(err, proc.ErrNoProcess) {
		t.Fatalf("got %v, want ErrNoProcess", err)
	}
}

func TestRecycledPIDIsDead(t *testing.T) {
	cmd := startProcess(t, "sleep", "1000")
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// The same pid with another start time is what a recycled pid looks like.
	for _, st := range []uint64{id.StartTime - 1, id.StartTime + 1, 0} {
		other := proc.Identity{PID: id.PID, StartTime: st}
		if other.Alive() {
			t.Fatalf("pid %d with start time %d (real %d) counts as alive", id.PID, st, id.StartTime)
		}
		if err := proc.Signal(other, syscall.SIGTERM); !errors.Is(err, proc.ErrNoProcess) {
			t.Fatalf("Signal to a recycled identity: got %v, want ErrNoProcess", err)
		}
	}
	if !id.Alive() {
		t.Fatal("the process itself was signalled")
	}
}

func TestCommWithSpacesAndParens(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "a) b (c")
	if err := os.WriteFile(odd, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := startProcess(t, odd, "1000")
	in, err := proc.Stat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "a) b (c" {
		t.Fatalf("got name %q, want %q", in.Name, "a) b (c")
	}
	if in.PPID != os.Getpid() || in.StartTime == 0 || in.Zombie {
		t.Fatalf("got %+v, want ppid %d, a start time, not a zombie", in, os.Getpid())
	}
}

func TestParseIdentity(t *testing.T) {
	good := []struct {
		in   string
		want proc.Identity
	}{
		{"123 456", proc.Identity{PID: 123, StartTime: 456}},
		{"123 456\n", proc.Identity{PID: 123, StartTime: 456}},
		{"  7\t0 ", proc.Identity{PID: 7, StartTime: 0}},
		{"1 18446744073709551615", proc.Identity{PID: 1, StartTime: 18446744073709551615}},
	}
	for _, c := range good {
		got, err := proc.ParseIdentity(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseIdentity(%q): got %v, %v, want %v", c.in, got, err, c.want)
		}
		if back, err := proc.ParseIdentity(got.String()); err != nil || back != got {
			t.Errorf("round trip of %v: got %v, %v", got, back, err)
		}
	}
	bad := []string{"", "\n", "123", "123 456 789", "abc 456", "123 abc", "-1 5", "0 5", "123 -5",
		"123 18446744073709551616", "\x00\x01", strings.Repeat("9", 200)}
	for _, in := range bad {
		_, err := proc.ParseIdentity(in)
		if !errors.Is(err, proc.ErrCorruptIdentity) {
			t.Errorf("ParseIdentity(%q): got %v, want ErrCorruptIdentity", in, err)
		}
	}
}

func TestLookupInvalidPID(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := proc.Lookup(pid); !errors.Is(err, proc.ErrNoProcess) {
			t.Errorf("Lookup(%d): got %v, want ErrNoProcess", pid, err)
		}
	}
	if (proc.Identity{}).Alive() {
		t.Error("zero identity is alive")
	}
}

func TestStopTerminates(t *testing.T) {
	cmd := startProcess(t, "sleep", "1000")
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	res, err := proc.Stop(context.Background(), id, 5*time.Second)
	if err != nil || res != proc.StopTerminated {
		t.Fatalf("got %v, %v, want terminated", res, err)
	}
	_ = cmd.Wait()
	if st := cmd.ProcessState.Sys().(syscall.WaitStatus); !st.Signaled() || st.Signal() != syscall.SIGTERM {
		t.Fatalf("got wait status %v, want killed by SIGTERM", st)
	}
	res, err = proc.Stop(context.Background(), id, time.Second)
	if err != nil || res != proc.StopNotRunning {
		t.Fatalf("second Stop: got %v, %v, want not running", res, err)
	}
}

func TestStopKillsWhatIgnoresTERM(t *testing.T) {
	cmd := startProcess(t, "sh", "-c", `trap "" TERM; exec sleep 1000`)
	waitFor(t, "sh to exec sleep", func() bool {
		n, err := proc.Executable(cmd.Process.Pid)
		return err == nil && n == "sleep"
	})
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	res, err := proc.Stop(context.Background(), id, 200*time.Millisecond)
	if err != nil || res != proc.StopKilled {
		t.Fatalf("got %v, %v, want killed", res, err)
	}
	_ = cmd.Wait()
	if st := cmd.ProcessState.Sys().(syscall.WaitStatus); !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Fatalf("got wait status %v, want killed by SIGKILL", st)
	}
}

func TestStopLeavesRecycledPIDAlone(t *testing.T) {
	cmd := startProcess(t, "sleep", "1000")
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale := proc.Identity{PID: id.PID, StartTime: id.StartTime + 1}
	res, err := proc.Stop(context.Background(), stale, time.Second)
	if err != nil || res != proc.StopNotRunning {
		t.Fatalf("got %v, %v, want not running", res, err)
	}
	if !id.Alive() {
		t.Fatal("Stop signalled the process that now owns the pid")
	}
}
