package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stat reads /proc/PID/stat. The comm field may hold spaces and
// parentheses, so the fixed fields are parsed after the last ')'.
// ErrNoProcess when the pid does not exist; zombies are returned with
// Zombie set.
func Stat(pid int) (Info, error) {
	if pid <= 0 {
		return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	data, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
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
	data, err := readFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
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

// clockTick is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// TakeSnapshot reads /proc/PID/stat of every process, and /proc/uptime to
// place start times on the wall clock. Processes that vanish while it
// reads are left out; zombies too.
func TakeSnapshot() (Snapshot, error) {
	now := time.Now()
	up, err := readFile("/proc/uptime")
	if err != nil {
		return Snapshot{}, fmt.Errorf("read /proc/uptime: %w", err)
	}
	f := bytes.Fields(up)
	if len(f) == 0 {
		return Snapshot{}, fmt.Errorf("/proc/uptime: %q", up)
	}
	uptime, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return Snapshot{}, fmt.Errorf("/proc/uptime: %w", err)
	}
	boot := now.Add(-time.Duration(uptime * float64(time.Second)))
	d, err := os.Open("/proc")
	if err != nil {
		return Snapshot{}, fmt.Errorf("list /proc: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return Snapshot{}, fmt.Errorf("list /proc: %w", err)
	}
	s := Snapshot{At: now, CPUKnown: true, Procs: make([]Sample, 0, len(names))}
	buf := make([]byte, 1024)
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		data, ok := readInto(buf, "/proc/"+name+"/stat")
		if !ok {
			continue
		}
		if p, ok := parseSample(pid, data, boot); ok {
			s.Procs = append(s.Procs, p)
		}
	}
	return s, nil
}

// parseSample reads what a Sample needs from /proc/PID/stat in one pass
// without allocating but for the name: state (3), ppid (4), utime, stime,
// cutime, cstime (14-17) and starttime (22). Zombies and lines it cannot
// read are skipped (ok false).
func parseSample(pid int, data []byte, boot time.Time) (Sample, bool) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return Sample{}, false
	}
	var v [23]uint64 // v[N] is field N; field 3 (state) is kept apart
	state := byte(0)
	field, i := 2, closing+1
	for field < 22 && i < len(data) {
		for i < len(data) && data[i] == ' ' {
			i++
		}
		field++
		start := i
		for i < len(data) && data[i] != ' ' && data[i] != '\n' {
			i++
		}
		tok := data[start:i]
		if field == 3 {
			if len(tok) == 1 {
				state = tok[0]
			}
			continue
		}
		var n uint64
		for _, c := range tok {
			if c < '0' || c > '9' {
				n = 0 // negative (a kernel thread's field) or garbage: unused
				break
			}
			n = n*10 + uint64(c-'0')
		}
		v[field] = n
	}
	if field < 22 || state == 'Z' || state == 'X' || state == 'x' {
		return Sample{}, false
	}
	return Sample{
		Identity: Identity{PID: pid, StartTime: v[22]},
		PPID:     int(v[4]),
		Name:     string(data[open+1 : closing]),
		Started:  boot.Add(time.Duration(v[22]) * clockTick),
		CPU:      time.Duration(v[14]+v[15]+v[16]+v[17]) * clockTick,
	}, true
}

// readInto reads a small /proc file into buf without allocating a new
// buffer per file.
func readInto(buf []byte, path string) ([]byte, bool) {
	fd, err := open(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, false
	}
	n, err := read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	return buf[:n], true
}

// readFile reads a small /proc file with plain system calls: os.Open
// tries, and fails, to register each descriptor with the runtime's poller
// (five more calls per read), and the heartbeat loop reads its agent's
// stat every tick.
func readFile(path string) ([]byte, error) {
	fd, err := open(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return ReadFD(fd, path, -1)
}

// open is unix.Open again after EINTR.
func open(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
