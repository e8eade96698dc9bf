package gemini_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, gemini.Find, &gyrumBin))
}

// setupHooks wires gyrum's hook into project/.gemini/settings.json with
// the real `gyrum setup --agents gemini`, as a user does. The folder trust
// the hooks also need is the user's to give (the session trusts the
// project as the CLI's trust prompt does: trustFolder), never setup's.
func setupHooks(t *testing.T, project string) {
	t.Helper()
	home := e2etest.SetupHooks(t, project, filepath.Join(".gemini", "settings.json"), []string{"BeforeTool", "AfterTool"}, "--agents", "gemini")
	if e2etest.Exists(filepath.Join(home, ".gemini", "trustedFolders.json")) {
		t.Error("gyrum setup wrote Gemini CLI's folder trust")
	}
}

// claimCall is a shell call running `gyrum start-work ARGS`.
func claimCall(args string) agenttest.Call {
	return Shell(shellquote.Quote(gyrumBin) + " start-work " + args)
}

// parentExitedAt waits for the loop of ticket to report parent-exited and
// returns when that report came.
func parentExitedAt(t *testing.T, ws *warptest.Server, ticket string) time.Time {
	t.Helper()
	return e2etest.ParentExitedAt(t, ws, ticket, "")
}
