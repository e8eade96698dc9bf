package kilo_test

// The matrix of issue 42 for Kilo CLI: e2etest.Matrix drives the real
// CLI against the scripted fake chat completions API, with the real gyrum
// binary (the hook gyrum setup wires, the detached loop start-work spawns)
// and a real warp on scaled timings (tick 0.2 s).
//
// Kilo thinks longer between calls than opencode (2 to 4 s measured here, on
// a loaded machine; it snapshots the project with git around each step):
// with staleness + window shorter than that the lease lapses while it
// thinks, truthfully, before what a test judges. Its quiet step gets a
// staleness of 4 s and a window of 8 s, and the step 14 s.

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var matrix = &e2etest.Matrix{
	Name:           "kilo",
	Agent:          kilo,
	NewModel:       agenttest.NewChat,
	Start:          plugin.Start,
	Shell:          Shell,
	ShellTool:      "bash",
	WatchedHow:     "KILO_PID",
	Launcher:       true,
	Marker:         e2etest.MarkerCallID,
	Offline:        "dependency install",
	ReliableOutput: true,
	Staleness:      3,
	Window:         6 * time.Second,
	Stall:          3 * time.Second,
	Plugin:         plugin,
	Step:           e2etest.StepTiming{Staleness: 4, Window: 8 * time.Second, Quiet: 14},
}

func TestForegroundStepHeld(t *testing.T)     { matrix.ForegroundStepHeld(t) }
func TestWedgeLapses(t *testing.T)            { matrix.WedgeLapses(t) }
func TestOperatorReleaseTold(t *testing.T)    { matrix.OperatorReleaseTold(t) }
func TestWorktreeWithCdCredited(t *testing.T) { matrix.WorktreeWithCdCredited(t) }
func TestSetupDoctorUninstall(t *testing.T)   { matrix.PluginSetupDoctorUninstall(t) }

// A failed read ends without tool.execute.after; its part turns to status
// "error" on Kilo's event bus (opencode's), where gyrum's plugin sees it.
func TestFailingToolCall(t *testing.T) { matrix.FailingToolCall(t) }
