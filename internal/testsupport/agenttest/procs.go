package agenttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is one process of a snapshot of the process table.
type Proc struct {
	PID, PPID, PGID int
	// SID is the session id (0 where the platform's ps does not give it).
	SID int
	// Comm is the kernel's short command name.
	Comm string
	// Args is the command line (nil when unreadable, e.g. a zombie).
	Args []string
}

func (p Proc) String() string {
	return fmt.Sprintf("%7d %7d %7d %7d %-15s %s", p.PID, p.PPID, p.PGID, p.SID, p.Comm, strings.Join(p.Args, " "))
}

// Processes returns a snapshot of the process table: /proc on Linux, ps
// elsewhere.
func Processes() ([]Proc, error) {
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return procProcesses()
	}
	return psProcesses()
}

// Lookup returns process pid as Processes would list it.
func Lookup(pid int) (Proc, bool) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		procs, err := psProcesses()
		if err != nil {
			return Proc{}, false
		}
		for _, p := range procs {
			if p.PID == pid {
				return p, true
			}
		}
		return Proc{}, false
	}
	p, ok := procStat(pid)
	if ok {
		p.Args = cmdline(pid)
	}
	return p, ok
}

func cmdline(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

func procProcesses() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := procStat(pid)
		if !ok {
			continue
		}
		p.Args = cmdline(pid)
		out = append(out, p)
	}
	return out, nil
}

// procStat parses /proc/PID/stat: "pid (comm) state ppid pgrp session ...";
// comm may hold spaces and parentheses, so it is cut at the last ')'.
func procStat(pid int) (Proc, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return Proc{}, false
	}
	f := strings.Fields(string(data[closing+1:]))
	if len(f) < 4 {
		return Proc{}, false
	}
	p := Proc{PID: pid, Comm: string(data[open+1 : closing])}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGID, _ = strconv.Atoi(f[2])
	p.SID, _ = strconv.Atoi(f[3])
	return p, true
}

func psProcesses() ([]Proc, error) {
	out, err := exec.Command("ps", "-A", "-o", "pid=,ppid=,pgid=,comm=").Output()
	if err != nil {
		return nil, fmt.Errorf("ps: %w", err)
	}
	var procs []Proc
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		var p Proc
		p.PID, _ = strconv.Atoi(f[0])
		p.PPID, _ = strconv.Atoi(f[1])
		p.PGID, _ = strconv.Atoi(f[2])
		p.Comm = strings.Join(f[3:], " ")
		p.Args = []string{p.Comm}
		procs = append(procs, p)
	}
	return procs, nil
}

// Descendants returns the processes of procs below pid (children,
// grandchildren, ...), parents before their children.
func Descendants(procs []Proc, pid int) []Proc {
	kids := map[int][]Proc{}
	for _, p := range procs {
		kids[p.PPID] = append(kids[p.PPID], p)
	}
	var out []Proc
	var walk func(int)
	walk = func(parent int) {
		for _, c := range kids[parent] {
			if c.PID == parent {
				continue
			}
			out = append(out, c)
			walk(c.PID)
		}
	}
	walk(pid)
	return out
}

// Tree formats pid and its descendants as an indented table (ps style),
// for logs and findings.
func Tree(procs []Proc, pid int) string {
	kids := map[int][]Proc{}
	var root *Proc
	for i, p := range procs {
		kids[p.PPID] = append(kids[p.PPID], p)
		if p.PID == pid {
			root = &procs[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%7s %7s %7s %7s %s\n", "PID", "PPID", "PGID", "SID", "COMMAND")
	var walk func(p Proc, depth int)
	walk = func(p Proc, depth int) {
		args := strings.Join(p.Args, " ")
		if len(args) > 120 {
			args = args[:120] + "..."
		}
		fmt.Fprintf(&b, "%7d %7d %7d %7d %s%s [%s]\n", p.PID, p.PPID, p.PGID, p.SID, strings.Repeat("  ", depth), args, p.Comm)
		for _, c := range kids[p.PID] {
			if c.PID != p.PID {
				walk(c, depth+1)
			}
		}
	}
	if root != nil {
		walk(*root, 0)
	}
	return b.String()
}

// Tagged returns the pids of processes whose environment holds kv
// ("NAME=value"). It works where /proc/PID/environ exists (Linux) and
// returns nothing elsewhere.
func Tagged(kv string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(kv)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(data, []byte{0}) {
			if bytes.Equal(v, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
