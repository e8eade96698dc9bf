// Package e2etest holds what the end-to-end suites against real agent CLIs
// (internal/e2e/claudecode, codex, gemini, ...) share: the gyrum binary
// they test and running it (setup, start-work's JSON, an agent's
// environment), scaled warp policies and the real sweep, a watcher of a
// ticket's verdicts, the heartbeats a ticket got and their story for a
// failure's log, the waits on events, and the scenarios every agent runs
// alike (Matrix: issue 42's matrix; Progress: issue 44's). The agent CLI
// and the fake model are internal/testsupport/agenttest's; each suite
// keeps only what its agent makes different (its agenttest.Agent, its
// tool calls).
package e2etest

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

	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// SessionTimeout and EventTimeout bound waits on events (a request, a
// file, a state): only a broken run reaches them, so they leave a loaded
// machine all the room it needs.
const (
	SessionTimeout = 2 * time.Minute
	EventTimeout   = time.Minute
)

// Poll waits up to EventTimeout for cond.
func Poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	agenttest.Poll(t, EventTimeout, what, cond)
}

// ScaledPolicy is warp's default policy with a lease window and the
// stalled, silent and startup-grace thresholds of a scaled test.
func ScaledPolicy(window, stall, silent, grace time.Duration) warp.Policy {
	p := warp.DefaultPolicy()
	p.LeaseWindow, p.StallAfter, p.SilentAfter, p.StartupGrace = window, stall, silent, grace
	return p
}

// SweepEvery is the sweep interval of StartSweeps.
const SweepEvery = 50 * time.Millisecond

// StartSweeps runs the real expiry job (sweeps and the verdict pass) on
// svc every SweepEvery until Close or the end of the test.
func StartSweeps(t testing.TB, svc *warp.Service) *expiry.Job {
	t.Helper()
	j, err := expiry.New(svc, expiry.Config{Interval: SweepEvery, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// BeatsOf returns the answered heartbeats of ticket.
func BeatsOf(ws *warptest.Server, ticket string) []warptest.Beat {
	var out []warptest.Beat
	for _, b := range ws.Answered() {
		if b.Body.Ticket == ticket {
			out = append(out, b)
		}
	}
	return out
}

// ParentExitedAt waits for the loop of ticket to report parent-exited
// (when, if not "", says after what) and returns when that report came.
func ParentExitedAt(t testing.TB, ws *warptest.Server, ticket, when string) time.Time {
	t.Helper()
	var at time.Time
	Poll(t, strings.TrimSpace("the loop's parent-exited report "+when), func() bool {
		for _, b := range BeatsOf(ws, ticket) {
			if b.Body.Exit == string(heartbeat.ExitParentExited) {
				at = b.At
				return true
			}
		}
		return false
	})
	return at
}

// DescribeBeats formats heartbeats relative to t0, one a line, for logs.
func DescribeBeats(bs []warptest.Beat, t0 time.Time) string {
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

// LogLoopOnFailure puts the heartbeat.log of d in the test log if the
// test fails.
func LogLoopOnFailure(t testing.TB, d gyrumdir.Dir) {
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(d.File(gyrumdir.LogFile))
			t.Logf("%s:\n%s", d.File(gyrumdir.LogFile), data)
		}
	})
}

// HookEvents returns how many hook runs d's hook-events counted.
func HookEvents(d gyrumdir.Dir) int64 { return FileSize(d.File(gyrumdir.HookEventsFile)) }

// FileSize returns the size of path (0 when missing).
func FileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// Mtime returns the modification time of path (zero when missing).
func Mtime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// Exists reports whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Secs is f seconds.
func Secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// Alive reports whether pid runs (a zombie does not); Linux /proc.
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// Sample is the state of a ticket at one instant, as the server derives it.
type Sample struct {
	At      time.Time
	Verdict warp.Verdict
	Lease   warp.Lease
}

// Watcher samples a ticket's verdict and lease every 20 ms.
type Watcher struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	got  []Sample
}

// WatchTicket samples ticket until the end of the test (or Stop).
func WatchTicket(t testing.TB, ws *warptest.Server, ticket string) *Watcher {
	w := &Watcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			if v, err := ws.Svc.Ticket(context.Background(), ticket); err == nil && v.Lease != nil {
				w.mu.Lock()
				w.got = append(w.got, Sample{At: time.Now(), Verdict: v.Verdict, Lease: *v.Lease})
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
func (w *Watcher) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// Samples returns the samples so far.
func (w *Watcher) Samples() []Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Sample(nil), w.got...)
}

// verdicts returns the verdicts of the held samples keep accepts, without
// repeats.
func (w *Watcher) verdicts(keep func(Sample) bool) []warp.Verdict {
	var out []warp.Verdict
	for _, s := range w.Samples() {
		if !s.Lease.Held() || !keep(s) {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != s.Verdict {
			out = append(out, s.Verdict)
		}
	}
	return out
}

// Verdicts returns the verdicts the ticket went through while its lease
// was held, without repeats.
func (w *Watcher) Verdicts() []warp.Verdict { return w.verdicts(func(Sample) bool { return true }) }

// VerdictsUntil is Verdicts of the samples taken up to at.
func (w *Watcher) VerdictsUntil(at time.Time) []warp.Verdict {
	return w.verdicts(func(s Sample) bool { return !s.At.After(at) })
}

// VerdictsHooked is Verdicts from the first sample in which the loop had
// reported the agent's hook (hook_seen): before it, unwired is the truth
// when the claim is older than the scaled stall threshold, which a loaded
// machine can make the first hook miss. Empty when the hook was never
// reported.
func (w *Watcher) VerdictsHooked() []warp.Verdict {
	hooked := false
	return w.verdicts(func(s Sample) bool {
		hooked = hooked || s.Lease.HookSeen == warp.HookYes
		return hooked
	})
}

// gyrumBin is the gyrum binary Main built.
var gyrumBin string

// Main is a suite's TestMain: it builds gyrum, with gyrum-hook beside it,
// when find finds the agent's CLI (or CI is set: the tests then fail
// without it), into *bin unless bin is nil, runs the tests and removes
// the build. Without the CLI the tests skip, and nothing is built.
func Main(m *testing.M, find func() (string, error), bin *string) int {
	if _, err := find(); err != nil && os.Getenv("CI") == "" {
		return m.Run()
	}
	b, remove, err := warptest.BuildGyrum()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	gyrumBin = b
	if bin != nil {
		*bin = b
	}
	return m.Run()
}

// Gyrum runs the gyrum binary Main built in dir with env (plus PATH) and
// returns its stdout; a non-zero exit fails the test.
func Gyrum(t testing.TB, dir string, env map[string]string, args ...string) string {
	t.Helper()
	out, code, stderr := GyrumCode(t, dir, env, args...)
	if code != 0 {
		t.Fatalf("gyrum %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, stderr)
	}
	return out
}

// GyrumCode runs the gyrum binary like Gyrum but returns its stdout, exit
// code and stderr instead of failing on a non-zero exit.
func GyrumCode(t testing.TB, dir string, env map[string]string, args ...string) (string, int, string) {
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

// SetupHooks wires gyrum's hook into project with the real `gyrum setup
// --project PROJECT --watchdog none ARGS...`, as a user does, in a HOME of
// its own, which it returns. It fails the test unless the agent's settings
// file (settings, relative to project) then runs the gyrum-hook beside the
// gyrum under test, as a release ships it, for each of events.
func SetupHooks(t testing.TB, project, settings string, events []string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	Gyrum(t, project, map[string]string{"HOME": home, "GYRUM_HOME": filepath.Join(home, ".gyrum")},
		append([]string{"setup", "--project", project, "--watchdog", "none"}, args...)...)
	data, err := os.ReadFile(filepath.Join(project, settings))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if !strings.Contains(string(data), ev) || !strings.Contains(string(data), filepath.Join(filepath.Dir(gyrumBin), "gyrum-hook")) {
			t.Fatalf("gyrum setup did not wire gyrum-hook for %s:\n%s", ev, data)
		}
	}
	return home
}

// AgentEnv is the session environment of a gyrum agent: the warp at
// warpURL, a private GYRUM_HOME and scaled loop timings in seconds.
func AgentEnv(t testing.TB, warpURL string, interval, staleness, inFlightMax float64) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return map[string]string{
		"WARP_URL":                          warpURL,
		"GYRUM_HOME":                        t.TempDir(),
		"HEARTBEAT_INTERVAL_SECS":           f(interval),
		"HEARTBEAT_ACTIVITY_STALENESS_SECS": f(staleness),
		"HEARTBEAT_INFLIGHT_MAX_SECS":       f(inFlightMax),
	}
}

// ReadFile returns the contents of path ("" when it cannot be read).
func ReadFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// NewProject returns a fresh git repository with one commit: the project
// the CLI works in.
func NewProject(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(dir, "README.md"), []byte("# test project\n"), 0o644)
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

// StartResult is the part of `gyrum start-work --json` the tests read, as
// a script reads it (its own type, so a renamed field fails here).
type StartResult struct {
	Ticket     string `json:"ticket"`
	Epoch      int64  `json:"epoch"`
	Dir        string `json:"dir"`
	LoopPID    int    `json:"loop_pid"`
	WatchedPID int    `json:"watched_pid"`
	Watched    string `json:"watched"`
	WatchedHow string `json:"watched_how"`
}

// ParseStart parses the JSON `gyrum start-work --json` printed in out
// (anything before the object, such as a warning on stderr or an agent's
// header, is skipped).
func ParseStart(t testing.TB, out string) StartResult {
	t.Helper()
	var sr StartResult
	i := strings.Index(out, "{")
	if i < 0 {
		t.Fatalf("start-work printed no JSON: %q", out)
	}
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&sr); err != nil || sr.Ticket == "" {
		t.Fatalf("start-work output %q: %v", out, err)
	}
	return sr
}

// StartResultOf parses what start-work printed as the model was shown it
// in the result of call.
func StartResultOf(t testing.TB, model *agenttest.FakeModel, call agenttest.Call) StartResult {
	t.Helper()
	tr, ok := model.ToolResult(call.ID)
	if !ok {
		t.Fatalf("no result of %s %v:\n%s", call.Name, call.Args, model.Summary())
	}
	return ParseStart(t, tr.Content)
}

// WaitStart waits for the result of the claim call and parses it.
func WaitStart(t testing.TB, model *agenttest.FakeModel, call agenttest.Call) StartResult {
	t.Helper()
	model.WaitRequests(SessionTimeout, "the claim's result", func([]agenttest.Request) bool {
		_, ok := model.ToolResult(call.ID)
		return ok
	})
	return StartResultOf(t, model, call)
}

// VerdictsBetween is Verdicts of the samples taken from from to to.
func (w *Watcher) VerdictsBetween(from, to time.Time) []warp.Verdict {
	return w.verdicts(func(s Sample) bool { return !s.At.Before(from) && !s.At.After(to) })
}

// SkipIfLapsedBefore skips the test when ticket's lease had lapsed before
// at, the start of what the test judges: on the scaled times of these
// tests (a staleness of a second or so), an agent that a loaded machine
// slows to think longer than staleness + window between its calls is idle,
// and its lease lapses, truthfully. The machine was then too loaded to
// judge what comes after, and the test says so, as warpsim does.
func SkipIfLapsedBefore(t testing.TB, ws *warptest.Server, ticket string, at time.Time) {
	t.Helper()
	l := ws.Lease(ticket)
	if l.State == warp.LeaseLapsed && l.EndedAt.Before(at) {
		t.Skipf("machine too loaded to judge: the lease of %s lapsed (%s) %v after its claim, before what the test judges began (%v after the claim)",
			ticket, l.EndReason, l.EndedAt.Sub(l.ClaimedAt).Round(time.Millisecond), at.Sub(l.ClaimedAt).Round(time.Millisecond))
	}
}
