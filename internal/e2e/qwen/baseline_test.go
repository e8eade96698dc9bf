package qwen_test

import "testing"

// The whole agent side under the real Qwen Code (matrix points 1 and 5):
// hooks wired by `gyrum setup --agents qwen` in the project, the agent
// claims its ticket from inside a shell call, works (a held call) and
// ends.
//
// Qwen Code's launcher `node …/qwen` starts `node --expose-gc …/cli.js`,
// which relaunches itself once more; the innermost cli.js runs the
// session, its tools and its hooks. start-work watches it (the nearest
// agent above its shell, not the launcher, not QWEN_CODE_LAUNCHER_PID),
// PreToolUse leaves a marker named by the call's tool_use_id while the
// call runs and the loop reports it in flight, PostToolUse removes it and
// records the activity; the verdict is active throughout, and when the
// session ends the loop reports parent-exited within a tick (the exit
// report) — never before — and leaves nothing behind.
func TestBaseline(t *testing.T) { matrix.Baseline(t) }
