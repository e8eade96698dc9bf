package gyrumcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/proc"
)

// knownAgent returns the agent an executable (or script) base name is,
// as the ancestor walk recognises it: Claude Code's npm package runs the
// native bin/claude.exe (the `claude` symlink's target), older ones
// cli.js under node; Codex ships a native `codex` (and codex.js for node);
// Gemini CLI and cursor-agent are node scripts or binaries of their name;
// aider is a Python entry point.
func knownAgent(name string) (string, bool) {
	switch name {
	case "claude", "claude.exe":
		return "claude", true
	case "codex", "codex.js", "codex-linux-x64", "codex-darwin-arm64", "codex-x86_64-unknown-linux-musl", "codex-aarch64-apple-darwin":
		return "codex", true
	case "gemini", "gemini.js":
		return "gemini", true
	case "cursor-agent":
		return "cursor-agent", true
	case "aider":
		return "aider", true
	}
	return "", false
}

// agentPackages are path fragments of agent CLIs that run under an
// interpreter: a script argument containing one names the agent.
var agentPackages = []struct{ fragment, agent string }{
	{"@anthropic-ai/claude-code/", "claude"},
	{"@openai/codex/", "codex"},
	{"@google/gemini-cli/", "gemini"},
	{"/aider/", "aider"},
}

// interpreter reports whether name runs agents written as scripts: for
// them the walk also looks at the script's name (argv[1]).
func interpreter(name string) bool {
	switch name {
	case "node", "nodejs", "bun", "deno", "python", "python3", "ruby":
		return true
	}
	return false
}

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
	for depth := 0; pid > 1 && depth < 64; depth++ {
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
// line args is an agent, and under which name. Candidates: comm, the base
// name of argv[0], and for interpreters the base name of argv[1].
// GYRUM_AGENT_PROCESS (extra) is matched against every candidate and the
// whole command line.
func agentName(comm string, args []string, extra *regexp.Regexp) (string, bool) {
	cands := []string{comm}
	if len(args) > 0 {
		b := filepath.Base(args[0])
		cands = append(cands, b)
		if interpreter(b) && len(args) > 1 {
			script := args[1]
			if script == "-m" && len(args) > 2 { // python -m aider
				script = args[2]
			}
			cands = append(cands, filepath.Base(script))
			for _, p := range agentPackages {
				if strings.Contains(filepath.ToSlash(script), p.fragment) {
					return p.agent, true
				}
			}
		}
	}
	for _, c := range cands {
		if name, ok := knownAgent(c); ok {
			return name, true
		}
	}
	if extra != nil {
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
