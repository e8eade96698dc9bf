package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// liveLoops returns the heartbeat loops of this run that are running, by
// agent name ("" for one that cannot be attributed). It looks in three
// places so that no loop escapes the count: the identity read from the
// agent's heartbeat.pid after start-work, the run's registry
// ($GYRUM_HOME/run), and the process table (a gyrum process whose command
// line names a directory of this run). Every identity is checked alive
// (pid and start time), so a recycled pid is never counted or signalled.
func (r *run) liveLoops() map[string][]proc.Identity {
	out := map[string][]proc.Identity{}
	add := func(name string, id proc.Identity) {
		if id.IsZero() || !id.Alive() {
			return
		}
		for _, ids := range out {
			if slices.Contains(ids, id) {
				return
			}
		}
		out[name] = append(out[name], id)
	}
	for _, a := range r.agents {
		a.mu.Lock()
		id := a.loopID
		a.mu.Unlock()
		add(a.plan.Name, id)
	}
	if entries, _, err := gyrumdir.NewRegistry(r.home).List(); err == nil {
		for _, e := range entries {
			add(r.agentOf(e.Ticket, e.Dir), e.Identity())
		}
	}
	if pids, err := proc.List(); err == nil {
		for _, pid := range pids {
			args, err := proc.Cmdline(pid)
			if err != nil || !r.isLoop(args) {
				continue
			}
			id, err := proc.Lookup(pid)
			if err != nil {
				continue
			}
			name := ""
			for _, arg := range args {
				if n := r.agentOf("", strings.TrimPrefix(arg, "--dir=")); n != "" {
					name = n
					break
				}
			}
			add(name, id)
		}
	}
	return out
}

// isLoop reports whether a command line is a heartbeat loop of this run: a
// gyrum "heartbeat run" naming a directory under the run's root.
func (r *run) isLoop(args []string) bool {
	if len(args) < 3 || !slices.Contains(args, "heartbeat") || !slices.Contains(args, "run") {
		return false
	}
	for _, a := range args {
		a = strings.TrimPrefix(a, "--dir=")
		if a == r.root || strings.HasPrefix(a, r.root+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// agentOf returns the name of the agent whose ticket or worktree this is.
func (r *run) agentOf(ticket, dir string) string {
	for _, a := range r.agents {
		if ticket != "" && a.plan.Ticket == ticket {
			return a.plan.Name
		}
		if dir != "" && (dir == a.dir || strings.HasPrefix(dir, a.dir+string(filepath.Separator))) {
			return a.plan.Name
		}
	}
	return ""
}

// killMarked SIGKILLs every running process whose environment carries the
// run's marker, pass after pass until one finds none (a process may spawn
// another while it dies), at most five passes. It is the last resort after
// the graceful stops: a run must not leave a loop behind whatever raced
// with its end. Where the environment cannot be read (not Linux) it does
// nothing.
func (r *run) killMarked() {
	marker := r.markerEnv()
	for range 5 {
		pids, err := proc.List()
		if err != nil {
			return
		}
		found := 0
		for _, pid := range pids {
			if pid == os.Getpid() {
				continue
			}
			env, err := proc.Environ(pid)
			if err != nil || !slices.Contains(env, marker) {
				continue
			}
			id, err := proc.Lookup(pid)
			if err != nil {
				continue
			}
			found++
			r.log.Warn("a process of the run outlived its stop: killed", "process", id.String())
			_ = proc.Signal(id, syscall.SIGKILL)
		}
		if found == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
