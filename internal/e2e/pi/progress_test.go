package pi_test

// Issue 44 under the real pi (e2etest.Progress): gyrum's extension hands
// the hook each call's input and, at its end, its result (the content,
// and whether pi calls it an error), and adds what the hook says to the
// result, where the model reads it.

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var progress = &e2etest.Progress{
	Agent:     pi,
	NewModel:  agenttest.NewChat,
	Start:     plugin.Start,
	Shell:     Shell,
	ShellTool: "bash",
	Read: func(path string) agenttest.Call {
		return agenttest.Tool("read", map[string]any{"path": path})
	},
	Write:          func(path, content string) agenttest.Call { return Shell(e2etest.WriteCommand(path, content)) },
	FilesInProject: true,
	Marker:         e2etest.MarkerCallID,
	// A command that exits non-zero is an error to pi: the repetition is
	// the same failure (3).
	Loop:   e2etest.LoopTold{Fails: 6, At: 3},
	ToldIn: func(tr agenttest.ToolResult) string { return tr.Content },
}

func TestLoopingCaughtAndTold(t *testing.T) { progress.LoopingCaughtAndTold(t) }
func TestPollingIsNotLooping(t *testing.T)  { progress.PollingIsNotLooping(t) }
func TestProgressIsNotLooping(t *testing.T) { progress.ProgressIsNotLooping(t) }
