package geminitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/claudetest"
)

// Version is the Gemini CLI version these tests are written against
// (.ci/install-gemini installs it).
const Version = "0.61.0"

// EnvBinary names the variable that points the tests at a gemini binary.
const EnvBinary = "GYRUM_TEST_GEMINI"

// cacheBinary is where .ci/install-gemini installs the CLI, relative to
// the module root.
var cacheBinary = filepath.Join(".cache", "gemini-cli", "node_modules", ".bin", "gemini")

// Find returns the gemini binary to test: $GYRUM_TEST_GEMINI; else
// <module root>/.cache/gemini-cli/node_modules/.bin/gemini (what
// .ci/install-gemini installs); else gemini on PATH. The error says what
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
	if p, err := exec.LookPath("gemini"); err == nil {
		return p, nil
	}
	tried = append(tried, "gemini on PATH")
	return "", fmt.Errorf("no Gemini CLI: %s is unset and there is no %s (run .ci/install-gemini)",
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

// Require returns the gemini binary (Find). When there is none it skips
// the test with the reason, unless the CI variable is set: then the test
// fails. It warns when the binary is not Version.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the real Gemini CLI is missing: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	versionOnce.Do(func() {
		cmd := exec.Command(p, "--version")
		cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
		out, err := cmd.Output()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		versionOut = strings.TrimSpace(lines[len(lines)-1])
		if err != nil {
			versionOut = fmt.Sprintf("unknown (--version: %v)", err)
		}
	})
	if versionOut != Version {
		t.Logf("warning: %s is Gemini CLI %s; these tests were measured on %s", p, versionOut, Version)
	}
	return p
}

// Options configure one run of the CLI.
type Options struct {
	// Binary is the gemini binary; empty means Require(t).
	Binary string
	// Dir is the working directory: the project. Required.
	Dir string
	// Prompt is the prompt given with -p; empty means "Do the task.".
	Prompt string
	// Untrusted leaves Dir out of trustedFolders.json. By default the
	// session trusts Dir as a user does at the CLI's trust prompt
	// (Trust); -p refuses to run in an untrusted folder.
	Untrusted bool
	// Settings, when not nil, is merged into the user settings
	// (~/.gemini/settings.json) at the top level: "hooks", say.
	Settings map[string]any
	// NoRelaunch sets GEMINI_CLI_NO_RELAUNCH=true: the launcher runs the
	// CLI itself instead of relaunching it in a node child.
	NoRelaunch bool
	// Env adds to (or overrides) the hermetic environment; an empty value
	// removes a variable.
	Env map[string]string
	// Args are more command-line arguments (after -p PROMPT --yolo).
	Args []string
	// Wrap, when not empty, is a command the CLI is run under: the
	// process started is Wrap[0] with Wrap[1:], then the gemini binary
	// and its arguments (`gyrum start-work T -- gemini -p ...`). Pid is
	// then the wrapper's pid.
	Wrap []string
}

// Session is one run of the real CLI, started by Start. Everything it
// spawned is killed at the end of the test.
type Session struct {
	t testing.TB
	// Cmd is the started command: the node launcher.
	Cmd *exec.Cmd
	// Home is $HOME; GeminiDir is Home/.gemini.
	Home, GeminiDir string
	// Started is when the process was started.
	Started time.Time

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
// cleanup finds what the CLI spawned after it was re-parented (the shell
// tool runs commands in process groups of their own).
const tagVar = "GEMINITEST_SESSION"

// Start runs `gemini -p PROMPT --yolo` in o.Dir against model, in a
// hermetic environment: HOME in a temporary directory whose
// .gemini/settings.json selects API-key auth (gemini-api-key: with only
// GOOGLE_GEMINI_BASE_URL the CLI picks "gateway" auth, which -p refuses)
// and turns usage statistics off, GOOGLE_GEMINI_BASE_URL the fake, a
// dummy GEMINI_API_KEY, and nothing else inherited but PATH, LANG and
// USER/LOGNAME. It runs in its own process group. On failure the test log
// gets its stdout, stderr and the fake's request summary.
func Start(t testing.TB, model *FakeModel, o Options) *Session {
	t.Helper()
	bin := o.Binary
	if bin == "" {
		bin = Require(t)
	}
	if o.Dir == "" {
		t.Fatal("geminitest.Start: Options.Dir is required")
	}
	if o.Prompt == "" {
		o.Prompt = "Do the task."
	}
	root := t.TempDir()
	s := &Session{t: t, model: model, bin: bin, Home: filepath.Join(root, "home"), done: make(chan struct{}),
		tag: randomAlnum(16), stdoutPath: filepath.Join(root, "stdout.txt"), stderrPath: filepath.Join(root, "stderr.txt")}
	s.GeminiDir = filepath.Join(s.Home, ".gemini")
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
	}
	for k, v := range o.Settings {
		settings[k] = v
	}
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	claudetest.WriteFile(t, filepath.Join(s.GeminiDir, "settings.json"), data, 0o600)
	if !o.Untrusted {
		s.Trust(o.Dir)
	}

	env := map[string]string{
		"HOME":                   s.Home,
		"GOOGLE_GEMINI_BASE_URL": model.URL(),
		"GEMINI_API_KEY":         "geminitest-dummy-key",
		"LANG":                   "C.UTF-8",
		"NO_COLOR":               "1",
		tagVar:                   s.tag,
	}
	for _, k := range []string{"PATH", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	if o.NoRelaunch {
		env["GEMINI_CLI_NO_RELAUNCH"] = "true"
	}
	for k, v := range o.Env {
		env[k] = v
	}
	var environ []string
	for k, v := range env {
		if v != "" {
			environ = append(environ, k+"="+v)
		}
	}
	sort.Strings(environ)

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
	args := append([]string{"-p", o.Prompt, "--yolo"}, o.Args...)
	cmd := exec.Command(bin, args...)
	if len(o.Wrap) > 0 {
		cmd = exec.Command(o.Wrap[0], append(append(append([]string(nil), o.Wrap[1:]...), bin), args...)...)
	}
	cmd.Dir, cmd.Env = o.Dir, environ
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.Cmd = cmd
	s.Started = time.Now()
	err = cmd.Start()
	stdout.Close()
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

// Trust records dir in ~/.gemini/trustedFolders.json as the CLI's folder
// trust prompt does when the user picks "Trust folder": the real path
// mapped to "TRUST_FOLDER", written 0600. Project-scope settings (the
// hooks gyrum setup writes in .gemini/settings.json) count only in a
// trusted folder, and -p refuses to run in an untrusted one.
func (s *Session) Trust(dir string) {
	s.t.Helper()
	TrustFolder(s.t, s.GeminiDir, dir)
}

// TrustFolder adds dir to geminiDir/trustedFolders.json (see Session.Trust).
func TrustFolder(t testing.TB, geminiDir, dir string) {
	t.Helper()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	p := filepath.Join(geminiDir, "trustedFolders.json")
	folders := map[string]string{}
	if data, err := os.ReadFile(p); err == nil {
		if err := json.Unmarshal(data, &folders); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	folders[dir] = "TRUST_FOLDER"
	data, err := json.MarshalIndent(folders, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	claudetest.WriteFile(t, p, data, 0o600)
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

// Pid is the pid of the process started: the node launcher, or the
// wrapper of Options.Wrap.
func (s *Session) Pid() int { return s.Cmd.Process.Pid }

// AgentPid returns the pid of the process that runs the session: the node
// child the launcher relaunched (`node --max-old-space-size=N <binary>
// ...`, GEMINI_CLI_NO_RELAUNCH=true in its environment), a process running
// the binary whose parent runs it too. 0 while there is none (not yet, or
// Options.NoRelaunch: then the launcher runs the session).
func (s *Session) AgentPid() int {
	procs, err := claudetest.Processes()
	if err != nil {
		return 0
	}
	runs := map[int]bool{}
	var cands []claudetest.Proc
	if p, ok := claudetest.Lookup(s.Pid()); ok {
		cands = append(cands, p)
	}
	for _, p := range append(cands, claudetest.Descendants(procs, s.Pid())...) {
		if slices.Contains(p.Args, s.bin) {
			if runs[p.PPID] {
				return p.PID
			}
			runs[p.PID] = true
		}
	}
	return 0
}

// Done is closed when the launcher has exited.
func (s *Session) Done() <-chan struct{} { return s.done }

// Exited reports whether the launcher has exited.
func (s *Session) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Ended waits for the launcher to exit and returns when its exit was seen.
func (s *Session) Ended() time.Time {
	<-s.done
	return s.ended
}

// Wait waits up to timeout for the launcher to exit and returns its exit
// code; on timeout it fails the test.
func (s *Session) Wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(timeout):
		s.t.Fatalf("gemini (pid %d) still running after %v; process tree:\n%s", s.Pid(), timeout, s.TreeString())
		return -1
	}
}

// WaitOK is Wait that also fails the test on a non-zero exit code.
func (s *Session) WaitOK(timeout time.Duration) {
	s.t.Helper()
	if code := s.Wait(timeout); code != 0 {
		s.t.Fatalf("gemini exited %d\nstderr:\n%s", code, s.Stderr())
	}
}

// Kill sends SIGKILL to the session's process group and to every process
// it spawned (found by its environment tag, and by ancestry while the
// launcher runs), then reaps the launcher. It is idempotent and runs at
// the end of every test.
func (s *Session) Kill() {
	s.killOnce.Do(func() {
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
			s.t.Errorf("gemini (pid %d) not reaped 10 s after SIGKILL", pid)
		}
	})
}

// KillAgent sends SIGKILL to the relaunched agent child alone (a crash of
// the CLI); the launcher then exits with it.
func (s *Session) KillAgent() {
	if pid := s.AgentPid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Leftovers returns the pids of live processes that carry the session's
// environment tag, the launcher left out.
func (s *Session) Leftovers() []int {
	var out []int
	for _, pid := range tagged(tagVar + "=" + s.tag) {
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

// Stderr returns what the CLI printed on stderr so far.
func (s *Session) Stderr() string {
	data, _ := os.ReadFile(s.stderrPath)
	return string(data)
}

// TreeString formats the launcher and its descendants now.
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
	s.t.Logf("gemini pid %d exit %d\n--- stdout:\n%s\n--- stderr:\n%s\n--- requests:\n%s",
		s.Pid(), s.code, tail(s.Stdout()), tail(s.Stderr()), s.model.Summary())
}

// tagged returns the pids of live processes whose environment holds kv
// (Linux /proc; nothing elsewhere).
func tagged(kv string) []int {
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
