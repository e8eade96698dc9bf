package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gyrum-labs/warp/internal/dashboard"
)

// chromiumPath is Debian's Chromium. Without it the browser test skips —
// except in CI (CI=true), where a missing browser is a failure.
const chromiumPath = "/usr/bin/chromium"

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// browser starts a headless Chromium with a fresh profile and returns a
// tab's context. Cleanup closes the browser and checks its processes are gone.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if inCI() {
			t.Fatalf("chromium is required in CI: %v (apt-get install -y chromium)", err)
		}
		t.Skipf("chromium not found at %s (apt-get install -y chromium); skipping the browser test", chromiumPath)
	}
	profile := filepath.Join(t.TempDir(), "chromium-profile")
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(cctx)
		ccancel()
		cancel()
		cancelAlloc() // kills what is left and waits for the process
		if pids := processesWith(profile); len(pids) > 0 {
			t.Errorf("chromium processes left running after the test: %v", pids)
		}
	})
	return ctx
}

// processesWith returns the pids whose command line mentions s.
func processesWith(s string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// shotsDir is where a browser test's screenshots go, each path logged
// (t.Logf) so a reviewer finds them: $WARP_TEST_SHOTS when set (CI keeps
// it as an artifact; $WARP_ARTIFACTS_DIR is read too), else
// $TMPDIR/warp-shots/TEST, emptied at the test's start: it outlives the
// test (a test's temp dir is gone when its log is read) and holds one
// run's pictures, not every run's.
func shotsDir(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"WARP_TEST_SHOTS", "WARP_ARTIFACTS_DIR"} {
		if d := os.Getenv(v); d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatalf("screenshots dir: %v", err)
			}
			return d
		}
	}
	d := filepath.Join(os.TempDir(), "warp-shots", strings.ReplaceAll(t.Name(), "/", "-"))
	if err := os.RemoveAll(d); err != nil {
		t.Fatalf("screenshots dir: %v", err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatalf("screenshots dir: %v", err)
	}
	t.Logf("screenshots kept in %s (set WARP_TEST_SHOTS to choose the directory)", d)
	return d
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("save screenshot: %v", err)
	}
	t.Logf("screenshot: %s", path)
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

// poll waits (in the page, up to 10 s) until the JavaScript expression is true.
func poll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func TestBrowserDashboard(t *testing.T) {
	const secret = "browser-admin-token"
	s := startServer(t, withToken(secret), withDashboard(dashboard.Config{Refresh: time.Second, SummaryTTL: -1}))
	fleet(t, s)
	ctx := browser(t)
	shots := shotsDir(t)

	var dialogs atomic.Int32
	events := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			dialogs.Add(1)
			t.Logf("dialog opened: %q", ev.Message)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()

	// Sign in: the dashboard sends the browser to the form, a wrong token
	// shows the error on the page, the admin token opens the dashboard.
	do(t, ctx, "open the dashboard", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	if loc := eval[string](t, ctx, `location.pathname + location.search`); loc != "/signin?next=%2F" {
		t.Errorf("without a session: at %s, want /signin?next=%%2F", loc)
	}
	do(t, ctx, "submit a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
		chromedp.Click(chromedp.CSS("#signin-submit")), chromedp.WaitVisible(chromedp.CSS("#signin-error")))
	if got := text(t, ctx, "#signin-error"); !strings.Contains(got, "unknown token") {
		t.Errorf("wrong token: the page says %q, want it to say unknown token", got)
	}
	screenshot(t, ctx, shots, "signin-wrong-token.png")
	do(t, ctx, "sign in", chromedp.SendKeys(chromedp.CSS("#token"), secret),
		chromedp.Click(chromedp.CSS("#signin-submit")), chromedp.WaitVisible(chromedp.CSS("#t-X")))
	if loc := eval[string](t, ctx, `location.pathname + location.search`); loc != "/" {
		t.Errorf("after sign-in: at %s, want /", loc)
	}
	if c := eval[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("a script can read cookies %q: the session cookie must be HttpOnly", c)
	}
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#t-X")))
	for id, want := range map[string]string{"A": "active", "B": "stalled", "C": "silent", "D": "exited", "X": "active"} {
		if got := text(t, ctx, "#t-"+id+" .badge"); got != want {
			t.Errorf("badge of %s: got %q, want %q", id, got, want)
		}
	}
	if got := text(t, ctx, "#t-X td.title"); got != xssTitle {
		t.Errorf("script title: shown as %q, want the literal text %q", got, xssTitle)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('main script').length`); n != 0 {
		t.Errorf("%d script elements inside <main>", n)
	}
	poll(t, ctx, "the event stream", `window.warpLive && window.warpLive.connected`)
	if got := text(t, ctx, "#live"); got != "live" {
		t.Errorf("live indicator: got %q, want live", got)
	}
	screenshot(t, ctx, shots, "dashboard.png")

	// A heartbeat arrives: B's agent is back. The page changes without a
	// reload: the marker set before survives.
	do(t, ctx, "set the marker", chromedp.Evaluate[chromedp.Void](`window.__warpMarker = 'kept'`))
	before := eval[string](t, ctx, `document.querySelector('#t-B [data-field="activity"]').dataset.age`)
	s.clk.Advance(2 * time.Second)
	s.heartbeat2(t, "B", 1, "h-B", 0, "")
	poll(t, ctx, "B's badge to turn active", `document.querySelector('#t-B .badge').textContent === 'active'`)
	poll(t, ctx, "the counts to follow", `document.getElementById('count-stalled').textContent === '0' && document.getElementById('count-active').textContent === '3'`)
	if after := eval[string](t, ctx, `document.querySelector('#t-B [data-field="activity"]').dataset.age`); after == before {
		t.Errorf("B's activity time did not change: %s", after)
	}
	if m := eval[string](t, ctx, `String(window.__warpMarker)`); m != "kept" {
		t.Errorf("marker after the update: got %q, want kept (the page reloaded)", m)
	}
	if n := eval[int](t, ctx, `window.warpLive.updates`); n < 1 {
		t.Errorf("script saw %d updates, want at least 1", n)
	}
	screenshot(t, ctx, shots, "dashboard-after-heartbeat.png")

	// The ticket page shows B's timeline, and the verdict pass adds to it live.
	do(t, ctx, "open ticket B", chromedp.Navigate(s.url+"/tickets/B"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	kinds := eval[[]string](t, ctx, `[...document.querySelectorAll('#timeline li')].map(li => li.dataset.kind)`)
	if got := strings.Join(kinds, ","); got != "created,claimed,first-v2-heartbeat,verdict-changed" {
		t.Errorf("timeline of B: got %s", got)
	}
	do(t, ctx, "set the marker", chromedp.Evaluate[chromedp.Void](`window.__warpMarker = 'ticket'`))
	poll(t, ctx, "the stream on the ticket page", `window.warpLive && window.warpLive.connected`)
	s.Sweep(t) // records B stalled → active
	poll(t, ctx, "the comeback in the timeline", `document.querySelectorAll('#timeline li[data-kind="verdict-changed"]').length === 2`)
	last := eval[string](t, ctx, `[...document.querySelectorAll('#timeline li[data-kind="verdict-changed"] .detail')].pop().textContent.trim()`)
	if got := last; !strings.HasPrefix(got, "stalled → active") {
		t.Errorf("last verdict change: got %q, want stalled → active", got)
	}
	if m := eval[string](t, ctx, `String(window.__warpMarker)`); m != "ticket" {
		t.Errorf("ticket page reloaded: marker %q", m)
	}
	screenshot(t, ctx, shots, "ticket.png")

	do(t, ctx, "open the script ticket", chromedp.Navigate(s.url+"/tickets/X"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	if got := text(t, ctx, "h1 .title"); got != xssTitle {
		t.Errorf("ticket page title: got %q, want %q", got, xssTitle)
	}

	do(t, ctx, "open the hosts page", chromedp.Navigate(s.url+"/hosts"), chromedp.WaitVisible(chromedp.CSS("#hosts")))
	if got := text(t, ctx, "#v2-hosts") + "/" + text(t, ctx, "#host-count"); got != "4/4" {
		t.Errorf("hosts: got %s v2, want 4/4", got)
	}
	screenshot(t, ctx, shots, "hosts.png")

	// Without JavaScript the page refreshes itself (<noscript> meta refresh).
	noJS, cancelNoJS := chromedp.NewContext(ctx)
	defer cancelNoJS()
	if _, err := chromedp.Call(noJS, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("disable scripts: %v", err)
	}
	do(t, noJS, "open the dashboard without JS", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#t-C")))
	if got := text(t, noJS, "#t-C .badge"); got != "silent" {
		t.Fatalf("C without JS: got %q, want silent", got)
	}
	s.heartbeat2(t, "C", 1, "h-C", 0, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The meta refresh reloads the page: a query that lands in the
		// middle of the reload finds no node and is simply asked again.
		qctx, cancelQ := context.WithTimeout(noJS, time.Second)
		got, err := chromedp.Run(qctx, chromedp.Text(chromedp.CSS("#t-C .badge")))
		cancelQ()
		if err == nil && strings.TrimSpace(got) == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page without JS did not refresh to show C active within 10 s (last: %q, %v)", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := text(t, noJS, "#live"); got != "static" {
		t.Errorf("live indicator without JS: got %q, want static", got)
	}

	// Sign out: back to the form, and the dashboard asks for it again.
	do(t, ctx, "sign out", chromedp.Navigate(s.url+"/hosts"), chromedp.WaitVisible(chromedp.CSS("#signout")),
		chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	if loc := eval[string](t, ctx, `location.pathname`); loc != "/signin" {
		t.Errorf("after sign-out: at %s, want /signin", loc)
	}
	do(t, ctx, "open the dashboard signed out", chromedp.Navigate(s.url+"/hosts"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	screenshot(t, ctx, shots, "signed-out.png")

	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened, want none", n)
	}
}
