package qwen_test

// Issue 44 under the real Qwen Code (e2etest.Progress): a fork of Gemini
// CLI, it shows the model a hook's words HTML-escaped, and stops a session
// on its own at its fifth identical call, so the loop scenario makes 4.
//
// The polling scenarios are not run here: Qwen Code's captured output
// came back empty on a loaded machine (ReliableOutput in its matrix), and
// empty output makes every poll alike.

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
)

var progress = matrix.Progress(e2etest.LoopTold{Fails: 4, At: 3, HTMLEscaped: true, Silent: true}, nil)

func TestLoopingCaughtAndTold(t *testing.T) { progress.LoopingCaughtAndTold(t) }
