package pi_test

// The matrix of issue 42 for pi: e2etest.Matrix drives the real
// CLI against the scripted fake chat completions API, with the real gyrum
// binary (the hook gyrum setup wires, the detached loop start-work spawns)
// and a real warp on scaled timings (tick 0.2 s).
//
// The timings are opencode's; pi thinks for less than a second between
// calls.

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// plugin runs pi with gyrum's extension, which `gyrum setup --agents pi`
// writes into ~/.pi/agent/extensions/.
var plugin = &e2etest.Plugin{
	Name:  "pi",
	Agent: pi,
	Dir:   func(h agenttest.Home) string { return h.Config },
	FailingRead: func(path string) agenttest.Call {
		return agenttest.Tool("read", map[string]any{"path": path})
	},
	FailureText: "ENOENT",
}

var matrix = &e2etest.Matrix{
	Name:           "pi",
	Agent:          pi,
	NewModel:       agenttest.NewChat,
	Start:          plugin.Start,
	Shell:          Shell,
	ShellTool:      "bash",
	WatchedHow:     "ancestor",
	Marker:         e2etest.MarkerCallID,
	ReliableOutput: true,
	Staleness:      1,
	Window:         1500 * time.Millisecond,
	Stall:          time.Second,
	Plugin:         plugin,
	Step:           e2etest.StepTiming{Staleness: 3, Window: 3 * time.Second, Quiet: 7},
}

func TestForegroundStepHeld(t *testing.T)     { matrix.ForegroundStepHeld(t) }
func TestWedgeLapses(t *testing.T)            { matrix.WedgeLapses(t) }
func TestOperatorReleaseTold(t *testing.T)    { matrix.OperatorReleaseTold(t) }
func TestWorktreeWithCdCredited(t *testing.T) { matrix.WorktreeWithCdCredited(t) }
func TestSetupDoctorUninstall(t *testing.T)   { matrix.PluginSetupDoctorUninstall(t) }

// A failed read ends in tool_result all the same, with isError: the
// extension runs the hook with PostToolUseFailure.
func TestFailingToolCall(t *testing.T) { matrix.FailingToolCall(t) }
