package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/claudetest"
	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/geminitest"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	// Build gyrum only when the tests can run: without a CLI they skip.
	if _, err := geminitest.Find(); err != nil && os.Getenv("CI") == "" {
		os.Exit(m.Run())
	}
	bin, remove, err := warptest.BuildGyrum()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gyrumBin = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

// sessionTimeout and eventTimeout bound waits on events (a request, a
// file, a state): only a broken run reaches them, so they leave a loaded
// machine all the room it needs.
const (
	sessionTimeout = 2 * time.Minute
	eventTimeout   = time.Minute
)

// startResult is the part of `gyrum start-work --json` the tests read.
type startResult struct {
	Ticket     string `json:"ticket"`
	Epoch      int64  `json:"epoch"`
	Dir        string `json:"dir"`
	LoopPID    int    `json:"loop_pid"`
	WatchedPID int    `json:"watched_pid"`
	Watched    string `json:"watched"`
	WatchedHow string `json:"watched_how"`
}

// newProject returns a fresh git repository with one commit.
func newProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	claudetest.WriteFile(t, filepath.Join(dir, "README.md"), []byte("# test project\n"), 0o644)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
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
func startResultOf(t *testing.T, model *geminitest.FakeModel, call geminitest.Call) startResult {
	t.Helper()
	res, _, ok := model.Result(call)
	if !ok {
		t.Fatalf("no result for %v:\n%s", call.Args["command"], model.Summary())
	}
	out := res.Output()
	var sr startResult
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
func waitStart(t *testing.T, model *geminitest.FakeModel, call geminitest.Call) startResult {
	t.Helper()
	model.WaitRequests(sessionTimeout, "the claim's result", func([]geminitest.Request) bool {
		_, _, ok := model.Result(call)
		return ok
	})
	return startResultOf(t, model, call)
}

// scaledPolicy is a warp policy with short thresholds.
func scaledPolicy(window, stall, silent, grace time.Duration) warp.Policy {
	p := warp.DefaultPolicy()
	p.LeaseWindow, p.StallAfter, p.SilentAfter, p.StartupGrace = window, stall, silent, grace
	return p
}

// sweepEvery is the sweep interval of startSweeps.
const sweepEvery = 50 * time.Millisecond

// startSweeps runs the real expiry job on svc every sweepEvery until the
// end of the test.
func startSweeps(t *testing.T, svc *warp.Service) {
	t.Helper()
	j, err := expiry.New(svc, expiry.Config{Interval: sweepEvery, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
}

// poll waits up to eventTimeout for cond.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	claudetest.Poll(t, eventTimeout, what, cond)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func beatsOf(ws *warptest.Server, ticket string) []warptest.Beat {
	var out []warptest.Beat
	for _, b := range ws.Answered() {
		if b.Body.Ticket == ticket {
			out = append(out, b)
		}
	}
	return out
}

// parentExitedAt waits for the loop of ticket to report parent-exited and
// returns when that report came.
func parentExitedAt(t *testing.T, ws *warptest.Server, ticket string) time.Time {
	t.Helper()
	var at time.Time
	poll(t, "the loop's parent-exited report", func() bool {
		for _, b := range beatsOf(ws, ticket) {
			if b.Body.Exit == string(heartbeat.ExitParentExited) {
				at = b.At
				return true
			}
		}
		return false
	})
	return at
}

// describeBeats formats heartbeats relative to t0, one a line.
func describeBeats(bs []warptest.Beat, t0 time.Time) string {
	var b strings.Builder
	for _, x := range bs {
		age := -1.0
		if x.Body.ActivityAgeS != nil {
			age = *x.Body.ActivityAgeS
		}
		fmt.Fprintf(&b, "%+.3fs %s status=%d stale=%v age=%.3f in_flight=%q exit=%q hook_events=%d\n", x.At.Sub(t0).Seconds(),
			x.Body.Ticket, x.Status, x.Body.Stale, age, x.Body.InFlight, x.Body.Exit, x.Body.HookEvents)
	}
	return b.String()
}

// logLoopOnFailure puts d's heartbeat.log in the test log if the test fails.
func logLoopOnFailure(t *testing.T, d gyrumdir.Dir) {
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(d.File(gyrumdir.LogFile))
			t.Logf("%s:\n%s", d.File(gyrumdir.LogFile), data)
		}
	})
}

// hookEvents returns how many hook runs d's hook-events counted.
func hookEvents(d gyrumdir.Dir) int64 {
	st, err := os.Stat(d.File(gyrumdir.HookEventsFile))
	if err != nil {
		return 0
	}
	return st.Size()
}

// sample is the state of a ticket at one instant.
type sample struct {
	At      time.Time
	Verdict warp.Verdict
	Lease   warp.Lease
}

// watcher samples a ticket's verdict and lease every 20 ms.
type watcher struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	got  []sample
}

// watchTicket samples ticket until the end of the test (or Stop).
func watchTicket(t *testing.T, ws *warptest.Server, ticket string) *watcher {
	w := &watcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			if v, err := ws.Svc.Ticket(context.Background(), ticket); err == nil && v.Lease != nil {
				w.mu.Lock()
				w.got = append(w.got, sample{At: time.Now(), Verdict: v.Verdict, Lease: *v.Lease})
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.Stop)
	return w
}

// Stop ends the sampling; it is idempotent.
func (w *watcher) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// samples returns the samples so far.
func (w *watcher) samples() []sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]sample(nil), w.got...)
}

// verdicts returns the verdicts the ticket went through while its lease
// was held, without repeats.
func (w *watcher) verdicts() []warp.Verdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []warp.Verdict
	for _, s := range w.got {
		if !s.Lease.Held() {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != s.Verdict {
			out = append(out, s.Verdict)
		}
	}
	return out
}

// verdictsUntil is verdicts of the samples taken up to at.
func (w *watcher) verdictsUntil(at time.Time) []warp.Verdict {
	var out []warp.Verdict
	for _, s := range w.samples() {
		if s.At.After(at) || !s.Lease.Held() {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != s.Verdict {
			out = append(out, s.Verdict)
		}
	}
	return out
}

// verdictsHooked is verdicts from the first sample in which the loop had
// reported the agent's hook (hook_seen): before it, unwired is the truth
// when the claim is older than the scaled stall threshold, which a loaded
// machine can make the first hook miss. Empty when the hook was never
// reported.
func (w *watcher) verdictsHooked() []warp.Verdict {
	var out []warp.Verdict
	hooked := false
	for _, s := range w.samples() {
		hooked = hooked || s.Lease.HookSeen == warp.HookYes
		if !hooked || !s.Lease.Held() {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != s.Verdict {
			out = append(out, s.Verdict)
		}
	}
	return out
}

// start runs the CLI in project against model with env.
func start(t *testing.T, model *geminitest.FakeModel, project string, o geminitest.Options) *geminitest.Session {
	t.Helper()
	o.Dir = project
	return geminitest.Start(t, model, o)
}
