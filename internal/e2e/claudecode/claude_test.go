package claudecode_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// claude is the Claude Code CLI (npm @anthropic-ai/claude-code, pinned by
// .ci/install-claude) as the suite drives it: `claude -p PROMPT
// --output-format stream-json --verbose` against the fake Messages API
// (agenttest.NewAnthropic) as ANTHROPIC_BASE_URL, with a dummy
// ANTHROPIC_API_KEY, telemetry, auto-update and nonessential traffic off,
// CLAUDE_CONFIG_DIR in the session's HOME and CLAUDE_CODE_TMPDIR private.
// The CLI needs no onboarding state, trust answer or key approval in -p
// mode.
//
// Options: Ask passes --permission-mode default (which denies every call
// that needs an approval, since -p cannot ask); otherwise the session runs
// with --dangerously-skip-permissions (and IS_SANDBOX=1, which the CLI
// requires for that flag as root). Settings go to a file given with
// --settings: the CLI merges it with the user and project settings (hooks
// of both run).
var claude = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:     "Claude Code",
		Binary:    "claude",
		Version:   "2.1.328",
		EnvBinary: "GYRUM_TEST_CLAUDE",
		Cache:     ".cache/claude-code/node_modules/.bin/claude",
		Install:   ".ci/install-claude",
		VersionOf: agenttest.VersionField(0), // "2.1.328 (Claude Code)"
	},
	ConfigDir: ".claude",
	ConfigVar: "CLAUDE_CONFIG_DIR",
	Vars: map[string]string{
		"ANTHROPIC_API_KEY":                        "sk-ant-agenttest-dummy",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		t.Helper()
		// A short private directory: the CLI puts its messaging socket in
		// it, and socket paths are limited to about 100 bytes.
		tmp, err := os.MkdirTemp("", "cct-")
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"-p", o.Prompt, "--output-format", "stream-json", "--verbose"}
		env := map[string]string{"ANTHROPIC_BASE_URL": s.Model.URL(), "CLAUDE_CODE_TMPDIR": tmp}
		if o.Ask {
			args = append(args, "--permission-mode", "default")
		} else {
			args = append(args, "--dangerously-skip-permissions")
			env["IS_SANDBOX"] = "1"
		}
		if o.Settings != nil {
			data, err := json.MarshalIndent(o.Settings, "", "  ")
			if err != nil {
				t.Fatalf("claude settings: %v", err)
			}
			p := filepath.Join(t.TempDir(), "settings.json")
			agenttest.WriteFile(t, p, data, 0o600)
			args = append(args, "--settings", p)
		}
		return agenttest.Launch{Args: append(args, o.Args...), Env: env, StdoutLabel: "stdout (stream-json)",
			Cleanup: func() { os.RemoveAll(tmp) }}
	},
}

// Session is one run of the real CLI; AgentPid is the claude process (the
// started one, or below the wrapper of Options.Wrap), what it prints is
// stream-json (Events).
type Session struct{ *agenttest.Session }

// start runs the CLI in project against model.
func start(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *Session {
	t.Helper()
	o.Dir = project
	return &Session{claude.Start(t, model, o)}
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

// Tool returns a call of the tool name with input and a fresh tool_use id
// ("toolu_01...").
func Tool(name string, input map[string]any) agenttest.Call {
	if input == nil {
		input = map[string]any{}
	}
	return agenttest.Call{ID: agenttest.CallID("toolu_01"), Name: name, Args: input}
}

// BashOption adjusts the input of a Bash tool call.
type BashOption func(input map[string]any)

// Background sets run_in_background: the CLI starts the command, answers
// the call at once and wakes the conversation when the command ends.
func Background() BashOption {
	return func(in map[string]any) { in["run_in_background"] = true }
}

// Timeout sets the call's timeout (the CLI takes milliseconds; default
// 2 min, at most 10 min).
func Timeout(d time.Duration) BashOption {
	return func(in map[string]any) { in["timeout"] = d.Milliseconds() }
}

// Description sets the call's description (shown to the user, and named
// in the notification of a background command).
func Description(s string) BashOption {
	return func(in map[string]any) { in["description"] = s }
}

// Bash returns a Bash tool call running command.
func Bash(command string, opts ...BashOption) agenttest.Call {
	in := map[string]any{"command": command}
	for _, o := range opts {
		o(in)
	}
	return Tool("Bash", in)
}

// Read returns a Read tool call of the absolute path.
func Read(path string) agenttest.Call { return Tool("Read", map[string]any{"file_path": path}) }

// Write returns a Write tool call creating or replacing the absolute path.
func Write(path, content string) agenttest.Call {
	return Tool("Write", map[string]any{"file_path": path, "content": content})
}

// The MCP tools of agenttest.ServeMCP as Claude Code names them to the
// model: mcp__SERVER__TOOL.
const (
	MCPQuick = "mcp__" + agenttest.MCPServerName + "__" + agenttest.MCPQuickTool
	MCPWait  = "mcp__" + agenttest.MCPServerName + "__" + agenttest.MCPWaitTool
)

// The session's command line and environment, with a shell script standing
// in for the CLI (no real CLI needed): what the suite's findings were
// measured under.
func TestSessionArgsAndEnv(t *testing.T) {
	for _, ask := range []bool{false, true} {
		out := t.TempDir()
		bin := filepath.Join(t.TempDir(), "claude")
		agenttest.WriteFile(t, bin, []byte("#!/bin/sh\nenv > \"$OUT/env\"\nprintf '%s\\n' \"$@\" > \"$OUT/args\"\n"), 0o755)
		m := agenttest.NewAnthropic(t)
		s := start(t, m, out, agenttest.Options{Binary: bin, Prompt: "PROMPT X", Ask: ask,
			Settings: map[string]any{"hooks": map[string]any{}}, Args: []string{"--more"}, Env: map[string]string{"OUT": out}})
		s.WaitOK(10 * time.Second)
		env := map[string]string{}
		for _, line := range strings.Split(e2etest.ReadFile(filepath.Join(out, "env")), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = v
			}
		}
		for k, want := range map[string]string{
			"HOME": s.Home.Dir, "CLAUDE_CONFIG_DIR": filepath.Join(s.Home.Dir, ".claude"), "ANTHROPIC_BASE_URL": m.URL(),
			"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		} {
			if env[k] != want {
				t.Errorf("%s=%q, want %q", k, env[k], want)
			}
		}
		if tmp := env["CLAUDE_CODE_TMPDIR"]; len(tmp) > 40 || !strings.Contains(tmp, "cct-") {
			t.Errorf("CLAUDE_CODE_TMPDIR=%q, want a short private directory", tmp)
		}
		if !strings.HasPrefix(env["ANTHROPIC_API_KEY"], "sk-ant-") {
			t.Errorf("ANTHROPIC_API_KEY=%q", env["ANTHROPIC_API_KEY"])
		}
		args := strings.Split(strings.TrimSpace(e2etest.ReadFile(filepath.Join(out, "args"))), "\n")
		want := []string{"-p", "PROMPT X", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--settings"}
		sandbox := "1"
		if ask {
			want = []string{"-p", "PROMPT X", "--output-format", "stream-json", "--verbose", "--permission-mode", "default", "--settings"}
			sandbox = ""
		}
		if len(args) != len(want)+2 || strings.Join(args[:len(want)], " ") != strings.Join(want, " ") || args[len(want)+1] != "--more" {
			t.Errorf("args %q, want %q FILE --more", args, want)
		}
		if env["IS_SANDBOX"] != sandbox {
			t.Errorf("Ask %v: IS_SANDBOX=%q", ask, env["IS_SANDBOX"])
		}
	}
}
