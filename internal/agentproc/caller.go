package agentproc

import (
	"path/filepath"
	"strings"

	"github.com/gyrum-labs/warp/internal/proc"
)

// Caller is the process that runs a command when no known agent is among
// its ancestors: walking up from from (the command's parent), the first
// process that is neither a transient shell (one that runs a command
// string: `bash -c …`, `sh -lc …`) nor a launch wrapper
// (`env`, `timeout`, `nice`, `nohup`, …). Agent CLIs run each tool call as
// such a shell, which exits when the call returns: watching it would end
// the lease a second after the claim. An interactive shell (no command
// string) is a caller: a person at a prompt; so is a shell running a
// script, which lives as long as its work does. passed counts the
// shells and wrappers walked past. ok is false when the walk fails (a
// process vanished) or ends at pid 1, which is never a caller: the shell
// was orphaned, so its agent is gone.
func Caller(from int) (in proc.Info, passed int, ok bool) {
	pid := from
	for depth := 0; pid > 1 && depth < MaxDepth; depth++ {
		st, err := proc.Stat(pid)
		if err != nil || st.Zombie {
			return proc.Info{}, 0, false
		}
		args, _ := proc.Cmdline(pid)
		if !transient(st.Name, args) {
			return st, passed, true
		}
		passed++
		pid = st.PPID
	}
	return proc.Info{}, 0, false
}

// transient reports whether a process with kernel name comm and command
// line args only passes a command on: a shell running a command string,
// or a launch wrapper.
func transient(comm string, args []string) bool {
	name := comm
	if len(args) > 0 {
		name = strings.TrimPrefix(filepath.Base(args[0]), "-") // "-bash": a login shell
	}
	if wrapper(name) || wrapper(comm) {
		return true
	}
	if !shell(comm) && !shell(name) {
		return false
	}
	return runsCommand(args)
}

// runsCommand reports whether a shell's command line gives it a command
// string: -c (also clustered, -lc, -ec) or fish's --command, before the
// first operand (a script: the shell is that script's process).
func runsCommand(args []string) bool {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case a == "--command" || strings.HasPrefix(a, "--command="):
			return true
		case strings.HasPrefix(a, "--"):
			// --login, --norc, --rcfile FILE: take FILE as a value.
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.HasPrefix(a, "-") && strings.ContainsRune(a[1:], 'c') {
				return true
			}
			if a == "-o" || a == "+o" || a == "-O" || a == "+O" {
				i++ // -o pipefail: an option's value
			}
		default:
			return false // a script operand
		}
	}
	return false
}

// wrapper reports whether name is a program that starts another in its
// place and lives (or execs) only to pass it on: env, timeout, nice and
// the like. A tool call run as `timeout 600 gyrum start-work T` is the
// agent's all the same.
func wrapper(name string) bool {
	switch name {
	case "env", "timeout", "nice", "nohup", "script", "stdbuf", "setsid", "ionice", "chrt",
		"taskset", "time", "flock", "unbuffer", "caffeinate":
		return true
	}
	return false
}
