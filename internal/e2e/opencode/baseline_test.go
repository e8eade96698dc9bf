package opencode_test

import "testing"

// The whole agent side under the real opencode: gyrum's plugin written by
// `gyrum setup --agents opencode`, the agent claims its ticket from inside
// a bash call, works (a held call) and ends.
//
// opencode hands its pid to its tools as OPENCODE_PID, and start-work
// watches that process; the plugin's tool.execute.before runs the hook
// with a PreToolUse payload carrying the call's id, which leaves a marker
// while the call runs (the loop reports it in flight), and
// tool.execute.after runs it with PostToolUse, which removes it and
// records the activity. When the session ends the loop reports
// parent-exited within a tick and leaves nothing behind.
func TestBaseline(t *testing.T) { matrix.Baseline(t) }
