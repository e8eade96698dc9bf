package codex_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// Model is the model the sessions ask for: one for which Codex 0.169.0
// offers exec_command as a top-level function (the default model nests it
// in a JavaScript "exec" tool instead).
const Model = "gpt-5.1-codex"

// codex is the Codex CLI (npm @openai/codex, pinned by .ci/install-codex)
// as the suite drives it: `codex exec --skip-git-repo-check -m Model
// PROMPT` against the fake Responses API (agenttest.NewResponses) through
// a custom model provider (providerArgs), with CODEX_HOME in the session's
// HOME and a dummy OPENAI_API_KEY, approvals and the sandbox bypassed
// (unless Options.Ask).
//
// With Options.Terminal it runs the interactive app instead (`codex -m
// Model PROMPT`, the prompt submitted at start), on a terminal of its own;
// the provider and the approvals then come from CODEX_HOME/config.toml
// (trustProject). Quit it with Kill.
var codex = &agenttest.Agent{
	CLI: agenttest.CLI{
		Title:     "Codex",
		Binary:    "codex",
		Version:   "0.169.0",
		EnvBinary: "GYRUM_TEST_CODEX",
		Cache:     ".cache/codex/node_modules/.bin/codex",
		Install:   ".ci/install-codex",
		VersionOf: agenttest.VersionField(-1), // "codex-cli 0.169.0"
	},
	ConfigDir: ".codex",
	ConfigVar: "CODEX_HOME",
	Vars:      map[string]string{"OPENAI_API_KEY": "sk-agenttest-dummy"},
	Prepare: func(t testing.TB, s *agenttest.Session, o agenttest.Options) agenttest.Launch {
		if o.Terminal {
			return agenttest.Launch{Args: append(append([]string{"-m", Model}, o.Args...), o.Prompt)}
		}
		args := append([]string{"exec", "--skip-git-repo-check", "-m", Model}, providerArgs(s.Model)...)
		if !o.Ask {
			args = append(args, "--dangerously-bypass-approvals-and-sandbox")
		}
		return agenttest.Launch{Args: append(append(args, o.Args...), o.Prompt)}
	},
	// The agent is the native codex process: the started one when the npm
	// launcher (a node script) exec'd it, else the launcher's child. Its
	// kernel name alone does not tell: the launcher script is "codex" too
	// until its #!/usr/bin/env has exec'd node.
	IsAgent: func(*agenttest.Session) func(agenttest.Proc) bool {
		return func(p agenttest.Proc) bool {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
			return err == nil && filepath.Base(exe) == "codex"
		}
	},
}

// providerArgs are the -c overrides that point codex at model: a custom
// provider "agenttest" with the Responses wire API and OPENAI_API_KEY.
func providerArgs(model *agenttest.FakeModel) []string {
	return []string{"-c", "model_provider=agenttest", "-c",
		fmt.Sprintf(`model_providers.agenttest={name="agenttest",base_url=%q,env_key="OPENAI_API_KEY",wire_api="responses"}`, model.URL()+"/v1")}
}

// ShellOption adjusts the arguments of an exec_command call.
type ShellOption func(args map[string]any)

// Workdir sets the command's working directory (exec_command "workdir").
func Workdir(dir string) ShellOption { return func(a map[string]any) { a["workdir"] = dir } }

// YieldAfter sets how long Codex waits for the command before it answers
// the model with a session id and leaves the command running
// ("yield_time_ms"; Codex's default is 10 s and its ceiling 30 s).
func YieldAfter(d time.Duration) ShellOption {
	return func(a map[string]any) { a["yield_time_ms"] = d.Milliseconds() }
}

// Shell returns an exec_command call running command (bash, in the turn's
// cwd unless Workdir says otherwise), with a fresh call id: Codex passes
// it to hooks as tool_use_id and to the tool's shell as
// CODEX_TOOL_CALL_ID. Its result is a function_call_output of Codex's
// header ("Chunk ID", "Wall time", "Process exited with code N",
// "Output:") and the command's output.
func Shell(command string, opts ...ShellOption) agenttest.Call {
	args := map[string]any{"cmd": command}
	for _, o := range opts {
		o(args)
	}
	return agenttest.Tool("exec_command", args)
}
