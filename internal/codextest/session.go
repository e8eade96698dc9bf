package codextest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gyrum-labs/warp/internal/agenttest"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// Version is the Codex CLI version these tests are written against
// (.ci/install-codex installs it).
const Version = "0.169.0"

// EnvBinary names the variable that points the tests at a codex binary.
const EnvBinary = "GYRUM_TEST_CODEX"

// Model is the model the sessions ask for: one for which Codex 0.169.0
// offers exec_command as a top-level function.
const Model = "gpt-5.1-codex"

// cli is the Codex CLI the tests drive.
var cli = &agenttest.CLI{
	Title:     "Codex",
	Binary:    "codex",
	Version:   Version,
	EnvBinary: EnvBinary,
	Cache:     ".cache/codex/node_modules/.bin/codex",
	Install:   ".ci/install-codex",
	// `codex --version` prints "codex-cli 0.169.0".
	VersionOf: func(out string) string {
		f := strings.Fields(out)
		if len(f) == 0 {
			return ""
		}
		return f[len(f)-1]
	},
}

// Find returns the codex binary to test: $GYRUM_TEST_CODEX; else
// <module root>/.cache/codex/node_modules/.bin/codex (what .ci/install-codex installs); else
// codex on PATH. The error says what was tried.
func Find() (string, error) { return cli.Find() }

// Require returns the codex binary (Find). When there is none it
// skips the test with the reason, unless the CI variable is set: then the
// test fails. It warns when the binary is not Version.
func Require(t testing.TB) string {
	t.Helper()
	return cli.Require(t)
}

// Home is a hermetic HOME with its CODEX_HOME (Home/.codex).
type Home struct {
	Home, CodexHome string
}

// NewHome makes a fresh HOME and CODEX_HOME in a temporary directory.
func NewHome(t testing.TB) Home {
	t.Helper()
	h := Home{Home: filepath.Join(t.TempDir(), "home")}
	h.CodexHome = filepath.Join(h.Home, ".codex")
	if err := os.MkdirAll(h.CodexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// Env returns the hermetic environment of a codex run in h: HOME,
// CODEX_HOME, a dummy OPENAI_API_KEY, PATH, LANG, USER and LOGNAME, plus
// extra (an empty value removes a variable).
func (h Home) Env(extra map[string]string) []string {
	env := map[string]string{
		"HOME":           h.Home,
		"CODEX_HOME":     h.CodexHome,
		"OPENAI_API_KEY": "sk-codextest-dummy",
		"LANG":           "C.UTF-8",
	}
	for _, k := range []string{"PATH", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	var out []string
	for k, v := range env {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// Options configure one run of the CLI.
type Options struct {
	// Binary is the codex binary; empty means Require(t).
	Binary string
	// Dir is the working directory: the project. Required.
	Dir string
	// Home is HOME and CODEX_HOME; zero means NewHome(t).
	Home Home
	// Prompt is the prompt; empty means "Do the task.".
	Prompt string
	// Sandboxed runs with Codex's default sandbox and approvals instead of
	// --dangerously-bypass-approvals-and-sandbox.
	Sandboxed bool
	// Env adds to (or overrides) the hermetic environment.
	Env map[string]string
	// Args are more arguments of `codex exec`, before the prompt.
	Args []string
	// Interactive runs the TUI (`codex PROMPT`, the prompt submitted at
	// start) on a terminal of its own, `script -qfec CMD /dev/null`
	// (util-linux), instead of `codex exec`; its stdin is a pipe the
	// session holds open until Kill. Quit it with Interrupt or Kill.
	Interactive bool
}

// Session is one run of the real CLI, started by Start.
type Session struct {
	// Run is the started command (agenttest.Run): the npm launcher `codex`
	// (a node script that runs the native binary as its child, or execs
	// it on a node with process.execve).
	*agenttest.Run
	t    testing.TB
	Home Home

	model    *FakeModel
	mu       sync.Mutex
	codexPid int
}

// tagVar marks every process of a session in its environment, so the
// cleanup finds what the CLI spawned even after it was re-parented.
const tagVar = "CODEXTEST_SESSION"

// ProviderArgs are the -c overrides that point codex at model: a custom
// provider "codextest" with the Responses wire API and OPENAI_API_KEY.
func ProviderArgs(model *FakeModel) []string {
	return []string{"-c", "model_provider=codextest", "-c",
		fmt.Sprintf(`model_providers.codextest={name="codextest",base_url=%q,env_key="OPENAI_API_KEY",wire_api="responses"}`, model.BaseURL())}
}

// Start runs `codex exec --skip-git-repo-check -m Model PROMPT` in o.Dir
// against model, hermetically (Home.Env), stdin /dev/null, in its own
// process group. On failure the test log gets its output and the fake's
// requests.
func Start(t testing.TB, model *FakeModel, o Options) *Session {
	t.Helper()
	bin := o.Binary
	if bin == "" {
		bin = Require(t)
	}
	if o.Dir == "" {
		t.Fatal("codextest.Start: Options.Dir is required")
	}
	if o.Prompt == "" {
		o.Prompt = "Do the task."
	}
	if o.Home == (Home{}) {
		o.Home = NewHome(t)
	}
	s := &Session{t: t, model: model, Home: o.Home}
	args := []string{"exec", "--skip-git-repo-check", "-m", Model}
	if o.Interactive {
		args = []string{"-m", Model}
	}
	if !o.Interactive {
		args = append(args, ProviderArgs(model)...)
	}
	if !o.Sandboxed && !o.Interactive {
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	}
	args = append(append(args, o.Args...), o.Prompt)
	env := map[string]string{}
	if o.Interactive {
		env["TERM"] = "xterm-256color"
	}
	for k, v := range o.Env {
		env[k] = v
	}
	ro := agenttest.RunOptions{Name: "codex", Bin: bin, Args: args, Dir: o.Dir, Env: envMap(o.Home.Env(env)), TagVar: tagVar, Summary: model.Summary}
	if o.Interactive {
		// A pty starts at 0x0: give it a size before the TUI starts. The
		// TUI asks its terminal questions (cursor position, device
		// attributes, colours) and waits for the answers: answer them as
		// a terminal would, keeping the output in stdout.txt.
		ro.Command = func() *exec.Cmd {
			line := "stty rows 40 cols 120; exec " + shellquote.Quote(bin)
			for _, a := range args {
				line += " " + shellquote.Quote(a)
			}
			return exec.Command("script", "-qfec", line, os.DevNull)
		}
		ro.Terminal = answerTerminal
	}
	s.Run = agenttest.StartRun(t, ro)
	return s
}

// envMap turns NAME=value pairs into a map.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// CodexPid returns the pid of the native codex process: Pid itself when
// the launcher exec'd it, else the launcher's descendant running the
// native binary (0 while there is none; Linux /proc). The first pid found
// is kept, so it stays known after the session ended.
func (s *Session) CodexPid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codexPid != 0 {
		return s.codexPid
	}
	if native(s.Pid()) {
		s.codexPid = s.Pid()
		return s.codexPid
	}
	procs, err := agenttest.Processes()
	if err != nil {
		return 0
	}
	for _, p := range agenttest.Descendants(procs, s.Pid()) {
		if native(p.PID) {
			s.codexPid = p.PID
			return p.PID
		}
	}
	return 0
}

// native reports whether pid runs the native codex binary. Its kernel
// name alone does not tell: the launcher script is "codex" too until its
// #!/usr/bin/env has exec'd node.
func native(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && filepath.Base(exe) == "codex"
}

// terminalAnswers are what a terminal answers to the queries the TUI
// sends at start: cursor position (CSI 6n), primary device attributes
// (CSI c), the foreground and background colours (OSC 10/11 ?).
var terminalAnswers = []struct{ query, answer string }{
	{"\x1b[6n", "\x1b[1;1R"},
	{"\x1b[c", "\x1b[?62;22c"},
	{"\x1b]10;?", "\x1b]10;rgb:ffff/ffff/ffff\x1b\\"},
	{"\x1b]11;?", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
	{"\x1b[?u", "\x1b[?0u"},
}

// answerTerminal copies the TUI's output to out and writes the answer to
// every terminal query in it to in, until the output ends.
func answerTerminal(r io.ReadCloser, out, in *os.File) {
	defer r.Close()
	defer out.Close()
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = out.Write(buf[:n])
			seen := append(tail, buf[:n]...)
			for _, qa := range terminalAnswers {
				for i := bytes.Index(seen, []byte(qa.query)); i >= 0; {
					_, _ = in.Write([]byte(qa.answer))
					seen = append(seen[:i:i], seen[i+len(qa.query):]...)
					i = bytes.Index(seen, []byte(qa.query))
				}
			}
			if len(seen) > 8 {
				seen = seen[len(seen)-8:]
			}
			tail = append(tail[:0], seen...)
		}
		if err != nil {
			return
		}
	}
}
