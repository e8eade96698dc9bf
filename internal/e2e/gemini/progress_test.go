package gemini_test

// Issue 44 under the real Gemini CLI (e2etest.Progress): its shell result
// carries lines that differ on every run (the process group), which the
// fingerprint must ignore; output that changes is progress. Its file
// tools (read_file, write_file) refuse paths outside the project, its
// hooks get no call id (markers are named by the call's input), and it
// shows the model a hook's words in the call's result, HTML-escaped.

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var progress = &e2etest.Progress{
	Agent:    gemini,
	NewModel: agenttest.NewGemini,
	Start: func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
		setupHooks(t, project)
		return start(t, model, project, o)
	},
	Shell:          Shell,
	ShellTool:      "run_shell_command",
	Read:           ReadFile,
	Write:          WriteFile,
	FilesInProject: true,
	Marker:         e2etest.MarkerInput,
	// Gemini CLI's own loop detection acts at 5 identical calls; the
	// third says "Exit Code: 1": the same failure 3 times.
	Loop:   e2etest.LoopTold{Fails: 4, At: 3, Suffix: ": exit 1", HTMLEscaped: true},
	ToldIn: func(tr agenttest.ToolResult) string { return tr.Content },
}

// ReadFile is a read_file call of path (absolute), the CLI's own tool.
func ReadFile(path string) agenttest.Call {
	return agenttest.Tool("read_file", map[string]any{"file_path": path})
}

// WriteFile is a write_file call writing content to path (absolute).
func WriteFile(path, content string) agenttest.Call {
	return agenttest.Tool("write_file", map[string]any{"file_path": path, "content": content})
}

func TestLoopingCaughtAndTold(t *testing.T)     { progress.LoopingCaughtAndTold(t) }
func TestPollingIsNotLooping(t *testing.T)      { progress.PollingIsNotLooping(t) }
func TestProgressIsNotLooping(t *testing.T)     { progress.ProgressIsNotLooping(t) }
func TestExplorationIsNotSpinning(t *testing.T) { progress.ExplorationIsNotSpinning(t) }
func TestSpinningCaughtAndTold(t *testing.T)    { progress.SpinningCaughtAndTold(t) }
func TestLongBuildIsNeverHung(t *testing.T)     { progress.LongBuildIsNeverHung(t) }

// gyrum reads no Gemini CLI chat file, so the call's state is unknown and
// the process rule decides at once.
func TestHungCallGoesStale(t *testing.T) { progress.HungCallGoesStale(t) }
