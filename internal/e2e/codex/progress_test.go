package codex_test

// Issue 44 under the real Codex CLI (e2etest.Progress): its shell output
// carries a header that differs on every run (chunk id, wall time), which
// the fingerprint must ignore for a true loop to be seen; output that
// changes is progress. Codex reads and edits through its shell here (the
// fake Responses API offers no apply_patch): a read is `cat FILE`, an edit
// `printf CONTENT > FILE`. It shows the model a hook's words as a
// developer message, not with the call's result.

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var progress = &e2etest.Progress{
	Agent:    codex,
	NewModel: agenttest.NewResponses,
	Start: func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
		home := codex.NewHome(t)
		wireCodex(t, home, project)
		o.Dir, o.Home = project, home
		return codex.Start(t, model, o)
	},
	Shell:     func(command string) agenttest.Call { return Shell(command) },
	ShellTool: "Bash",
	// A call that runs for seconds holds Codex's answer to the model up
	// to 30 s (its ceiling), not its default 10.
	LongShell: func(command string) agenttest.Call { return Shell(command, YieldAfter(30*time.Second)) },
	Read:      func(path string) agenttest.Call { return Shell("cat " + shellquote.Quote(path)) },
	Write: func(path, content string) agenttest.Call {
		return Shell(e2etest.WriteCommand(path, content))
	},
	Marker: e2etest.MarkerCallID,
	// Codex's PostToolUse carries the command's output alone (no exit
	// status, no failure event), so the repetition counts as the same
	// call with the same result (4), not as the same failure (3).
	Loop: e2etest.LoopTold{Fails: 6, At: 4},
}

func TestLoopingCaughtAndTold(t *testing.T)     { progress.LoopingCaughtAndTold(t) }
func TestPollingIsNotLooping(t *testing.T)      { progress.PollingIsNotLooping(t) }
func TestProgressIsNotLooping(t *testing.T)     { progress.ProgressIsNotLooping(t) }
func TestExplorationIsNotSpinning(t *testing.T) { progress.ExplorationIsNotSpinning(t) }
func TestSpinningCaughtAndTold(t *testing.T)    { progress.SpinningCaughtAndTold(t) }
func TestLongBuildIsNeverHung(t *testing.T)     { progress.LongBuildIsNeverHung(t) }

// gyrum reads no Codex transcript, so the call's state is unknown and the
// process rule decides at once (the hung-call rule, which reads Claude
// Code's transcript, plays no part).
func TestHungCallGoesStale(t *testing.T) { progress.HungCallGoesStale(t) }
