package gyrumcli

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/proc"
)

// Watched is the process a loop watches and how it was chosen.
type Watched struct {
	proc.Identity
	Name string // executable name
	How  string // "--watch-pid", "CLAUDE_PID", "ancestor", "parent", "self"
}

// resolveWatched picks the agent process: --watch-pid, else CLAUDE_PID,
// else the nearest ancestor whose executable is a known agent (or matches
// GYRUM_AGENT_PROCESS), else the parent of this process.
func (a *App) resolveWatched(watchPID int) (Watched, error) {
	if watchPID != 0 {
		return lookupWatched(watchPID, "--watch-pid")
	}
	if v := strings.TrimSpace(a.getenv("CLAUDE_PID")); v != "" {
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 0 {
			return Watched{}, clikit.Usagef("CLAUDE_PID=%q is not a pid", v)
		}
		// Handed down from a Claude Code session to another agent it
		// started (Codex, say), CLAUDE_PID names the wrong agent: the
		// nearer one runs this start-work.
		if in, name, ok := agentproc.Inherited(pid, os.Getppid()); ok {
			return Watched{Identity: in.Identity, Name: name, How: "ancestor"}, nil
		}
		return lookupWatched(pid, "CLAUDE_PID")
	}
	var extra *regexp.Regexp
	if v := a.getenv("GYRUM_AGENT_PROCESS"); v != "" {
		re, err := regexp.Compile(v)
		if err != nil {
			return Watched{}, clikit.Usagef("GYRUM_AGENT_PROCESS=%q is not a regular expression: %v", v, err)
		}
		extra = re
	}
	if w, ok := findAgentAncestor(os.Getppid(), extra); ok {
		return w, nil
	}
	return lookupWatched(os.Getppid(), "parent")
}

func lookupWatched(pid int, how string) (Watched, error) {
	id, err := proc.Lookup(pid)
	if err != nil {
		if errors.Is(err, proc.ErrNoProcess) {
			return Watched{}, clikit.Usagef("%s %d: no such live process", how, pid)
		}
		return Watched{}, fmt.Errorf("%s %d: %w", how, pid, err)
	}
	name, _ := proc.Executable(pid)
	return Watched{Identity: id, Name: name, How: how}, nil
}

// findAgentAncestor walks up from pid to init and returns the nearest
// process that looks like an agent.
func findAgentAncestor(pid int, extra *regexp.Regexp) (Watched, bool) {
	for depth := 0; pid > 1 && depth < agentproc.MaxDepth; depth++ {
		in, err := proc.Stat(pid)
		if err != nil || in.Zombie {
			return Watched{}, false
		}
		args, _ := proc.Cmdline(pid)
		if name, ok := agentName(in.Name, args, extra); ok {
			return Watched{Identity: in.Identity, Name: name, How: "ancestor"}, true
		}
		pid = in.PPID
	}
	return Watched{}, false
}

// agentName reports whether a process with kernel name comm and command
// line args is an agent, and under which name: a known agent
// (agentproc.Name), else a match of GYRUM_AGENT_PROCESS (extra) against
// any of its names (agentproc.Candidates) or the whole command line.
func agentName(comm string, args []string, extra *regexp.Regexp) (string, bool) {
	if name, ok := agentproc.Name(comm, args); ok {
		return name, true
	}
	if extra != nil {
		cands := agentproc.Candidates(comm, args)
		for _, c := range cands {
			if c != "" && extra.MatchString(c) {
				return c, true
			}
		}
		if len(args) > 0 && extra.MatchString(strings.Join(args, " ")) {
			return cands[len(cands)-1], true
		}
	}
	return "", false
}
