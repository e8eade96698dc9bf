package bench

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuTime returns the CPU time of pid: without children, the sum over
// its threads of /proc/PID/task/TID/schedstat (nanoseconds on a CPU), so
// a few ticks of a millisecond are measured exactly; with children (the
// bash loop, whose curls exit each tick), /proc/PID/stat user+system
// (fields 14, 15) plus its waited-for children's (16, 17), in clock ticks
// of 10 ms.
func cpuTime(pid int, children bool) (time.Duration, error) {
	if !children {
		if d, err := schedTime(pid); err == nil {
			return d, nil
		}
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	// The command name (field 2) may hold spaces: fields count from the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3
	if len(f) < 15 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var sum int64
	last := 13 // fields 14, 15 → f[11], f[12]
	if children {
		last = 15
	}
	for _, s := range f[11:last] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
		}
		sum += v
	}
	return time.Duration(sum) * time.Second / clockTicks, nil
}

// rssKiB returns VmRSS of pid from /proc/PID/status.
func rssKiB(pid int) (int64, error) { return statusKiB(pid, "VmRSS") }

// anonKiB returns RssAnon of pid: the resident memory that is the
// process's own (VmRSS less the pages of files it maps, its binary among
// them, which every process of that binary shares).
func anonKiB(pid int) (int64, error) { return statusKiB(pid, "RssAnon") }

// statusKiB returns field (a kB figure) of /proc/PID/status.
func statusKiB(pid int, field string) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: /proc/%d/status %s %q: %w", pid, field, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("bench: /proc/%d/status has no %s", pid, field)
}

// schedTime sums the first field of /proc/PID/task/*/schedstat.
func schedTime(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	var sum int64
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0, fmt.Errorf("bench: schedstat of %d/%s: %q", pid, t.Name(), data)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: schedstat of %d/%s: %w", pid, t.Name(), err)
		}
		sum += v
	}
	return time.Duration(sum), nil
}

// commandCPU sums the CPU time of every process named comm (its
// /proc/PID/comm): the schedstat of each thread, so the sum is in
// nanoseconds. A process that exits between two calls takes its time with
// it; one that starts brings all of its own.
func commandCPU(comm string) (time.Duration, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	var sum time.Duration
	found := false
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		name, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(name)) != comm {
			continue // not it, or gone
		}
		if t, err := schedTime(pid); err == nil {
			sum += t
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("bench: no process named %q is readable in /proc", comm)
	}
	return sum, nil
}

// dynamicallyLinked reports whether pid's executable asks for a dynamic
// loader (an ELF PT_INTERP): a Go binary built with cgo available, which
// maps ld.so and libc beside its own pages.
func dynamicallyLinked(pid int) bool {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
