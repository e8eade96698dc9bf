package kilo_test

import "testing"

// The whole agent side under the real Kilo CLI: gyrum's plugin written by
// `gyrum setup --agents kilo`, the agent claims its ticket from inside a
// bash call, works (a held call) and ends.
//
// The npm bin is a node launcher that runs the native .kilo as its child;
// .kilo hands its own pid to its tools as KILO_PID, and start-work watches
// that process, not the launcher; the plugin's tool.execute.before runs the hook
// with a PreToolUse payload carrying the call's id, which leaves a marker
// while the call runs (the loop reports it in flight), and
// tool.execute.after runs it with PostToolUse, which removes it and
// records the activity. When the session ends the loop reports
// parent-exited within a tick and leaves nothing behind.
func TestBaseline(t *testing.T) { matrix.Baseline(t) }
