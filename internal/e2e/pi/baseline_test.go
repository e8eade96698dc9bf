package pi_test

import "testing"

// The whole agent side under the real pi: gyrum's extension written by
// `gyrum setup --agents pi`, the agent claims its ticket from inside a
// bash call, works (a held call) and ends.
//
// pi hands no pid to its tools: start-work finds it above its bash as the
// nearest agent (node retitled "pi"); the extension's tool_call handler
// runs the hook with a PreToolUse payload carrying the call's id, which
// leaves a marker while the call runs (the loop reports it in flight), and
// tool_result runs it with PostToolUse, which removes it and records the
// activity. When the session ends the loop reports
// parent-exited within a tick and leaves nothing behind.
func TestBaseline(t *testing.T) { matrix.Baseline(t) }
