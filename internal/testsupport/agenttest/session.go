package agenttest

import (
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// Agent is what the harness knows of one agent CLI: where its pinned
// install is (CLI), how its HOME is laid out and which variables make it
// hermetic (data), and Prepare, which turns a session's Options into its
// command line. Each end-to-end suite declares its agent's Agent beside
// its tests.
type Agent struct {
	CLI
	// ConfigDir is the agent's config directory in HOME (".claude").
	ConfigDir string
	// ConfigVar, when set, names the variable that points the agent at
	// ConfigDir ("CLAUDE_CONFIG_DIR", "CODEX_HOME").
	ConfigVar string
	// Vars are the agent's variables in every run: a dummy API key,
	// telemetry and updates off.
	Vars map[string]string
	// Prepare writes what a session needs into its home (settings, folder
	// trust) and returns its command line and the variables that point it
	// at the session's fake model. o has its defaults (Binary, Prompt,
	// Home) filled in.
	Prepare func(t testing.TB, s *Session, o Options) Launch
	// IsAgent, when set, tells the agent's own process among the session's
	// (a native binary below its launcher, a relaunched child); nil means
	// the process that runs Binary (argv[0], or argv[1] of an interpreter
	// running it). See Session.AgentPid.
	IsAgent func(s *Session) func(Proc) bool
}

// Launch is how an agent runs one session: what its Prepare returns.
type Launch struct {
	// Args are the CLI's arguments.
	Args []string
	// Env adds to the agent's hermetic environment (Agent.Env), under
	// the test's Options.Env.
	Env map[string]string
	// StdoutLabel heads stdout in the failure log ("stdout").
	StdoutLabel string
	// Cleanup, when set, runs at the end of the test after the kill.
	Cleanup func()
}

// Options configure one session. Where an agent has no such thing, its
// Prepare ignores the field.
type Options struct {
	// Binary is the CLI; empty means the agent's Require(t).
	Binary string
	// Dir is the working directory: the project. Required.
	Dir string
	// Prompt is the prompt; empty means "Do the task.".
	Prompt string
	// Home is the session's HOME; zero means a fresh one (Agent.NewHome).
	Home Home
	// Settings, when not nil, are settings of the agent's own for the
	// session (Claude Code: a --settings file; Gemini CLI: merged into
	// its user settings at the top level).
	Settings map[string]any
	// Ask runs the agent with its default approvals instead of approving
	// every call (Claude Code --permission-mode default, Codex its sandbox,
	// Gemini CLI without --yolo): a call that needs an approval is denied
	// when no one can be asked.
	Ask bool
	// Terminal runs the CLI's interactive app on a terminal of its own,
	// `script -qfec CMD /dev/null` (util-linux), TERM=xterm-256color,
	// answering what the app asks its terminal; its stdin is a pipe the
	// session holds open until Kill. Wrap is then not used.
	Terminal bool
	// Env adds to (or overrides) the hermetic environment: WARP_URL,
	// GYRUM_HOME, PATH, ...; an empty value removes a variable.
	Env map[string]string
	// Args are more command-line arguments.
	Args []string
	// Wrap, when not empty, is a command the CLI is run under: the process
	// started is Wrap[0] with Wrap[1:], then the CLI and its arguments
	// (`gyrum start-work T -- claude -p ...`). Pid is then the wrapper's.
	Wrap []string
}

// Home is a hermetic HOME and the agent's config directory in it.
type Home struct {
	// Dir is $HOME; Config is Dir/Agent.ConfigDir.
	Dir, Config string
}

// NewHome makes a fresh HOME, with the agent's config directory, in a
// temporary directory.
func (a *Agent) NewHome(t testing.TB) Home {
	t.Helper()
	h := Home{Dir: filepath.Join(t.TempDir(), "home")}
	h.Config = filepath.Join(h.Dir, a.ConfigDir)
	if err := os.MkdirAll(h.Config, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// Env returns the agent's hermetic environment in h as NAME=value pairs,
// sorted: HOME, LANG=C.UTF-8, PATH, USER and LOGNAME as the test has them,
// ConfigVar, Vars, then extra (an empty value removes a variable). Nothing
// else of the test's environment is inherited.
func (a *Agent) Env(h Home, extra map[string]string) []string {
	var out []string
	for k, v := range a.env(h, extra) {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

func (a *Agent) env(h Home, extra map[string]string) map[string]string {
	env := map[string]string{"HOME": h.Dir, "LANG": "C.UTF-8"}
	for _, k := range []string{"PATH", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	if a.ConfigVar != "" {
		env[a.ConfigVar] = h.Config
	}
	maps.Copy(env, a.Vars)
	maps.Copy(env, extra)
	return env
}

// TagVar marks every process of a session in its environment, so the
// cleanup finds what the CLI spawned even after it was re-parented.
const TagVar = "AGENTTEST_RUN"

// Session is one run of an agent CLI against a fake model, started by
// Agent.Start. Everything it spawned is killed at the end of the test.
type Session struct {
	// Run is the started command: the CLI, or the wrapper of
	// Options.Wrap.
	*Run
	// Agent is the agent; Bin its binary; Model the fake it talks to.
	Agent *Agent
	Bin   string
	Model *FakeModel
	// Home is its HOME.
	Home Home

	mu       sync.Mutex
	agentPid int
}

// AgentPid returns the pid of the agent's own process (Agent.IsAgent): the
// started process when it is the agent, else its first descendant that is
// (below a launcher, or below the wrapper of Options.Wrap); 0 while there
// is none. The first pid found is kept, so it stays known after the
// session ended.
func (s *Session) AgentPid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agentPid == 0 {
		is := func(p Proc) bool {
			return (len(p.Args) > 0 && p.Args[0] == s.Bin) || (len(p.Args) > 1 && p.Args[1] == s.Bin)
		}
		if s.Agent.IsAgent != nil {
			is = s.Agent.IsAgent(s)
		}
		s.agentPid = s.Find(is)
	}
	return s.agentPid
}

// Start runs the agent's CLI in o.Dir against model: in a hermetic HOME
// and environment (Env, with what Prepare adds and then o.Env), stdin
// /dev/null (or a terminal, Options.Terminal), in its own process group.
// On failure the test log gets its output and the fake's requests.
func (a *Agent) Start(t testing.TB, model *FakeModel, o Options) *Session {
	t.Helper()
	if o.Binary == "" {
		o.Binary = a.Require(t)
	}
	if o.Dir == "" {
		t.Fatalf("%s session: Options.Dir is required", a.Binary)
	}
	if o.Prompt == "" {
		o.Prompt = "Do the task."
	}
	if o.Home == (Home{}) {
		o.Home = a.NewHome(t)
	}
	s := &Session{Agent: a, Bin: o.Binary, Model: model, Home: o.Home}
	l := a.Prepare(t, s, o)
	env := a.env(o.Home, l.Env)
	if o.Terminal {
		env["TERM"] = "xterm-256color"
	}
	maps.Copy(env, o.Env)
	ro := RunOptions{Name: a.Binary, Bin: o.Binary, Args: l.Args, Wrap: o.Wrap, Dir: o.Dir, Env: env, TagVar: TagVar,
		StdoutLabel: l.StdoutLabel, Summary: model.Summary, Cleanup: l.Cleanup}
	if o.Terminal {
		ro.Command = func() *exec.Cmd { return onTerminal(o.Binary, l.Args) }
		ro.Terminal = answerTerminal
	}
	s.Run = StartRun(t, ro)
	return s
}

// WriteFile writes data to path (creating parent directories) or fails the
// test.
func WriteFile(t testing.TB, path string, data []byte, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}

// Poll checks cond every 10 ms until it holds, failing the test after
// timeout with what it waited for.
func Poll(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
