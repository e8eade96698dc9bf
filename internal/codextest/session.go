package codextest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/claudetest"
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

// cacheBinary is where .ci/install-codex installs the CLI, relative to the
// module root.
var cacheBinary = filepath.Join(".cache", "codex", "node_modules", ".bin", "codex")

// Find returns the codex binary to test: $GYRUM_TEST_CODEX; else
// <module root>/.cache/codex/node_modules/.bin/codex (what
// .ci/install-codex installs); else codex on PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%s=%s is not an executable file", EnvBinary, p)
	}
	var tried []string
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, cacheBinary)
		if isExecutable(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if p, err := exec.LookPath("codex"); err == nil {
		return p, nil
	}
	tried = append(tried, "codex on PATH")
	return "", fmt.Errorf("no Codex CLI: %s is unset and there is no %s (run .ci/install-codex)",
		EnvBinary, strings.Join(tried, " nor "))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

var (
	versionOnce sync.Once
	versionOut  string
)

// Require returns the codex binary (Find). When there is none it skips the
// test with the reason, unless CI is set: then the test fails. It warns
// when the binary is not Version.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the real Codex CLI is missing: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	versionOnce.Do(func() {
		out, err := exec.Command(p, "--version").Output()
		versionOut = strings.TrimSpace(string(out))
		if err != nil {
			versionOut = fmt.Sprintf("unknown (--version: %v)", err)
		}
	})
	if !strings.HasSuffix(versionOut, " "+Version) {
		t.Logf("warning: %s is %s; these tests were measured on Codex CLI %s", p, versionOut, Version)
	}
	return p
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
	t testing.TB
	// Cmd is the started command: the npm launcher `codex` (a node script
	// that runs the native binary as its child, or execs it on a node
	// with process.execve).
	Cmd  *exec.Cmd
	Home Home
	// Env is the environment the CLI was started with.
	Env     []string
	Started time.Time

	model      *FakeModel
	tag        string
	stdoutPath string
	stderrPath string
	done       chan struct{}
	code       int
	ended      time.Time
	killOnce   sync.Once
	mu         sync.Mutex
	codexPid   int
	stdin      *os.File // Interactive: the terminal's input, open until Kill
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
	root := t.TempDir()
	s := &Session{t: t, model: model, Home: o.Home, done: make(chan struct{}), tag: randomAlnum(16),
		stdoutPath: filepath.Join(root, "stdout.txt"), stderrPath: filepath.Join(root, "stderr.txt")}
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
	env := map[string]string{tagVar: s.tag}
	if o.Interactive {
		env["TERM"] = "xterm-256color"
	}
	for k, v := range o.Env {
		env[k] = v
	}
	s.Env = o.Home.Env(env)

	stdout, err := os.Create(s.stdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(s.stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if o.Interactive {
		// A pty starts at 0x0: give it a size before the TUI starts.
		line := "stty rows 40 cols 120; exec " + shellquote.Quote(bin)
		for _, a := range args {
			line += " " + shellquote.Quote(a)
		}
		cmd = exec.Command("script", "-qfec", line, os.DevNull)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		devnull.Close()
		devnull, s.stdin = r, w
	}
	cmd.Dir, cmd.Env = o.Dir, s.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, stdout, stderr
	if o.Interactive {
		// The TUI asks its terminal questions (cursor position, device
		// attributes, colours) and waits for the answers: answer them as a
		// terminal would, keeping the output in stdout.txt.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = pw
		go answerTerminal(pr, stdout, s.stdin)
		defer pw.Close()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.Cmd = cmd
	s.Started = time.Now()
	err = cmd.Start()
	if !o.Interactive {
		stdout.Close()
	}
	stderr.Close()
	devnull.Close()
	if err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		s.ended = time.Now()
		s.code = exitCode(cmd.ProcessState)
		close(s.done)
	}()
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			s.logOutput()
		}
	})
	return s
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Pid is the pid of the process started (the npm launcher).
func (s *Session) Pid() int { return s.Cmd.Process.Pid }

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
	procs, err := claudetest.Processes()
	if err != nil {
		return 0
	}
	for _, p := range claudetest.Descendants(procs, s.Pid()) {
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

// Done is closed when the started process has exited.
func (s *Session) Done() <-chan struct{} { return s.done }

// Exited reports whether the started process has exited.
func (s *Session) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Ended waits for the process to exit and returns when that was observed.
func (s *Session) Ended() time.Time {
	<-s.done
	return s.ended
}

// Wait waits up to timeout for the process to exit and returns its exit
// code; on timeout it fails the test.
func (s *Session) Wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(timeout):
		s.t.Fatalf("codex (pid %d) still running after %v; process tree:\n%s", s.Pid(), timeout, s.TreeString())
		return -1
	}
}

// WaitOK is Wait that also fails the test on a non-zero exit code.
func (s *Session) WaitOK(timeout time.Duration) {
	s.t.Helper()
	if code := s.Wait(timeout); code != 0 {
		s.t.Fatalf("codex exited %d\nstderr:\n%s", code, s.Stderr())
	}
}

// Kill sends SIGKILL to the session's process group and to every process
// it spawned (found by the environment tag and by ancestry), then reaps
// it. It is idempotent and runs at the end of every test.
func (s *Session) Kill() {
	s.killOnce.Do(func() {
		if s.stdin != nil {
			defer s.stdin.Close()
		}
		pid := s.Pid()
		victims := map[int]bool{}
		if !s.Exited() {
			if procs, err := claudetest.Processes(); err == nil {
				for _, p := range claudetest.Descendants(procs, pid) {
					victims[p.PID] = true
				}
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		for range 5 {
			for _, p := range Tagged(tagVar + "=" + s.tag) {
				victims[p] = true
			}
			if len(victims) == 0 {
				break
			}
			for p := range victims {
				if p > 1 && p != os.Getpid() {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			clear(victims)
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.t.Errorf("codex (pid %d) not reaped 10 s after SIGKILL", pid)
		}
	})
}

// Leftovers returns the pids of live processes that carry the session's
// tag (Linux only), other than the started process.
func (s *Session) Leftovers() []int {
	var out []int
	for _, pid := range Tagged(tagVar + "=" + s.tag) {
		if pid != s.Pid() {
			out = append(out, pid)
		}
	}
	return out
}

// Stdout returns what the CLI printed on stdout so far.
func (s *Session) Stdout() string {
	data, _ := os.ReadFile(s.stdoutPath)
	return string(data)
}

// Stderr returns what the CLI printed on stderr so far (its transcript of
// the run: hooks, commands, messages).
func (s *Session) Stderr() string {
	data, _ := os.ReadFile(s.stderrPath)
	return string(data)
}

// TreeString formats the started process and its descendants now.
func (s *Session) TreeString() string {
	procs, err := claudetest.Processes()
	if err != nil {
		return err.Error()
	}
	return claudetest.Tree(procs, s.Pid())
}

func (s *Session) logOutput() {
	tail := func(x string) string {
		const max = 16 << 10
		if len(x) > max {
			return "...\n" + x[len(x)-max:]
		}
		return x
	}
	s.t.Logf("codex pid %d exit %d\n--- stdout:\n%s\n--- stderr:\n%s\n--- requests:\n%s",
		s.Pid(), s.code, tail(s.Stdout()), tail(s.Stderr()), s.model.Summary())
}

// Tagged returns the pids of live processes whose environment holds kv
// ("NAME=value"); Linux only (nothing elsewhere).
func Tagged(kv string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(kv)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(data, []byte{0}) {
			if bytes.Equal(v, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
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
