package qwen_test

// The matrix of issue 42 for Qwen Code: e2etest.Matrix drives the real
// CLI against the scripted fake chat completions API, with the real gyrum
// binary (the hook gyrum setup wires, the detached loop start-work spawns)
// and a real warp on scaled timings (tick 0.2 s).
//
// Staleness 2 s and window 3 s leave room for Qwen Code's few seconds
// between a call's end and the next call's start on a loaded machine. Its
// captured output came back empty once on a loaded machine, though the
// command ran: the results are not checked for it.

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var matrix = &e2etest.Matrix{
	Name:     "qwen",
	Agent:    qwen,
	NewModel: agenttest.NewChat,
	Start: func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
		setupHooks(t, project)
		return start(t, model, project, o)
	},
	Shell:          Shell,
	ShellTool:      "run_shell_command",
	WatchedHow:     "ancestor",
	Launcher:       true,
	Marker:         e2etest.MarkerOwnID,
	ReliableOutput: false,
	Staleness:      2,
	Window:         3 * time.Second,
	Stall:          time.Second,
	Step:           e2etest.StepTiming{Staleness: 2, Window: 3 * time.Second, Quiet: 8},
}

func TestForegroundStepHeld(t *testing.T)     { matrix.ForegroundStepHeld(t) }
func TestWedgeLapses(t *testing.T)            { matrix.WedgeLapses(t) }
func TestOperatorReleaseTold(t *testing.T)    { matrix.OperatorReleaseTold(t) }
func TestWorktreeWithCdCredited(t *testing.T) { matrix.WorktreeWithCdCredited(t) }
