package hook

import (
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// Env is what Main takes from its process: the hook's standard streams,
// environment, working directory and clock.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Getenv func(string) string
	Getwd  func() (string, error)
	Now    time.Time
}

// Main is the hook as a process runs it — `gyrum touch-activity [--dir D]`
// and the small `gyrum-hook [--dir D]` binary beside gyrum alike: it reads
// the hook's JSON from stdin, records activity in the worktrees it finds
// (Run) and writes what the agent should be told (Output). It never fails
// the agent's tool call: whatever happens, the caller exits 0.
func Main(args []string, env Env) {
	defer func() { _ = recover() }()
	o := Options{Now: env.Now}
	for i := 0; i < len(args); i++ {
		s := args[i]
		if s == "--dir" || s == "-dir" {
			if i+1 < len(args) {
				o.Dir = args[i+1]
				i++
			}
		} else if v, ok := strings.CutPrefix(s, "--dir="); ok {
			o.Dir = v
		} else if v, ok := strings.CutPrefix(s, "-dir="); ok {
			o.Dir = v
		}
	}
	o.Cwd, _ = env.Getwd()
	home, err := gyrumdir.Home(env.Getenv)
	if err != nil {
		return // no GYRUM_HOME, no start-work: nothing of ours to touch
	}
	o.Prepared = gyrumdir.NewPrepared(home)
	agents := gyrumdir.NewAgentIndex(home)
	if pid, err := strconv.Atoi(env.Getenv("CLAUDE_PID")); err == nil && pid > 0 {
		o.AgentPID, o.Agents, o.Parent = pid, agents, os.Getppid()
	} else if indexed(agents) {
		// Other agents hand down no pid: the hook's nearest agent ancestor
		// is its agent (Gemini CLI runs hooks from its relaunched node
		// child, which start-work watches too). Walked only while some
		// agent holds a lease, so a host without one reads no /proc.
		if in, _, ok := agentproc.Nearest(os.Getppid()); ok {
			o.AgentPID, o.Agents = in.PID, agents
		} else if in, _, ok := agentproc.Caller(os.Getppid()); ok {
			// An agent gyrum does not know: start-work indexed the process
			// above its tool call's shells (watched_how caller), which runs
			// this hook too, directly or through a shell.
			o.AgentPID, o.Agents = in.PID, agents
		}
	}
	res, _ := Run(env.Stdin, o)
	if out := Output(res.Event, res); out != nil && env.Stdout != nil {
		_, _ = env.Stdout.Write(out)
	}
}

// indexed reports whether the agent index has an entry at all: one
// directory read.
func indexed(x gyrumdir.AgentIndex) bool {
	f, err := os.Open(x.Dir())
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}
