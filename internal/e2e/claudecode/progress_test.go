package claudecode_test

// Issue 44 with the real Claude Code: activity is not progress. A true
// loop is caught and the model told once; work that looks alike but
// progresses is never looping (the false positives the issue names).
// e2etest.Progress runs the scenarios; Claude Code shows a hook's words
// after the call's result (the PostToolUse or PostToolUseFailure hook's
// additional context), and gyrum reads its transcript, so the hung-call
// rule decides a call whose process is gone.

import (
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var progress = &e2etest.Progress{
	Agent:    claude,
	NewModel: agenttest.NewAnthropic,
	Start: func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
		setupHooks(t, project)
		return start(t, model, project, o).Session
	},
	Claim:        claimCall,
	Shell:        func(command string) agenttest.Call { return Bash(command) },
	ShellTool:    "Bash",
	Read:         Read,
	Write:        Write,
	Marker:       e2etest.MarkerCallID,
	Loop:         e2etest.LoopTold{Fails: 6, At: 3},
	ToldIn:       func(tr agenttest.ToolResult) string { return strings.Join(tr.After, "\n") },
	HungCallRule: true,
}

// The same failing command 6 times: looping, and the model told once,
// right after the third failure (the same call failing with the same
// error 3 times), in the PostToolUseFailure hook's additional context.
func TestPointLoopingCaughtAndTold(t *testing.T) { progress.LoopingCaughtAndTold(t) }

// Polling whose output changes each time (gh pr checks-style), reads of
// different files, edit-then-test cycles with different edits (the test
// failing alike each time), in one session: never looping, never told.
func TestPointProgressIsNotLooping(t *testing.T) { progress.PollingAndProgressAreNotLooping(t) }

func TestPointExplorationIsNotSpinning(t *testing.T) { progress.ExplorationIsNotSpinning(t) }
func TestPointSpinningCaughtAndTold(t *testing.T)    { progress.SpinningCaughtAndTold(t) }
func TestPointLongBuildIsNeverHung(t *testing.T)     { progress.LongBuildIsNeverHung(t) }

// The transcript keeps the frozen CLI's call open (a tool_use without its
// tool_result): the hung-call rule, scaled to 0.5 s, lets it count only
// its start.
func TestPointHungCallGoesStale(t *testing.T) { progress.HungCallGoesStale(t) }
