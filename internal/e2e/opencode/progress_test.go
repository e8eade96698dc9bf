package opencode_test

// Issue 44 under the real opencode (e2etest.OpencodeProgress).

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
)

var progress = e2etest.OpencodeProgress(plugin, Shell)

func TestLoopingCaughtAndTold(t *testing.T) { progress.LoopingCaughtAndTold(t) }
func TestPollingIsNotLooping(t *testing.T)  { progress.PollingIsNotLooping(t) }
func TestProgressIsNotLooping(t *testing.T) { progress.ProgressIsNotLooping(t) }
