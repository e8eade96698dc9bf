package gemini_test

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

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/geminitest"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, geminitest.Find, &gyrumBin))
}

// gyrum runs the gyrum binary in dir with env (plus PATH) and returns its
// stdout; a non-zero exit fails the test.
func gyrum(t *testing.T, dir string, env map[string]string, args ...string) string {
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
	if errors.As(err, &ee) || err != nil {
		t.Fatalf("gyrum %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
	}
	return string(out)
}

// setupHooks wires gyrum's hook into project/.gemini/settings.json with
// the real `gyrum setup --agents gemini`, as a user does. The folder trust
// the hooks also need is the user's to give (geminitest trusts the project
// as the CLI's trust prompt does), never setup's.
func setupHooks(t *testing.T, project string) {
	t.Helper()
	home := t.TempDir()
	gyrum(t, project, map[string]string{"HOME": home, "GYRUM_HOME": filepath.Join(home, ".gyrum")},
		"setup", "--project", project, "--agents", "gemini", "--watchdog", "none")
	data, err := os.ReadFile(filepath.Join(project, ".gemini", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"BeforeTool", "AfterTool"} {
		if !strings.Contains(string(data), ev) || !strings.Contains(string(data), filepath.Join(filepath.Dir(gyrumBin), "gyrum-hook")) {
			t.Fatalf("gyrum setup did not wire gyrum-hook for %s:\n%s", ev, data)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".gemini", "trustedFolders.json")); err == nil {
		t.Error("gyrum setup wrote Gemini CLI's folder trust")
	}
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

// claimCall is a shell call running `gyrum start-work ARGS`.
func claimCall(args string) geminitest.Call {
	return geminitest.Shell(shellquote.Quote(gyrumBin) + " start-work " + args)
}

// startResultOf parses the JSON `gyrum start-work --json` printed, as the
// model was shown it in the result of call.
func startResultOf(t *testing.T, model *geminitest.FakeModel, call geminitest.Call) e2etest.StartResult {
	t.Helper()
	res, _, ok := model.Result(call)
	if !ok {
		t.Fatalf("no result for %v:\n%s", call.Args["command"], model.Summary())
	}
	out := res.Output()
	var sr e2etest.StartResult
	i := strings.Index(out, "{")
	if i < 0 {
		t.Fatalf("start-work printed no JSON: %q", out)
	}
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&sr); err != nil || sr.Ticket == "" {
		t.Fatalf("start-work output %q: %v", out, err)
	}
	return sr
}

// waitStart waits for the result of the claim call and parses it.
func waitStart(t *testing.T, model *geminitest.FakeModel, call geminitest.Call) e2etest.StartResult {
	t.Helper()
	model.WaitRequests(e2etest.SessionTimeout, "the claim's result", func([]geminitest.Request) bool {
		_, _, ok := model.Result(call)
		return ok
	})
	return startResultOf(t, model, call)
}

// start runs the CLI in project against model with env.
func start(t *testing.T, model *geminitest.FakeModel, project string, o geminitest.Options) *geminitest.Session {
	t.Helper()
	o.Dir = project
	return geminitest.Start(t, model, o)
}

// parentExitedAt waits for the loop of ticket to report parent-exited and
// returns when that report came.
func parentExitedAt(t *testing.T, ws *warptest.Server, ticket string) time.Time {
	t.Helper()
	return e2etest.ParentExitedAt(t, ws, ticket, "")
}
