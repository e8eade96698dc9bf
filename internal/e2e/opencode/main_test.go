package opencode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, opencode.Find, &gyrumBin))
}

// newHome makes the session's HOME and wires gyrum into it with the real
// `gyrum setup --agents opencode` at the user's scope, as a user does: it
// writes gyrum's plugin into ~/.config/opencode/plugins/ (and Claude Code's
// hooks, which setup always wires). It fails the test unless the plugin is
// there and runs the gyrum-hook beside the gyrum under test.
func newHome(t *testing.T) agenttest.Home {
	t.Helper()
	h := opencode.NewHome(t)
	e2etest.Gyrum(t, h.Dir, map[string]string{"HOME": h.Dir, "GYRUM_HOME": filepath.Join(h.Dir, ".gyrum")},
		"setup", "--agents", "opencode", "--watchdog", "none")
	a, _ := agent.ByFlag("opencode")
	path := filepath.Join(h.Config, "plugins", a.Hooks.File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cmd, current, _ := a.Hooks.Plugin.Command(data); !current || !strings.Contains(cmd, filepath.Join(filepath.Dir(gyrumBin), "gyrum-hook")) {
		t.Fatalf("gyrum setup did not write its plugin running gyrum-hook into %s:\n%s", path, data)
	}
	return h
}
