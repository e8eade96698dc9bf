package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// Stat reads /proc/PID/stat. The comm field may hold spaces and
// parentheses, so the fixed fields are parsed after the last ')'.
// ErrNoProcess when the pid does not exist; zombies are returned with
// Zombie set.
func Stat(pid int) (Info, error) {
	if pid <= 0 {
		return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
		}
		return Info{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return parseStat(pid, data)
}

func parseStat(pid int, data []byte) (Info, error) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return Info{}, fmt.Errorf("/proc/%d/stat: no (comm) field in %q", pid, clip(string(data)))
	}
	fields := bytes.Fields(data[closing+1:])
	// fields[0] is field 3 (state); field N is fields[N-3].
	if len(fields) < 20 {
		return Info{}, fmt.Errorf("/proc/%d/stat: %d fields after comm, want at least 20", pid, len(fields))
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: ppid %q: %w", pid, fields[1], err)
	}
	st, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: starttime %q: %w", pid, fields[19], err)
	}
	state := fields[0]
	return Info{
		Identity: Identity{PID: pid, StartTime: st},
		PPID:     ppid,
		Name:     string(data[open+1 : closing]),
		Zombie:   len(state) == 1 && (state[0] == 'Z' || state[0] == 'X' || state[0] == 'x'),
	}, nil
}

// Cmdline returns the argument vector of process pid, empty for kernel
// threads and zombies.
func Cmdline(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
		}
		return nil, fmt.Errorf("read /proc/%d/cmdline: %w", pid, err)
	}
	data = bytes.TrimRight(data, "\x00")
	if len(data) == 0 {
		return []string{}, nil
	}
	parts := bytes.Split(data, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out, nil
}

// List returns the pid of every process on the host (those /proc shows).
func List() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
