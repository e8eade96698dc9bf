package copilot_test

// The matrix of issue 42 for GitHub Copilot CLI: e2etest.Matrix drives the real
// CLI against the scripted fake chat completions API, with the real gyrum
// binary (the hook gyrum setup wires, the detached loop start-work spawns)
// and a real warp on scaled timings (tick 0.2 s).
//
// Staleness 2 s and window 3 s leave room for the CLI's few seconds
// between a call's end and the next call's start on a loaded machine.

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var matrix = &e2etest.Matrix{
	Name:     "copilot",
	Agent:    copilot,
	NewModel: agenttest.NewChat,
	Start: func(t *testing.T, model *agenttest.FakeModel, project string, o agenttest.Options) *agenttest.Session {
		return start(t, model, project, setupHooks(t), o)
	},
	Shell:          Shell,
	ShellTool:      "Bash",
	WatchedHow:     "ancestor",
	Launcher:       true,
	Marker:         e2etest.MarkerInput,
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
