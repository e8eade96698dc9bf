package claudetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the Claude Code version these tests are written against
// (.ci/install-claude installs it).
const Version = "2.1.328"

// EnvBinary names the variable that points the tests at a claude binary.
const EnvBinary = "GYRUM_TEST_CLAUDE"

// cacheBinary is where .ci/install-claude installs the CLI, relative to
// the module root.
var cacheBinary = filepath.Join(".cache", "claude-code", "node_modules", ".bin", "claude")

// Find returns the claude binary to test: $GYRUM_TEST_CLAUDE; else
// <module root>/.cache/claude-code/node_modules/.bin/claude (what
// .ci/install-claude installs); else claude on PATH. The error says what
// was tried.
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
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	tried = append(tried, "claude on PATH")
	return "", fmt.Errorf("no Claude Code CLI: %s is unset and there is no %s (run .ci/install-claude)",
		EnvBinary, strings.Join(tried, " nor "))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
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

// Require returns the claude binary (Find). When there is none it skips
// the test with the reason, unless the CI variable is set: then the test
// fails. It logs the binary's version, and warns when it is not Version.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the real Claude Code CLI is missing: %v", err)
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
	if !strings.HasPrefix(versionOut, Version+" ") && versionOut != Version {
		t.Logf("warning: %s is Claude Code %s; these tests were measured on %s", p, versionOut, Version)
	}
	return p
}

// Options configure one run of the CLI.
type Options struct {
	// Binary is the claude binary; empty means Require(t).
	Binary string
	// Dir is the working directory: the project. Required.
	Dir string
	// Prompt is the user prompt given with -p; empty means "Do the task.".
	Prompt string
	// PermissionMode empty runs with --dangerously-skip-permissions (and
	// IS_SANDBOX=1, which the CLI requires for that flag as root); any
	// other value is passed as --permission-mode ("default" denies every
	// call that needs an approval, since -p cannot ask).
	PermissionMode string
	// Settings, when not nil, is written as JSON to a file given with
	// --settings: the CLI merges it with the user and project settings
	// (hooks of both run).
	Settings any
	// Env adds to (or overrides) the hermetic environment: WARP_URL,
	// GYRUM_HOME, PATH, ...; an empty value removes a variable.
	Env map[string]string
	// Args are more command-line arguments.
	Args []string
	// Wrap, when not empty, is a command the CLI is run under: the
	// process started is Wrap[0] with Wrap[1:], then the claude binary
	// and its arguments (`gyrum start-work T -- claude -p ...`). Session.Pid
	// is then the wrapper's pid; ClaudePid finds the CLI below it.
	Wrap []string
}

// Session is one run of the real CLI, started by Start. Everything it
// spawned is killed at the end of the test.
type Session struct {
	t testing.TB
	// Cmd is the started command; Cmd.Process.Pid is the claude process.
	Cmd *exec.Cmd
	// Home is $HOME, ConfigDir $CLAUDE_CONFIG_DIR (Home/.claude) and
	// TmpDir $CLAUDE_CODE_TMPDIR of the run.
	Home, ConfigDir, TmpDir string
	// Started is when the process was started.
	Started time.Time
	// Env is the environment the CLI was started with.
	Env []string

	model      *FakeModel
	bin        string
	tag        string
	stdoutPath string
	stderrPath string
	done       chan struct{}
	code       int
	ended      time.Time
	killOnce   sync.Once
}

// tagVar marks every process of a session in its environment, so the
// cleanup finds what the CLI spawned even after it was re-parented.
const tagVar = "CLAUDETEST_SESSION"

// Start runs `claude -p PROMPT --output-format stream-json --verbose` in
// o.Dir against model, in a hermetic environment: HOME and
// CLAUDE_CONFIG_DIR in a temporary directory, ANTHROPIC_BASE_URL the
// fake, a dummy ANTHROPIC_API_KEY, telemetry, auto-update and
// nonessential traffic off, CLAUDE_CODE_TMPDIR private, and nothing else
// inherited but PATH, LANG and USER/LOGNAME. The CLI needs no onboarding
// state, trust answer or key approval in -p mode. It runs in its own
// process group. On failure the test log gets its stdout, stderr and the
// fake's request summary.
func Start(t testing.TB, model *FakeModel, o Options) *Session {
	t.Helper()
	bin := o.Binary
	if bin == "" {
		bin = Require(t)
	}
	if o.Dir == "" {
		t.Fatal("claudetest.Start: Options.Dir is required")
	}
	if o.Prompt == "" {
		o.Prompt = "Do the task."
	}
	root := t.TempDir()
	s := &Session{t: t, model: model, Home: filepath.Join(root, "home"), done: make(chan struct{}),
		tag: randomAlnum(16), stdoutPath: filepath.Join(root, "stdout.jsonl"), stderrPath: filepath.Join(root, "stderr.txt")}
	s.ConfigDir = filepath.Join(s.Home, ".claude")
	if err := os.MkdirAll(s.ConfigDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A short private directory: the CLI puts its messaging socket in
	// it, and socket paths are limited to about 100 bytes.
	tmp, err := os.MkdirTemp("", "cct-")
	if err != nil {
		t.Fatal(err)
	}
	s.TmpDir = tmp

	args := []string{"-p", o.Prompt, "--output-format", "stream-json", "--verbose"}
	env := map[string]string{
		"HOME":                                     s.Home,
		"CLAUDE_CONFIG_DIR":                        s.ConfigDir,
		"CLAUDE_CODE_TMPDIR":                       s.TmpDir,
		"ANTHROPIC_BASE_URL":                       model.URL(),
		"ANTHROPIC_API_KEY":                        "sk-ant-claudetest-dummy",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"LANG": "C.UTF-8",
		tagVar: s.tag,
	}
	for _, k := range []string{"PATH", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	if o.PermissionMode == "" {
		args = append(args, "--dangerously-skip-permissions")
		env["IS_SANDBOX"] = "1"
	} else {
		args = append(args, "--permission-mode", o.PermissionMode)
	}
	if o.Settings != nil {
		data, err := json.MarshalIndent(o.Settings, "", "  ")
		if err != nil {
			t.Fatalf("claudetest.Start: settings: %v", err)
		}
		p := filepath.Join(root, "settings.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--settings", p)
	}
	args = append(args, o.Args...)
	for k, v := range o.Env {
		env[k] = v
	}
	for k, v := range env {
		if v != "" {
			s.Env = append(s.Env, k+"="+v)
		}
	}
	sort.Strings(s.Env)

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
	// Files, not pipes: Wait returns when claude exits even if something
	// it spawned still holds the descriptors.
	cmd := exec.Command(bin, args...)
	if len(o.Wrap) > 0 {
		cmd = exec.Command(o.Wrap[0], append(append(append([]string(nil), o.Wrap[1:]...), bin), args...)...)
	}
	s.bin = bin
	cmd.Dir, cmd.Env = o.Dir, s.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.Cmd = cmd
	s.Started = time.Now()
	err = cmd.Start()
	stdout.Close()
	stderr.Close()
	devnull.Close()
	if err != nil {
		os.RemoveAll(s.TmpDir)
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
		os.RemoveAll(s.TmpDir)
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

// Pid is the pid of the process started: the claude process (the native
// binary itself: the npm "claude" symlink points at bin/claude.exe, no
// wrapper process), or the wrapper of Options.Wrap.
func (s *Session) Pid() int { return s.Cmd.Process.Pid }

// ClaudePid returns the pid of the claude process: Pid, or with
// Options.Wrap the descendant of the wrapper that runs the claude binary
// (0 while there is none).
func (s *Session) ClaudePid() int {
	// The binary is argv[0], or argv[1] of an interpreter running it (a
	// script standing in for the CLI).
	runs := func(p Proc) bool {
		return (len(p.Args) > 0 && p.Args[0] == s.bin) || (len(p.Args) > 1 && p.Args[1] == s.bin)
	}
	if p, ok := Lookup(s.Pid()); ok && runs(p) {
		return s.Pid()
	}
	procs, err := Processes()
	if err != nil {
		return 0
	}
	for _, p := range Descendants(procs, s.Pid()) {
		if runs(p) {
			return p.PID
		}
	}
	return 0
}

// Done is closed when the claude process has exited.
func (s *Session) Done() <-chan struct{} { return s.done }

// Exited reports whether the claude process has exited.
func (s *Session) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Ended waits for the process to exit and returns when its exit was
// observed.
func (s *Session) Ended() time.Time {
	<-s.done
	return s.ended
}

// Wait waits up to timeout for the claude process to exit and returns its
// exit code (128+N when signal N killed it). On timeout it fails the test
// (the cleanup kills the session).
func (s *Session) Wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(timeout):
		s.t.Fatalf("claude (pid %d) still running after %v; process tree:\n%s", s.Pid(), timeout, s.TreeString())
		return -1
	}
}

// WaitOK is Wait that also fails the test on a non-zero exit code.
func (s *Session) WaitOK(timeout time.Duration) {
	s.t.Helper()
	if code := s.Wait(timeout); code != 0 {
		s.t.Fatalf("claude exited %d\nstderr:\n%s", code, s.Stderr())
	}
}

// Kill sends SIGKILL to the claude process group and to every process
// the session spawned (found by its environment tag on Linux, and by
// ancestry while claude runs), then reaps claude. It is idempotent and
// runs at the end of every test.
func (s *Session) Kill() {
	s.killOnce.Do(func() {
		pid := s.Pid()
		victims := map[int]bool{}
		if !s.Exited() {
			if procs, err := Processes(); err == nil {
				for _, p := range Descendants(procs, pid) {
					victims[p.PID] = true
				}
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		for range 5 {
			for _, p := range tagged(tagVar + "=" + s.tag) {
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
			s.t.Errorf("claude (pid %d) not reaped 10 s after SIGKILL", pid)
		}
	})
}

// Leftovers returns the pids of live processes that carry the session's
// environment tag (Linux only): what the CLI spawned and is still running.
func (s *Session) Leftovers() []int {
	var out []int
	for _, pid := range tagged(tagVar + "=" + s.tag) {
		if p, ok := procStat(pid); ok && p.PID != s.Pid() {
			out = append(out, pid)
		}
	}
	return out
}

// Stdout returns what the CLI printed on stdout so far (stream-json lines).
func (s *Session) Stdout() string {
	data, _ := os.ReadFile(s.stdoutPath)
	return string(data)
}

// Stderr returns what the CLI printed on stderr so far.
func (s *Session) Stderr() string {
	data, _ := os.ReadFile(s.stderrPath)
	return string(data)
}

// Event is one line of the CLI's stream-json output.
type Event map[string]any

// Type is the event's "type" ("system", "assistant", "user", "result").
func (e Event) Type() string { s, _ := e["type"].(string); return s }

// Subtype is the event's "subtype" ("init", "hook_response", "task_notification", ...).
func (e Event) Subtype() string { s, _ := e["subtype"].(string); return s }

// Events parses the stream-json output so far; lines that do not parse
// (a line still being written) are skipped.
func (s *Session) Events() []Event {
	var out []Event
	sc := bufio.NewScanner(strings.NewReader(s.Stdout()))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// Results returns the "result" events: one per finished model turn (a
// background job's wake-up adds another).
func (s *Session) Results() []Event {
	var out []Event
	for _, e := range s.Events() {
		if e.Type() == "result" {
			out = append(out, e)
		}
	}
	return out
}

// Descendants returns the processes below the claude process now.
func (s *Session) Descendants() []Proc {
	procs, err := Processes()
	if err != nil {
		s.t.Logf("process table: %v", err)
		return nil
	}
	return Descendants(procs, s.Pid())
}

// TreeString formats the claude process and its descendants now.
func (s *Session) TreeString() string {
	procs, err := Processes()
	if err != nil {
		return err.Error()
	}
	return Tree(procs, s.Pid())
}

// logOutput puts the run's output and the fake's requests in the test log.
func (s *Session) logOutput() {
	tail := func(x string) string {
		const max = 16 << 10
		if len(x) > max {
			return "...\n" + x[len(x)-max:]
		}
		return x
	}
	s.t.Logf("claude pid %d exit %d\n--- stdout (stream-json):\n%s\n--- stderr:\n%s\n--- requests:\n%s",
		s.Pid(), s.code, tail(s.Stdout()), tail(s.Stderr()), s.model.Summary())
}

// WriteFile writes data to path (creating parent directories) or fails the test.
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
