package copilot_test

import "testing"

// The whole agent side under the real GitHub Copilot CLI (matrix points
// 1 and 5): hooks wired by `gyrum setup --agents copilot` in the user's
// ~/.copilot/hooks/gyrum.json, the agent claims its ticket from inside a
// shell call, works (a held call) and ends.
//
// Copilot's npm launcher (node, npm-loader.js) runs the native copilot
// (kernel name MainThread) as its child, which runs the session, its
// tools and its hooks. start-work watches the native process (the nearest
// agent above its shell, not the launcher); PreToolUse (Copilot's
// PascalCase event, Claude Code's payload) leaves a marker named by the
// call's input, as Copilot sends no call id, while the call runs and the
// loop reports it in flight; PostToolUse removes it and records the
// activity; the verdict is active throughout, and when the session ends
// the loop reports parent-exited within a tick — never before — and
// leaves nothing behind.
func TestBaseline(t *testing.T) { matrix.Baseline(t) }
