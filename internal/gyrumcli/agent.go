package gyrumcli

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/proc"
)

// Watched is the process a loop watches and how it was chosen.
type Watched struct {
	proc.Identity
	Name string // executable name
	How  string // "--watch-pid", an agent's PIDEnv ("CLAUDE_PID", "OPENCODE_PID"), "ancestor", "app-server-client", "caller", "parent", "self"
	// Passed counts the shells and wrappers between start-work and the
	// watched process (How "caller").
	Passed int
	// Server is the app server that runs the watched client's tool calls
	// (How "app-server-client"); zero otherwise.
	Server proc.Identity
}

// resolveWatched picks the agent process: --watch-pid, else the pid an
// agent hands down (CLAUDE_PID, OPENCODE_PID, ...: agent.PIDEnv), else the nearest ancestor whose executable is a known agent (or matches
// GYRUM_AGENT_PROCESS), else the first ancestor above the tool call's
// shells and wrappers (agentproc.Caller), else the parent of this process
// (an interactive shell, a program that is neither).
func (a *App) resolveWatched(watchPID int) (Watched, error) {
	if watchPID != 0 {
		return lookupWatched(watchPID, "--watch-pid")
	}
	// The pid an agent hands its tools (agent.PIDEnv: CLAUDE_PID,
	// OPENCODE_PID, ...), the first set in the agents' order.
	for _, k := range agent.PIDEnvs() {
		v := strings.TrimSpace(a.getenv(k))
		if v == "" {
			continue
		}
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 0 {
			return Watched{}, clikit.Usagef("%s=%q is not a pid", k, v)
		}
		// Handed down from a session of one agent to another it started
		// (a Codex from Claude Code, say), the variable names the wrong
		// agent: the nearer one runs this start-work.
		if in, name, ok := agentproc.Inherited(pid, os.Getppid()); ok {
			return Watched{Identity: in.Identity, Name: name, How: "ancestor"}, nil
		}
		w, err := lookupWatched(pid, k)
		if err == nil {
			if args, _ := proc.Cmdline(pid); len(args) > 0 {
				if n, isAgent := agentproc.Name(w.Name, args); isAgent {
					w.Name = n
				}
			}
		}
		return w, err
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
	// An agent gyrum does not know: start-work runs in its tool call's
	// shell, which exits when the call returns. Watch the process that
	// runs that shell.
	if in, passed, ok := agentproc.Caller(os.Getppid()); ok && passed > 0 {
		args, _ := proc.Cmdline(in.PID)
		cands := agentproc.Candidates(in.Name, args)
		return Watched{Identity: in.Identity, Name: cands[len(cands)-1], How: "caller", Passed: passed}, nil
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

// serverClient handles a start-work run inside an agent's shared server
// (agent.Server: Codex's app-server daemon, which the interactive app runs
// its tool shells on): it outlives the session and keeps the environment
// of the session that started it. Watching it would keep the lease after
// the user quits, and its environment is another session's. When the
// nearest agent above start-work is such a server, the process watched is
// the single client connected to it (for Codex: the app, `codex` or
// `codex --remote`), and the session's settings (WARP_*, GYRUM_*,
// HEARTBEAT_*, CLAUDE_PID, HOME, USER, LOGNAME) come from that client's
// environment, not from start-work's own. It refuses when it cannot tell
// the session: no client, several, a non-Unix listener, an unreadable
// environment. ok is false when start-work does not run under such a
// server.
func (a *App) serverClient() (w Watched, ok bool, err error) {
	in, _, found := agentproc.Nearest(os.Getppid())
	if !found {
		return Watched{}, false, nil
	}
	args, _ := proc.Cmdline(in.PID)
	ag, server, remote := agentproc.SharedServer(in.Name, args)
	if !server {
		return Watched{}, false, nil
	}
	srv := ag.Server
	todo := srv.Avoid + ", or name the agent process with --watch-pid PID"
	if !remote {
		if r, err := proc.ListensRemote(in.PID); err == nil && r {
			remote = true
		}
	}
	if remote {
		return Watched{}, true, fmt.Errorf("start-work runs under %s (pid %d), which listens for remote clients: which session this is cannot be told; %s", srv.Name, in.PID, todo)
	}
	clients, err := proc.UnixClients(in.PID)
	if err != nil {
		return Watched{}, true, fmt.Errorf("start-work runs under %s (pid %d), and its connected client cannot be found: %w; %s", srv.Name, in.PID, err, todo)
	}
	switch len(clients) {
	case 0:
		return Watched{}, true, fmt.Errorf("start-work runs under %s (pid %d), which has no connected client to watch; %s", srv.Name, in.PID, todo)
	case 1:
	default:
		return Watched{}, true, fmt.Errorf("start-work runs under %s (pid %d), which has %d connected clients (pids %v): which session this is cannot be told; %s", srv.Name, in.PID, len(clients), clients, todo)
	}
	env, err := proc.Environ(clients[0])
	if err != nil {
		return Watched{}, true, fmt.Errorf("start-work runs under %s (pid %d): the environment of its client, pid %d, cannot be read: %w; %s", srv.Name, in.PID, clients[0], err, todo)
	}
	w, err = lookupWatched(clients[0], "app-server-client")
	if err != nil {
		return Watched{}, true, err
	}
	if cargs, _ := proc.Cmdline(clients[0]); len(cargs) > 0 {
		if n, isAgent := agentproc.Name(w.Name, cargs); isAgent {
			w.Name = n
		}
	}
	w.Server = in.Identity
	a.useSessionEnv(env)
	return w, true, nil
}

// sessionVar reports whether k is a setting of the session that a
// process under a shared server must take from the session's client.
func sessionVar(k string) bool {
	switch k {
	case "HOME", "USER", "LOGNAME":
		return true
	}
	if slices.Contains(agent.PIDEnvs(), k) {
		return true
	}
	return strings.HasPrefix(k, "WARP_") || strings.HasPrefix(k, "GYRUM_") || strings.HasPrefix(k, "HEARTBEAT_")
}

// useSessionEnv makes Getenv answer the session's variables (sessionVar)
// from env, a client's environment, for the rest of the run (a variable
// env lacks is unset, not inherited); --url and --token still win. The
// loop start-work spawns gets them too (childEnv).
func (a *App) useSessionEnv(env []string) {
	vals := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && sessionVar(k) {
			vals[k] = v
		}
	}
	getenv, over := a.Getenv, a.overrides
	a.Getenv = func(k string) string {
		if _, flag := over[k]; flag || !sessionVar(k) {
			return clikit.Getenv(getenv, k)
		}
		return vals[k]
	}
}
