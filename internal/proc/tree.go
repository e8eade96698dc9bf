package proc

import (
	"strings"
	"time"
)

// Sample is one process of a Snapshot: its identity, parent, name, when it
// started on the wall clock and how much CPU it has used.
type Sample struct {
	Identity
	PPID int
	Name string
	// Started is the process's start on the wall clock, as precise as the
	// kernel allows (Linux: one clock tick, 10 ms).
	Started time.Time
	// CPU is the process's own user + system time, plus that of its
	// children it has waited for (Linux utime+stime+cutime+cstime), so the
	// work of a short-lived grandchild stays counted once it is reaped.
	// Zero when the platform does not say (CPUKnown false).
	CPU time.Duration
}

// Snapshot is every process of the host at one instant.
type Snapshot struct {
	At    time.Time
	Procs []Sample
	// CPUKnown reports that Sample.CPU is measured (Linux). macOS without
	// cgo gives identities, parents and start times but no CPU times.
	CPUKnown bool
}

// Descendants returns the processes below root (not root itself), walking
// parent links: children, their children, and so on. Processes named with
// one of skip's prefixes are left out together with everything below them.
func (s Snapshot) Descendants(root int, skip ...string) []Sample {
	kids := make(map[int][]int, len(s.Procs))
	byPID := make(map[int]int, len(s.Procs))
	for i, p := range s.Procs {
		kids[p.PPID] = append(kids[p.PPID], p.PID)
		byPID[p.PID] = i
	}
	var out []Sample
	stack := append([]int(nil), kids[root]...)
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p := s.Procs[byPID[pid]]
		if hasPrefix(p.Name, skip) {
			continue
		}
		out = append(out, p)
		stack = append(stack, kids[pid]...)
	}
	return out
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
