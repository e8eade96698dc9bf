package warpcli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/clikit/clikittest"
)

// warpRun runs the warp command tree in-process with an empty environment.
func warpRun(t *testing.T) clikittest.Run {
	return func(args ...string) (string, string, int) {
		r := runCLI(t, map[string]string{}, time.Now, args...)
		return r.stdout, r.stderr, r.code
	}
}

func TestVersion(t *testing.T) {
	clikittest.CheckVersion(t, "warp", warpRun(t))
}

func TestCompletion(t *testing.T) {
	run := warpRun(t)
	clikittest.CheckCompletion(t, "warp", run)
	// What the scripts call back: cobra's __complete, on the real tree.
	out, _, code := run("__complete", "ticket", "l")
	if code != 0 || !strings.HasPrefix(out, "list\t") {
		t.Errorf("warp __complete ticket l: exit %d, %q", code, out)
	}
	out, _, _ = run("__complete", "serve", "--lease")
	if !strings.HasPrefix(out, "--lease-window\t") {
		t.Errorf("warp __complete serve --lease: %q", out)
	}
}

func TestGenMan(t *testing.T) {
	clikittest.CheckManPages(t, "warp", warpRun(t))
}
