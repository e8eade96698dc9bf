package codex_test

import (
	"os"
	"path/filepath"
	"strings"
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
	os.Exit(e2etest.Main(m, codex.Find, &gyrumBin))
}

// wireCodex wires gyrum's hooks into the Codex of home with the real
// `gyrum setup --agents codex` (CODEX_HOME/hooks.json), then trusts them
// as a user does at Codex's startup review (TrustHooks). It
// returns the hooks Codex lists.
func wireCodex(t *testing.T, home agenttest.Home, project string, extra ...string) []HookEntry {
	t.Helper()
	env := map[string]string{"HOME": home.Dir, "CODEX_HOME": home.Config, "GYRUM_HOME": filepath.Join(home.Dir, ".gyrum")}
	e2etest.Gyrum(t, project, env, append([]string{"setup", "--agents", "codex", "--watchdog", "none"}, extra...)...)
	bin := codex.Require(t)
	before := ListHooks(t, bin, home, project)
	var gyrumHooks int
	for _, h := range before {
		if strings.Contains(h.Command, "gyrum-hook") || strings.Contains(h.Command, "touch-activity") {
			gyrumHooks++
			if h.TrustStatus != "untrusted" {
				t.Errorf("before trust, codex lists gyrum's hook %s as %s, want untrusted (setup must not trust it)", h.Key, h.TrustStatus)
			}
		}
	}
	if gyrumHooks != 2 {
		t.Fatalf("codex lists %d gyrum hooks after setup, want 2 (PreToolUse, PostToolUse): %v", gyrumHooks, before)
	}
	return TrustHooks(t, bin, home, project)
}

// claimCall is a shell call running `gyrum start-work ARGS` (gyrum by its
// absolute path: Codex's login shell resets PATH).
func claimCall(args string) agenttest.Call {
	return Shell(shellquote.Quote(gyrumBin) + " start-work " + args)
}

// stepBeatsFresh checks a quiet foreground step held from its PreToolUse
// (pre) to its PostToolUse (post): every heartbeat from one staleness limit
// into it is fresh and reports Bash in flight, one a tick. Its last ticks
// are left out: the step's process may have ended before Codex ran the
// PostToolUse hook (slow under load), and a tick in between sees the
// call's start only.
func stepBeatsFresh(t *testing.T, ws *warptest.Server, ticket string, pre, post time.Time, staleness, interval float64) {
	t.Helper()
	inFlight := 0
	for _, b := range e2etest.BeatsOf(ws, ticket) {
		if b.At.Before(pre.Add(e2etest.Secs(staleness+interval))) || b.At.After(post.Add(-e2etest.Secs(2*interval))) {
			continue
		}
		if b.Body.Stale || b.Body.InFlight != "Bash" {
			t.Errorf("heartbeat %v into the step: stale %v in_flight %q, want fresh and Bash", b.At.Sub(pre).Round(time.Millisecond), b.Body.Stale, b.Body.InFlight)
		}
		inFlight++
	}
	if inFlight < 5 {
		t.Errorf("%d heartbeats during the step, want one a tick:\n%s", inFlight, e2etest.DescribeBeats(e2etest.BeatsOf(ws, ticket), pre))
	}
}
