package copilot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, copilot.Find, &gyrumBin))
}

// setupHooks wires gyrum's hook into the user's Copilot hooks with the
// real `gyrum setup --agents copilot` (no --project: a repository's hooks
// run only in a folder the user trusted, the user's without), in a fresh
// HOME that the session then runs in. It returns that home.
func setupHooks(t *testing.T) agenttest.Home {
	t.Helper()
	h := copilot.NewHome(t)
	e2etest.Gyrum(t, h.Dir, map[string]string{"HOME": h.Dir, "GYRUM_HOME": filepath.Join(h.Dir, ".gyrum")},
		"setup", "--watchdog", "none", "--agents", "copilot")
	data := e2etest.ReadFile(filepath.Join(h.Config, "hooks", "gyrum.json"))
	for _, ev := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"} {
		if !strings.Contains(data, `"`+ev+`"`) || !strings.Contains(data, filepath.Join(filepath.Dir(gyrumBin), "gyrum-hook")+" --agent copilot") {
			t.Fatalf("gyrum setup did not wire gyrum-hook --agent copilot for %s:\n%s", ev, data)
		}
	}
	return h
}

// claimCall is a shell call running `gyrum start-work ARGS`.
func claimCall(args string) agenttest.Call { return matrix.ClaimCall(args) }
