package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuTime returns the user+system CPU time of pid from /proc/PID/stat
// (fields 14, 15), plus its waited-for children's (16, 17) when children.
func cpuTime(pid int, children bool) (time.Duration, error) {
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
func rssKiB(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: /proc/%d/status VmRSS %q: %w", pid, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("bench: /proc/%d/status has no VmRSS", pid)
}
