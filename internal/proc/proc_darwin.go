package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// sZomb is SZOMB of <sys/proc.h>: exited, not yet reaped.
const sZomb = 5

// Stat asks the kernel (sysctl kern.proc.pid) about pid. The start time is
// p_starttime in microseconds since the epoch. ErrNoProcess when the pid
// does not exist; zombies are returned with Zombie set.
func Stat(pid int) (Info, error) {
	if pid <= 0 {
		return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pid", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
		}
		return Info{}, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if len(kps) == 0 || int(kps[0].Proc.P_pid) != pid {
		return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	kp := kps[0]
	tv := kp.Proc.P_starttime
	st := uint64(tv.Sec)*1_000_000 + uint64(tv.Usec)
	name := kp.Proc.P_comm[:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return Info{
		Identity: Identity{PID: pid, StartTime: st},
		PPID:     int(kp.Eproc.Ppid),
		Name:     string(name),
		Zombie:   kp.Proc.P_stat == sZomb,
	}, nil
}

// Cmdline returns the argument vector of process pid from sysctl
// kern.procargs2: argc, the executable path, padding, then argv.
func Cmdline(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	buf, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) {
			if _, serr := Lookup(pid); serr != nil {
				return nil, serr
			}
		}
		return nil, fmt.Errorf("sysctl kern.procargs2.%d: %w", pid, err)
	}
	if len(buf) < 4 {
		return []string{}, nil
	}
	argc := int(binary.LittleEndian.Uint32(buf[:4]))
	rest := buf[4:]
	// Skip the executable path and the NUL padding after it.
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return []string{}, nil
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	out := make([]string, 0, argc)
	for len(out) < argc && len(rest) > 0 {
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			out = append(out, string(rest))
			break
		}
		out = append(out, string(rest[:j]))
		rest = rest[j+1:]
	}
	return out, nil
}

// List returns the pid of every process on the host (sysctl kern.proc.all).
func List() ([]int, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	pids := make([]int, 0, len(kps))
	for _, kp := range kps {
		if kp.Proc.P_pid > 0 {
			pids = append(pids, int(kp.Proc.P_pid))
		}
	}
	return pids, nil
}

// TakeSnapshot lists every process with sysctl kern.proc.all. macOS gives
// no CPU times without cgo (proc_pid_rusage is in libproc), so CPUKnown is
// false: callers fall back to what identities and start times tell.
func TakeSnapshot() (Snapshot, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return Snapshot{}, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	s := Snapshot{At: time.Now(), Procs: make([]Sample, 0, len(kps))}
	for _, kp := range kps {
		if kp.Proc.P_pid <= 0 || kp.Proc.P_stat == sZomb {
			continue
		}
		tv := kp.Proc.P_starttime
		name := kp.Proc.P_comm[:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		s.Procs = append(s.Procs, Sample{
			Identity: Identity{PID: int(kp.Proc.P_pid), StartTime: uint64(tv.Sec)*1_000_000 + uint64(tv.Usec)},
			PPID:     int(kp.Eproc.Ppid), Name: string(name),
			Started: time.Unix(int64(tv.Sec), int64(tv.Usec)*1000),
		})
	}
	return s, nil
}
