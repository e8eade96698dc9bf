package gyrumdir

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/proc"
)

// AgentIndex maps an agent process to the worktrees whose leases it holds,
// so the hook credits the lease of *its* agent wherever the agent's shell
// happens to be: Claude Code resets the Bash cwd to the project after every
// call, so a worktree made by `start-work --worktree` from inside a session
// is never the hook payload's cwd.
//
// Layout: $GYRUM_HOME/agents/<pid>/<hash of the worktree>, one file per
// lease holding "STARTTIME WORKTREE". The hook's lookup is one directory
// read that fails fast (ENOENT) for an agent without a lease; start-work
// adds an entry; release and complete-pr remove it, so does the loop after
// an exit report and the hook once it has shown a lease-ended notice;
// entries of dead agents (pid gone or recycled) are ignored and pruned by
// the watchdog.
type AgentIndex struct {
	dir string
}

// AgentLink is one entry of the index: agent Agent holds the lease of the
// .gyrum/ in Worktree.
type AgentLink struct {
	Agent    proc.Identity
	Worktree string
	path     string
}

// NewAgentIndex returns the index under home ($GYRUM_HOME): home/agents.
func NewAgentIndex(home string) AgentIndex { return AgentIndex{dir: filepath.Join(home, "agents")} }

// Dir returns the index directory.
func (x AgentIndex) Dir() string { return x.dir }

func (x AgentIndex) agentDir(pid int) string { return filepath.Join(x.dir, strconv.Itoa(pid)) }

func linkName(worktree string) string {
	h := fnv.New64a()
	h.Write([]byte(worktree))
	return strconv.FormatUint(h.Sum64(), 16)
}

// Add records that agent holds the lease of worktree (an absolute path).
func (x AgentIndex) Add(agent proc.Identity, worktree string) error {
	if agent.PID <= 0 || !filepath.IsAbs(worktree) {
		return fmt.Errorf("agent index add: want a pid and an absolute worktree, got %d %q", agent.PID, worktree)
	}
	dir := x.agentDir(agent.PID)
	data := []byte(strconv.FormatUint(agent.StartTime, 10) + " " + worktree + "\n")
	var err error
	// A concurrent Remove may delete the empty agent directory between
	// the MkdirAll and the write: one retry covers it.
	for range 2 {
		if err = os.MkdirAll(dir, DirPerm); err != nil {
			return fmt.Errorf("agent index add: %w", err)
		}
		if err = writeFile(filepath.Join(dir, linkName(worktree)), data, true); err == nil {
			return nil
		}
	}
	return fmt.Errorf("agent index add: %w", err)
}

// Remove forgets that agent holds the lease of worktree; a missing entry
// is not an error. The agent's directory goes when it is empty.
func (x AgentIndex) Remove(agent proc.Identity, worktree string) error {
	dir := x.agentDir(agent.PID)
	p := filepath.Join(dir, linkName(worktree))
	if l, err := readLink(p); err == nil && l.Agent.StartTime != agent.StartTime {
		return nil // another process with the same pid: not ours to remove
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("agent index remove: %w", err)
	}
	_ = os.Remove(dir) // fails while other entries remain
	return nil
}

// RemoveWorktree removes every entry naming worktree, whichever agent's:
// used when the lease of worktree ends.
func (x AgentIndex) RemoveWorktree(worktree string) error {
	links, err := x.List()
	var errs []error
	for _, l := range links {
		if SamePath(l.Worktree, worktree) {
			errs = append(errs, x.remove(l))
		}
	}
	return errors.Join(append(errs, err)...)
}

func (x AgentIndex) remove(l AgentLink) error {
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("agent index remove: %w", err)
	}
	_ = os.Remove(filepath.Dir(l.path))
	return nil
}

// Lookup returns the worktrees recorded for the process with pid, whatever
// start time they were recorded with: the caller compares it with the
// process's own (the hook does so only when there is an entry, so an agent
// without a lease pays one failed open).
func (x AgentIndex) Lookup(pid int) ([]AgentLink, error) {
	dir := x.agentDir(pid)
	names, err := readDirNames(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("agent index: %w", err)
	}
	out := make([]AgentLink, 0, len(names))
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue // a temp file of a concurrent Add
		}
		if l, err := readLink(filepath.Join(dir, n)); err == nil {
			l.Agent.PID = pid
			out = append(out, l)
		}
	}
	return out, nil
}

// Worktrees returns the worktrees agent holds leases in: the entries of
// its pid recorded with its start time.
func (x AgentIndex) Worktrees(agent proc.Identity) ([]string, error) {
	links, err := x.Lookup(agent.PID)
	var out []string
	for _, l := range links {
		if l.Agent.StartTime == agent.StartTime {
			out = append(out, l.Worktree)
		}
	}
	return out, err
}

// List returns every entry of the index.
func (x AgentIndex) List() ([]AgentLink, error) {
	pids, err := readDirNames(x.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("agent index: %w", err)
	}
	var out []AgentLink
	var errs []error
	for _, s := range pids {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			continue
		}
		links, err := x.Lookup(pid)
		errs = append(errs, err)
		out = append(out, links...)
	}
	return out, errors.Join(errs...)
}

// Prune removes the entries whose agent is no longer alive (dead, or its
// pid recycled) and returns how many it removed.
func (x AgentIndex) Prune() (int, error) {
	links, err := x.List()
	n := 0
	errs := []error{err}
	for _, l := range links {
		if l.Agent.Alive() {
			continue
		}
		if rerr := x.remove(l); rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func readLink(p string) (AgentLink, error) {
	data, err := readSmall(p, 4096+32)
	if err != nil {
		return AgentLink{}, err
	}
	st, wt, ok := strings.Cut(strings.TrimRight(string(data), "\n"), " ")
	start, perr := strconv.ParseUint(st, 10, 64)
	if !ok || perr != nil || !filepath.IsAbs(wt) {
		return AgentLink{}, fmt.Errorf("%w: %s: want \"STARTTIME WORKTREE\"", ErrCorrupt, p)
	}
	return AgentLink{Agent: proc.Identity{StartTime: start}, Worktree: wt, path: p}, nil
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
