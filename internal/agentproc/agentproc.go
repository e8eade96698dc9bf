// Package agentproc recognises coding-agent processes (those package agent
// knows) by the names their real processes carry, and
// finds the agent that runs a process by walking up its ancestors. Both
// gyrum start-work (which agent to watch) and the hook (whose leases a
// tool call is) use it; it reads /proc (Linux) or sysctl (macOS) through
// package proc and nothing else.
package agentproc

import (
	"path/filepath"
	"strings"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/proc"
)

// MaxDepth bounds an ancestor walk.
const MaxDepth = 64

// known returns the agent an executable (or script) base name is
// (package agent holds the names).
func known(name string) (string, bool) {
	a, ok := agent.ByExecutable(name)
	return a.Name, ok
}

// Product returns the product an agent name (Name's, or an executable's
// base name) is, as people call it: claude-code, codex, gemini-cli,
// cursor, aider; "agent" for anything else. It names leases by default
// (gyrum start-work's agent label).
func Product(name string) string { return agent.Product(name) }

// interpreter reports whether name runs agents written as scripts: for
// them the script's name (argv[1], or the module after -m) is looked at
// too.
func interpreter(name string) bool {
	switch name {
	case "node", "nodejs", "bun", "deno", "python", "python3", "ruby":
		return true
	}
	return false
}

// Candidates returns the names a process with kernel name comm and command
// line args goes by: comm, the base name of argv[0] and, for an
// interpreter, the base name of its script.
func Candidates(comm string, args []string) []string {
	cands := []string{comm}
	if len(args) > 0 {
		b := filepath.Base(args[0])
		cands = append(cands, b)
		if interpreter(b) && len(args) > 1 {
			if sc := script(args); sc != "" {
				cands = append(cands, filepath.Base(sc))
			}
		}
	}
	return cands
}

// script returns the script an interpreter's command line runs: the first
// argument after the interpreter's own options (Gemini CLI relaunches
// itself as `node --max-old-space-size=N .../gemini ...`), or the module
// after -m (python -m aider). "" when there is none.
func script(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-m" && i+1 < len(args):
			return args[i+1]
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return ""
}

// Name reports whether a process with kernel name comm and command line
// args is a known agent, and which.
func Name(comm string, args []string) (string, bool) {
	if len(args) > 1 && interpreter(filepath.Base(args[0])) {
		if a, ok := agent.ByPackage(filepath.ToSlash(script(args))); ok {
			return a.Name, true
		}
	}
	for _, c := range Candidates(comm, args) {
		if name, ok := known(c); ok {
			return name, true
		}
	}
	return "", false
}

// Inherited reports whether agent, a CLAUDE_PID, reached process from by
// way of another agent: walking up from from itself, a process that is a
// known agent comes first, and agent is found above it. That nearer agent
// is returned. Claude Code hands CLAUDE_PID down to everything it starts,
// other agents among them: a Codex started from a Claude Code session, its
// tool calls and its hooks carry the Claude Code's pid. When agent is not
// an ancestor of from at all, or nothing comes between, ok is false and
// CLAUDE_PID stands.
func Inherited(agent, from int) (nearer proc.Info, name string, ok bool) {
	pid := from
	for depth := 0; pid > 1 && depth < MaxDepth; depth++ {
		if pid == agent {
			return nearer, name, name != ""
		}
		in, err := proc.Stat(pid)
		if err != nil || in.Zombie {
			return proc.Info{}, "", false
		}
		if name == "" && !shell(in.Name) {
			args, _ := proc.Cmdline(pid)
			if n, isAgent := Name(in.Name, args); isAgent {
				nearer, name = in, n
			}
		}
		pid = in.PPID
	}
	return proc.Info{}, "", false
}

// Nearest returns the nearest agent at or above process from: walking up
// from from itself, the first process that is a known agent. The hook uses
// it to know whose tool call it runs for when the agent hands down no pid
// (every agent but Claude Code); start-work's ancestor walk finds the same
// process. A relaunched agent (Gemini CLI's node child, whose launcher
// stays alive as its parent) is found before its launcher. Shells are
// passed without reading their command line.
func Nearest(from int) (proc.Info, string, bool) {
	pid := from
	for depth := 0; pid > 1 && depth < MaxDepth; depth++ {
		in, err := proc.Stat(pid)
		if err != nil || in.Zombie {
			return proc.Info{}, "", false
		}
		if !shell(in.Name) {
			args, _ := proc.Cmdline(pid)
			if n, ok := Name(in.Name, args); ok {
				return in, n, true
			}
		}
		pid = in.PPID
	}
	return proc.Info{}, "", false
}

// shell reports whether comm is a shell, which is never an agent: the
// walk reads no command line of it (every hook and tool call runs under
// one, and the hook's walk is on its hot path).
func shell(comm string) bool {
	switch comm {
	case "sh", "bash", "dash", "zsh", "ksh", "fish", "busybox":
		return true
	}
	return false
}

// SharedServer reports whether a process with kernel name comm and command
// line args is an agent's shared server (agent.Server: Codex's app-server
// daemon), which runs other sessions' tool calls, and whether it listens
// for remote clients; a is its agent.
func SharedServer(comm string, args []string) (a agent.Agent, server, remote bool) {
	name, ok := Name(comm, args)
	if !ok {
		return agent.Agent{}, false, false
	}
	a, _ = agent.ByName(name)
	if a.Server == nil {
		return a, false, false
	}
	server, remote = a.Server.Is(args)
	return a, server, remote
}
