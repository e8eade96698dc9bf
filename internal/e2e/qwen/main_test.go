package qwen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, qwen.Find, &gyrumBin))
}

// setupHooks wires gyrum's hook into project/.qwen/settings.json with the
// real `gyrum setup --agents qwen`, as a user does. Qwen Code's folder
// trust is off by default: the project's hooks run without a trust step.
func setupHooks(t *testing.T, project string) {
	t.Helper()
	home := e2etest.SetupHooks(t, project, filepath.Join(".qwen", "settings.json"), []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"}, "--agents", "qwen")
	if e2etest.Exists(filepath.Join(home, ".qwen", "trustedFolders.json")) {
		t.Error("gyrum setup wrote Qwen Code's folder trust")
	}
}

// claimCall is a shell call running `gyrum start-work ARGS`.
func claimCall(args string) agenttest.Call { return matrix.ClaimCall(args) }
