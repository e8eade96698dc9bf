package opencode_test

// The matrix of issue 42 for opencode: e2etest.Matrix drives the real
// CLI against the scripted fake chat completions API, with the real gyrum
// binary (the hook gyrum setup wires, the detached loop start-work spawns)
// and a real warp on scaled timings (tick 0.2 s).
//
// opencode thinks about 2.5 s between a call's end and the next call's start
// here (it snapshots the project with git around each step), longer than
// the wedge's staleness + window: its quiet step gets 3 s + 3 s (and warp's
// stall threshold 3 s), and the step 7 s.

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var matrix = &e2etest.Matrix{
	Name:           "opencode",
	Agent:          opencode,
	NewModel:       agenttest.NewChat,
	Start:          plugin.Start,
	Shell:          Shell,
	ShellTool:      "bash",
	WatchedHow:     "OPENCODE_PID",
	Marker:         e2etest.MarkerCallID,
	Offline:        "dependency install",
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

// A failed read ends without tool.execute.after; its part turns to status
// "error" on opencode's event bus, where gyrum's plugin sees it.
func TestFailingToolCall(t *testing.T) { matrix.FailingToolCall(t) }
