package hook

import (
	"io"
	"os"
	"strconv"
	"strings"
	"time"

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
	if pid, err := strconv.Atoi(env.Getenv("CLAUDE_PID")); err == nil && pid > 0 {
		o.AgentPID, o.Agents, o.Parent = pid, gyrumdir.NewAgentIndex(home), os.Getppid()
	}
	res, _ := Run(env.Stdin, o)
	if out := Output(res.Event, res); out != nil && env.Stdout != nil {
		_, _ = env.Stdout.Write(out)
	}
}
