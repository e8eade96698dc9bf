package codex_test

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
	"github.com/gyrum-labs/warp/internal/codextest"
	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warptest"
)

// gyrumBin is the gyrum binary built once for the package's tests.
var gyrumBin string

func TestMain(m *testing.M) {
	// Build gyrum only when the tests can run: without a CLI they skip.
	if _, err := codextest.Find(); err != nil && os.Getenv("CI") == "" {
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

// newProject returns a fresh git repository with one commit.
func newProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
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

// startResultOf parses the JSON start-work printed, as the model was shown
// it in the output of call (Codex's header comes first).
func startResultOf(t *testing.T, model *codextest.FakeModel, call codextest.Call) startResult {
	t.Helper()
	out, ok := model.Output(call.ID)
	if !ok {
		t.Fatalf("no output for %v", call.Args["cmd"])
	}
	var sr startResult
	i := strings.Index(out.Text, "{")
	if i < 0 {
		t.Fatalf("start-work printed no JSON: %q", out.Text)
	}
	if err := json.NewDecoder(strings.NewReader(out.Text[i:])).Decode(&sr); err != nil || sr.Ticket == "" {
		t.Fatalf("start-work output %q: %v", out.Text, err)
	}
	return sr
}

// scaledPolicy is a warp policy with short thresholds.
func scaledPolicy(window, stall, silent, grace time.Duration) warp.Policy {
	p := warp.DefaultPolicy()
	p.LeaseWindow, p.StallAfter, p.SilentAfter, p.StartupGrace = window, stall, silent, grace
	return p
}

// sweepEvery is the sweep interval of startSweeps.
const sweepEvery = 50 * time.Millisecond

// startSweeps runs the real expiry job on svc every sweepEvery.
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

func beatsOf(ws *warptest.Server, ticket string) []warptest.Beat {
	var out []warptest.Beat
	for _, b := range ws.Answered() {
		if b.Body.Ticket == ticket {
			out = append(out, b)
		}
	}
	return out
}

// describeBeats formats heartbeats relative to t0, one a line, for logs.
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
			t.Logf("%s:\n%s", d.File(gyrumdir.LogFile), readFile(d.File(gyrumdir.LogFile)))
		}
	})
}

// sample is the state of a ticket at one instant.
type sample struct {
	At      time.Time
	Verdict warp.Verdict
	Lease   warp.Lease
}

// watcher samples a ticket's verdict and lease every 20 ms.
type watcher struct {
	stop, done chan struct{}
	mu         sync.Mutex
	got        []sample
}

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

func (w *watcher) samples() []sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]sample(nil), w.got...)
}

// verdicts returns the verdicts the ticket went through while its lease
// was held, without repeats.
func (w *watcher) verdicts() []warp.Verdict {
	var out []warp.Verdict
	for _, s := range w.samples() {
		if !s.Lease.Held() {
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

// poll waits up to eventTimeout for cond.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	claudetest.Poll(t, eventTimeout, what, cond)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
	for _, b := range beatsOf(ws, ticket) {
		if b.At.Before(pre.Add(secs(staleness+interval))) || b.At.After(post.Add(-secs(2*interval))) {
			continue
		}
		if b.Body.Stale || b.Body.InFlight != "Bash" {
			t.Errorf("heartbeat %v into the step: stale %v in_flight %q, want fresh and Bash", b.At.Sub(pre).Round(time.Millisecond), b.Body.Stale, b.Body.InFlight)
		}
		inFlight++
	}
	if inFlight < 5 {
		t.Errorf("%d heartbeats during the step, want one a tick:\n%s", inFlight, describeBeats(beatsOf(ws, ticket), pre))
	}
}

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// hookEvents returns how many hook runs d's hook-events counted.
func hookEvents(d gyrumdir.Dir) int64 {
	st, err := os.Stat(d.File(gyrumdir.HookEventsFile))
	if err != nil {
		return 0
	}
	return st.Size()
}

// alive reports whether pid runs (a zombie does not); Linux /proc.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
