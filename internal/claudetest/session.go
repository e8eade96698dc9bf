package claudetest

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agenttest"
)

// Version is the Claude Code version these tests are written against
// (.ci/install-claude installs it).
const Version = "2.1.328"

// EnvBinary names the variable that points the tests at a claude binary.
const EnvBinary = "GYRUM_TEST_CLAUDE"

// cli is the Claude Code CLI the tests drive.
var cli = &agenttest.CLI{
	Title:     "Claude Code",
	Binary:    "claude",
	Version:   Version,
	EnvBinary: EnvBinary,
	Cache:     ".cache/claude-code/node_modules/.bin/claude",
	Install:   ".ci/install-claude",
	// `claude --version` prints "2.1.328 (Claude Code)".
	VersionOf: func(out string) string {
		f := strings.Fields(out)
		if len(f) == 0 {
			return ""
		}
		return f[0]
	},
}

// Find returns the claude binary to test: $GYRUM_TEST_CLAUDE; else
// <module root>/.cache/claude-code/node_modules/.bin/claude (what .ci/install-claude installs); else
// claude on PATH. The error says what was tried.
func Find() (string, error) { return cli.Find() }

// Require returns the claude binary (Find). When there is none it
// skips the test with the reason, unless the CI variable is set: then the
// test fails. It warns when the binary is not Version.
func Require(t testing.TB) string {
	t.Helper()
	return cli.Require(t)
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
	// Run is the started command (agenttest.Run); Pid is the claude
	// process, or the wrapper of Options.Wrap.
	*agenttest.Run
	t testing.TB
	// Home is $HOME, ConfigDir $CLAUDE_CONFIG_DIR (Home/.claude) and
	// TmpDir $CLAUDE_CODE_TMPDIR of the run.
	Home, ConfigDir, TmpDir string

	model *FakeModel
	bin   string
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
	s := &Session{t: t, model: model, bin: bin, Home: filepath.Join(root, "home")}
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
	tmpDir := s.TmpDir
	s.Run = agenttest.StartRun(t, agenttest.RunOptions{Name: "claude", Bin: bin, Args: args, Wrap: o.Wrap, Dir: o.Dir, Env: env,
		TagVar: tagVar, StdoutLabel: "stdout (stream-json)", Summary: model.Summary, Cleanup: func() { os.RemoveAll(tmpDir) }})
	return s
}

// ClaudePid returns the pid of the claude process: Pid, or with
// Options.Wrap the descendant of the wrapper that runs the claude binary
// (0 while there is none).
func (s *Session) ClaudePid() int {
	// The binary is argv[0], or argv[1] of an interpreter running it (a
	// script standing in for the CLI).
	runs := func(p agenttest.Proc) bool {
		return (len(p.Args) > 0 && p.Args[0] == s.bin) || (len(p.Args) > 1 && p.Args[1] == s.bin)
	}
	if p, ok := agenttest.Lookup(s.Pid()); ok && runs(p) {
		return s.Pid()
	}
	procs, err := agenttest.Processes()
	if err != nil {
		return 0
	}
	for _, p := range agenttest.Descendants(procs, s.Pid()) {
		if runs(p) {
			return p.PID
		}
	}
	return 0
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
