// Package proc identifies processes by pid and kernel start time, so that a
// recycled pid is never mistaken for the process it replaced. It also reads a
// process's parent, name and command line, lists every pid, and stops a
// process only after checking that it is still the one that was meant.
//
// Linux reads /proc (proc_linux.go); macOS asks the kernel with sysctl
// kern.proc.pid and kern.procargs2 (proc_darwin.go). No cgo.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoProcess reports a process that does not exist, is a zombie, or whose
// pid now belongs to another process (different start time).
var ErrNoProcess = errors.New("no such process")

// ErrCorruptIdentity reports text that is not "PID STARTTIME".
var ErrCorruptIdentity = errors.New("corrupt process identity")

// Identity names one process for its whole life: its pid and the kernel's
// start time of that pid (Linux: /proc/PID/stat field 22, clock ticks since
// boot; macOS: p_starttime in microseconds since the epoch). Two processes
// never share both.
type Identity struct {
	PID       int
	StartTime uint64
}

// String returns "PID STARTTIME", the content of the .gyrum/*.pid files.
func (id Identity) String() string {
	return strconv.Itoa(id.PID) + " " + strconv.FormatUint(id.StartTime, 10)
}

// IsZero reports whether id names no process.
func (id Identity) IsZero() bool { return id.PID == 0 && id.StartTime == 0 }

// Alive reports whether the process id names is running: it exists, is not
// a zombie, and its pid still has the same start time. A pid recycled by
// another process is dead.
func (id Identity) Alive() bool {
	if id.PID <= 0 {
		return false
	}
	cur, err := Lookup(id.PID)
	return err == nil && cur.StartTime == id.StartTime
}

// ParseIdentity parses "PID STARTTIME" (surrounding white space allowed, as
// written by Identity.String plus a newline). Anything else is an
// ErrCorruptIdentity error that quotes the text.
func ParseIdentity(s string) (Identity, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return Identity{}, fmt.Errorf("%w: %q: want \"PID STARTTIME\"", ErrCorruptIdentity, clip(s))
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return Identity{}, fmt.Errorf("%w: %q: pid %q is not a positive integer", ErrCorruptIdentity, clip(s), fields[0])
	}
	st, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %q: start time %q is not an unsigned integer", ErrCorruptIdentity, clip(s), fields[1])
	}
	return Identity{PID: pid, StartTime: st}, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Self returns the identity of the calling process.
func Self() (Identity, error) { return Lookup(os.Getpid()) }

// Signal sends sig to the process id names, after checking that it is still
// that process. ErrNoProcess when it is not (dead, zombie or recycled): a
// pid that now belongs to someone else is never signalled. On Linux the
// signal goes through a pidfd opened before the check, so the pid cannot
// change hands between the check and the signal either.
func Signal(id Identity, sig syscall.Signal) error {
	fd := openPidfd(id.PID)
	if fd >= 0 {
		defer closeFD(fd)
	}
	if !id.Alive() {
		return fmt.Errorf("signal %s: %w", id, ErrNoProcess)
	}
	err := error(syscall.ENOSYS)
	if fd >= 0 {
		err = pidfdSignal(fd, sig)
	}
	if errors.Is(err, syscall.ENOSYS) {
		// No pidfd here, or no pidfd_send_signal (a seccomp filter).
		err = syscall.Kill(id.PID, sig)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("signal %s: %w", id, ErrNoProcess)
	}
	return fmt.Errorf("signal %s: %w", id, err)
}

// StopResult says how Stop ended a process.
type StopResult int

// Outcomes of Stop.
const (
	// StopNotRunning: the process was already gone (or its pid recycled);
	// nothing was signalled.
	StopNotRunning StopResult = iota
	// StopTerminated: the process exited after SIGTERM.
	StopTerminated
	// StopKilled: the process ignored SIGTERM for the grace period and got SIGKILL.
	StopKilled
)

func (r StopResult) String() string {
	switch r {
	case StopTerminated:
		return "terminated"
	case StopKilled:
		return "killed"
	}
	return "not running"
}

// PollInterval is how often Stop checks whether a signalled process is gone.
const PollInterval = 20 * time.Millisecond

// Stop ends the process id names: identity check, SIGTERM, wait up to grace,
// then SIGKILL and wait (up to grace again) for it to disappear. A zombie
// counts as gone, so Stop also works on an unreaped child. It returns an
// error only when the process could not be signalled or survived SIGKILL.
func Stop(ctx context.Context, id Identity, grace time.Duration) (StopResult, error) {
	if err := Signal(id, syscall.SIGTERM); err != nil {
		if errors.Is(err, ErrNoProcess) {
			return StopNotRunning, nil
		}
		return StopNotRunning, err
	}
	if waitGone(ctx, id, grace) {
		return StopTerminated, nil
	}
	if err := Signal(id, syscall.SIGKILL); err != nil {
		if errors.Is(err, ErrNoProcess) {
			return StopTerminated, nil
		}
		return StopTerminated, err
	}
	if waitGone(ctx, id, grace) {
		return StopKilled, nil
	}
	if err := ctx.Err(); err != nil {
		return StopKilled, fmt.Errorf("stop %s: %w", id, err)
	}
	return StopKilled, fmt.Errorf("stop %s: still running %s after SIGKILL", id, grace)
}

// waitGone polls until id is dead, grace passed or ctx ended.
func waitGone(ctx context.Context, id Identity, grace time.Duration) bool {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		if !id.Alive() {
			return true
		}
		select {
		case <-ctx.Done():
			return !id.Alive()
		case <-deadline.C:
			return !id.Alive()
		case <-tick.C:
		}
	}
}

// Info is what the kernel says about one process.
type Info struct {
	Identity
	PPID int
	// Name is the kernel's short name of the process (Linux comm, at most 15
	// bytes; macOS p_comm, at most 16).
	Name string
	// Zombie reports a process that exited and was not reaped yet.
	Zombie bool
}

// Lookup returns the identity of the running process pid. ErrNoProcess when
// there is none or it is a zombie.
func Lookup(pid int) (Identity, error) {
	in, err := Stat(pid)
	if err != nil {
		return Identity{}, err
	}
	if in.Zombie {
		return Identity{}, fmt.Errorf("process %d is a zombie: %w", pid, ErrNoProcess)
	}
	return in.Identity, nil
}

// Parent returns the parent pid of the running process pid.
func Parent(pid int) (int, error) {
	in, err := Stat(pid)
	if err != nil {
		return 0, err
	}
	return in.PPID, nil
}

// Executable returns the kernel's short name of process pid (see Info.Name).
// Interpreted programs show the interpreter's name unless they rename
// themselves: look at Cmdline too.
func Executable(pid int) (string, error) {
	in, err := Stat(pid)
	if err != nil {
		return "", err
	}
	return in.Name, nil
}
