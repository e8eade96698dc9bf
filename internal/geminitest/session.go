package geminitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/claudetest"

	"github.com/gyrum-labs/warp/internal/agenttest"
)

// Version is the Gemini CLI version these tests are written against
// (.ci/install-gemini installs it).
const Version = "0.61.0"

// EnvBinary names the variable that points the tests at a gemini binary.
const EnvBinary = "GYRUM_TEST_GEMINI"

// cli is the Gemini CLI CLI the tests drive.
var cli = &agenttest.CLI{
	Title:      "Gemini CLI",
	Binary:     "gemini",
	Version:    Version,
	EnvBinary:  EnvBinary,
	Cache:      ".cache/gemini-cli/node_modules/.bin/gemini",
	Install:    ".ci/install-gemini",
	VersionEnv: []string{"HOME=" + os.TempDir()},
}

// Find returns the gemini binary to test: $GYRUM_TEST_GEMINI; else
// <module root>/.cache/gemini-cli/node_modules/.bin/gemini (what .ci/install-gemini installs); else
// gemini on PATH. The error says what was tried.
func Find() (string, error) { return cli.Find() }

// Require returns the gemini binary (Find). When there is none it
// skips the test with the reason, unless the CI variable is set: then the
// test fails. It warns when the binary is not Version.
func Require(t testing.TB) string {
	t.Helper()
	return cli.Require(t)
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
	// Run is the started command (agenttest.Run): the node launcher, or
	// the wrapper of Options.Wrap.
	*agenttest.Run
	t testing.TB
	// Home is $HOME; GeminiDir is Home/.gemini.
	Home, GeminiDir string

	model *FakeModel
	bin   string
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
	s := &Session{t: t, model: model, bin: bin, Home: filepath.Join(root, "home")}
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
	s.Run = agenttest.StartRun(t, agenttest.RunOptions{Name: "gemini", Bin: bin, Args: append([]string{"-p", o.Prompt, "--yolo"}, o.Args...),
		Wrap: o.Wrap, Dir: o.Dir, Env: env, TagVar: tagVar, Summary: model.Summary})
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

// AgentPid returns the pid of the process that runs the session: the node
// child the launcher relaunched (`node --max-old-space-size=N <binary>
// ...`, GEMINI_CLI_NO_RELAUNCH=true in its environment), a process running
// the binary whose parent runs it too. 0 while there is none (not yet, or
// Options.NoRelaunch: then the launcher runs the session).
func (s *Session) AgentPid() int {
	procs, err := agenttest.Processes()
	if err != nil {
		return 0
	}
	runs := map[int]bool{}
	var cands []agenttest.Proc
	if p, ok := agenttest.Lookup(s.Pid()); ok {
		cands = append(cands, p)
	}
	for _, p := range append(cands, agenttest.Descendants(procs, s.Pid())...) {
		if slices.Contains(p.Args, s.bin) {
			if runs[p.PPID] {
				return p.PID
			}
			runs[p.PID] = true
		}
	}
	return 0
}

// KillAgent sends SIGKILL to the relaunched agent child alone (a crash of
// the CLI); the launcher then exits with it.
func (s *Session) KillAgent() {
	if pid := s.AgentPid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
