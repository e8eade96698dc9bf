package codex_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/codextest"
	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, codextest.Find, &gyrumBin))
}

// wireCodex wires gyrum's hooks into the Codex of home with the real
// `gyrum setup --agents codex` (CODEX_HOME/hooks.json), then trusts them
// as a user does at Codex's startup review (codextest.TrustHooks). It
// returns the hooks Codex lists.
func wireCodex(t *testing.T, home codextest.Home, project string, extra ...string) []codextest.HookEntry {
	t.Helper()
	env := map[string]string{"HOME": home.Home, "CODEX_HOME": home.CodexHome, "GYRUM_HOME": filepath.Join(home.Home, ".gyrum")}
	gyrum(t, project, env, append([]string{"setup", "--agents", "codex", "--watchdog", "none"}, extra...)...)
	bin := codextest.Require(t)
	before := codextest.ListHooks(t, bin, home, project)
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
	return codextest.TrustHooks(t, bin, home, project)
}

// gyrum runs the gyrum binary in dir with env (plus PATH) and returns its
// stdout; a non-zero exit fails the test.
func gyrum(t *testing.T, dir string, env map[string]string, args ...string) string {
	t.Helper()
	out, code, stderr := gyrumCode(t, dir, env, args...)
	if code != 0 {
		t.Fatalf("gyrum %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, stderr)
	}
	return out
}

// gyrumCode runs the gyrum binary and returns stdout, exit code and stderr.
func gyrumCode(t *testing.T, dir string, env map[string]string, args ...string) (string, int, string) {
	t.Helper()
	cmd := exec.Command(gyrumBin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0, stderr.String()
	case errors.As(err, &ee):
		return string(out), ee.ExitCode(), stderr.String()
	}
	t.Fatalf("gyrum %v: %v\nstderr: %s", args, err, stderr.String())
	return "", -1, ""
}

// agentEnv is the session environment of a gyrum agent: the warp at
// warpURL, a private GYRUM_HOME and scaled loop timings in seconds.
func agentEnv(t *testing.T, warpURL string, interval, staleness, inFlightMax float64) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return map[string]string{
		"WARP_URL":                          warpURL,
		"GYRUM_HOME":                        t.TempDir(),
		"HEARTBEAT_INTERVAL_SECS":           f(interval),
		"HEARTBEAT_ACTIVITY_STALENESS_SECS": f(staleness),
		"HEARTBEAT_INFLIGHT_MAX_SECS":       f(inFlightMax),
	}
}

// claimCall is a shell call running `gyrum start-work ARGS` (gyrum by its
// absolute path: Codex's login shell resets PATH).
func claimCall(args string) codextest.Call {
	return codextest.Shell(shellquote.Quote(gyrumBin) + " start-work " + args)
}

// startResultOf parses the JSON start-work printed, as the model was shown
// it in the output of call (Codex's header comes first).
func startResultOf(t *testing.T, model *codextest.FakeModel, call codextest.Call) e2etest.StartResult {
	t.Helper()
	out, ok := model.Output(call.ID)
	if !ok {
		t.Fatalf("no output for %v", call.Args["cmd"])
	}
	var sr e2etest.StartResult
	i := strings.Index(out.Text, "{")
	if i < 0 {
		t.Fatalf("start-work printed no JSON: %q", out.Text)
	}
	if err := json.NewDecoder(strings.NewReader(out.Text[i:])).Decode(&sr); err != nil || sr.Ticket == "" {
		t.Fatalf("start-work output %q: %v", out.Text, err)
	}
	return sr
}

func readFile(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
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
