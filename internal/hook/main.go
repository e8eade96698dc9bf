package hook

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
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
	// Ask asks warp whether a worktree's lease ended (Options.Ask); nil:
	// the hook never asks.
	Ask func(d gyrumdir.Dir) (gyrumdir.LeaseEnded, bool)
}

// Main is the hook as a process runs it — `gyrum touch-activity [--dir D]`
// and the small `gyrum-hook [--dir D]` binary beside gyrum alike: it reads
// the hook's JSON from stdin, records activity in the worktrees it finds
// (Run) and writes what the agent should be told (Output). It never fails
// the agent's tool call: whatever happens, the caller exits 0.
func Main(args []string, env Env) {
	defer func() { _ = recover() }()
	o := Options{Now: env.Now, Ask: env.Ask}
	o.NoLabels = env.Getenv != nil && off(env.Getenv(EnvLoopLabels))
	o.NoTell = env.Getenv != nil && off(env.Getenv(EnvLoopTell))
	announced := parseArgs(args, &o)
	o.Cwd, _ = env.Getwd()
	home, err := gyrumdir.Home(env.Getenv)
	if err != nil {
		return // no GYRUM_HOME, no start-work: nothing of ours to touch
	}
	o.Prepared = gyrumdir.NewPrepared(home)
	agents := gyrumdir.NewAgentIndex(home)
	if pid := announcedPID(env.Getenv); pid > 0 {
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
	notice := noticeFor(announced, res)
	if out := OutputAs(notice, res.Event, res); out != nil && env.Stdout != nil {
		_, _ = env.Stdout.Write(out)
	}
}

// parseArgs reads the hook's flags, --dir into o, and returns --agent's
// value. Nothing else is refused: a hook must not fail on a flag it does
// not know.
func parseArgs(args []string, o *Options) (announced string) {
	for i := 0; i < len(args); i++ {
		s := args[i]
		if s == "--agent" {
			// Written by gyrum setup for an agent the payload does not
			// name (agent.Hooks.Announce).
			if i+1 < len(args) {
				announced = args[i+1]
				i++
			}
		} else if v, ok := strings.CutPrefix(s, "--agent="); ok {
			announced = v
		} else if s == "--dir" || s == "-dir" {
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
	return announced
}

// noticeFor is the form the notices of res take: the announced agent's
// (--agent), else the one the event's name implies — unless the process
// running the hook is an agent that needs announcing.
func noticeFor(announced string, res Result) agent.Notice {
	notice := agent.NoticeFor(res.Event)
	if a, ok := agent.ByFlag(announced); ok {
		return a.Notice // an unknown --agent is ignored
	}
	if len(res.Notices) > 0 {
		// No --agent: the agent's hooks may be another agent's settings
		// it reads too (GitHub Copilot CLI runs a repository's
		// .claude/settings.json). An agent that needs announcing is
		// known by the process running the hook: walked only when there
		// is something to tell.
		if _, name, ok := agentproc.Nearest(os.Getppid()); ok {
			if a, ok := agent.ByName(name); ok && a.Hooks != nil && a.Hooks.Announce {
				notice = a.Notice
			}
		}
	}
	return notice
}

// Operator settings of the hook's loop detection (issue 44).
const (
	// EnvLoopLabels=off keeps calls' fingerprints without their labels.
	EnvLoopLabels = "GYRUM_LOOP_LABELS"
	// EnvLoopTell=off keeps the hook from telling the agent it loops or
	// makes no progress.
	EnvLoopTell = "GYRUM_LOOP_TELL"
)

// off reports whether a setting's value turns it off.
func off(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

// announcedPID returns the pid an agent hands its hooks (agent.PIDEnv:
// CLAUDE_PID, OPENCODE_PID, ...), the first set in the agents' order; 0
// when none is.
func announcedPID(getenv func(string) string) int {
	for _, k := range agent.PIDEnvs() {
		if pid, err := strconv.Atoi(getenv(k)); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
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

// AskTimeout bounds AskByExec's run of gyrum: its start, and its question
// to warp (heartbeat.AskTimeout).
const AskTimeout = 4 * time.Second

// AskByExec returns an Ask that runs `GYRUM heartbeat ask --dir D --json`
// (gyrum-hook links no HTTP client: it costs every tool call milliseconds
// of start-up, and the question is rare). gyrum is the gyrum beside this
// executable, else the one on PATH; none, and the hook never asks.
func AskByExec() func(d gyrumdir.Dir) (gyrumdir.LeaseEnded, bool) {
	return func(d gyrumdir.Dir) (gyrumdir.LeaseEnded, bool) {
		bin := ""
		if self, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(self), "gyrum"); isExecutable(p) {
				bin = p
			}
		}
		if bin == "" {
			p, err := exec.LookPath("gyrum")
			if err != nil {
				return gyrumdir.LeaseEnded{}, false
			}
			bin = p
		}
		ctx, cancel := context.WithTimeout(context.Background(), AskTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "heartbeat", "ask", "--dir", d.Worktree, "--json")
		cmd.Stdin, cmd.Stderr = nil, nil
		out, err := cmd.Output()
		if err != nil {
			return gyrumdir.LeaseEnded{}, false
		}
		var a struct {
			Ended  bool                 `json:"ended"`
			Notice *gyrumdir.LeaseEnded `json:"notice"`
		}
		if json.Unmarshal(out, &a) != nil || !a.Ended || a.Notice == nil {
			return gyrumdir.LeaseEnded{}, false
		}
		// Only a notice about the lease lease.json names is gyrum's word.
		if l, err := d.ReadLease(); err != nil || l.Ticket != a.Notice.Ticket || l.Epoch != a.Notice.Epoch {
			return gyrumdir.LeaseEnded{}, false
		}
		return *a.Notice, true
	}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
