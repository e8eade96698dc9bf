package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// withTokenFile serves with a token file holding lines.
func withTokenFile(tb testing.TB, lines ...string) option {
	path := filepath.Join(tb.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return func(c *warpcli.ServeConfig) { c.TokenFile = path }
}

// postStatus posts body as a form to path from the page (its origin, its
// cookie) and returns the answer's status.
func postStatus(t *testing.T, ctx context.Context, path, body string) int {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch('`+path+`', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: '`+body+`'}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("post %s: %v", path, err)
	}
	return v
}

// lastEvent returns the newest event of ticket id of kind.
func lastEvent(t *testing.T, s *server, id, kind string) client.Event {
	t.Helper()
	evs, err := s.client.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i]
		}
	}
	t.Fatalf("ticket %s has no %s event: %+v", id, kind, evs)
	return client.Event{}
}

// The operator acts from the dashboard (issue 46): a signed-in admin
// releases a lease, cancels a ticket and reopens it, each behind its
// confirmation page, each recorded with the session's name; a page that
// went stale does not release the lease claimed since; a form without the
// session's form token is refused; a viewer's session shows no action and
// may take none.
func TestBrowserActions(t *testing.T) {
	const admin, viewer = "actions-admin-token", "actions-viewer-token"
	s := startServer(t, withToken(admin), withTokenFile(t, "viewer:"+viewer))
	for _, id := range []string{"R", "O", "S"} {
		s.create(t, id, "work on "+id)
	}
	s.claim(t, "R", "agent-R", "h-R")
	s.claim(t, "S", "agent-S", "h-S")
	s.clk.Advance(20 * time.Minute)
	s.heartbeat2(t, "R", 1, "h-R", 20*60, "") // alive, idle: stalled
	s.Sweep(t)
	ctx := browser(t)
	shots := shotsDir(t)

	signIn := func(token, name string) {
		t.Helper()
		do(t, ctx, "open the sign-in form", chromedp.Navigate(s.url+"/signin"), chromedp.WaitVisible(chromedp.CSS("#signin")),
			chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.SendKeys(chromedp.CSS("#name"), name),
			chromedp.Click(chromedp.CSS("#signin-submit")), chromedp.WaitVisible(chromedp.CSS("#claimed")))
	}
	signIn(admin, "jane")

	// Release R's stalled lease.
	do(t, ctx, "open R", chromedp.Navigate(s.url+"/tickets/R"), chromedp.WaitVisible(chromedp.CSS("#actions")))
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll('#actions a')].map(a => a.id)`); strings.Join(got, ",") != "action-release,action-cancel" {
		t.Errorf("actions of a claimed ticket: %v", got)
	}
	do(t, ctx, "ask to release", chromedp.Click(chromedp.CSS("#action-release")), chromedp.WaitVisible(chromedp.CSS("#confirm-form")))
	if got := text(t, ctx, "#operator"); got != "jane" {
		t.Errorf("the confirmation names %q, want jane", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#confirm-form input[name=epoch]').value`); got != "1" {
		t.Errorf("the form's epoch: %q, want 1", got)
	}
	do(t, ctx, "give a reason", chromedp.Clear(chromedp.CSS("#reason")), chromedp.SendKeys(chromedp.CSS("#reason"), "wedged on a prompt"))
	screenshot(t, ctx, shots, "action-confirm-release.png")
	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#action-done")))
	if loc := eval[string](t, ctx, `location.pathname + location.search`); loc != "/tickets/R?done=released" {
		t.Errorf("after the release: at %s", loc)
	}
	if got := text(t, ctx, "#state"); got != "open" {
		t.Errorf("R after the release: %q, want open", got)
	}
	ev := lastEvent(t, s, "R", "released")
	if ev.Data["reason"] != "wedged on a prompt" || ev.Data["by"] != "jane" || ev.Epoch != 1 {
		t.Errorf("released event %+v, want the reason and by jane", ev)
	}
	if got := eval[string](t, ctx, `document.querySelector('#timeline li[data-kind="released"] .detail').textContent`); !strings.Contains(got, "by operator jane") {
		t.Errorf("the page's released event: %q", got)
	}
	screenshot(t, ctx, shots, "action-released.png")

	// Cancel the open ticket O, then reopen it.
	do(t, ctx, "open O", chromedp.Navigate(s.url+"/tickets/O"), chromedp.WaitVisible(chromedp.CSS("#action-cancel")),
		chromedp.Click(chromedp.CSS("#action-cancel")), chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "duplicate of R"),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#action-done")))
	if got := text(t, ctx, "#state"); got != "cancelled" {
		t.Errorf("O after the cancel: %q", got)
	}
	if ev := lastEvent(t, s, "O", "cancelled"); ev.Data["by"] != "jane" || ev.Data["reason"] != "duplicate of R" || ev.Data["from"] != "open" {
		t.Errorf("cancelled event %+v", ev)
	}
	if _, err := s.client.Claim(context.Background(), "O", client.ClaimRequest{}); err == nil {
		t.Error("the cancelled ticket was claimed")
	}
	do(t, ctx, "reopen O", chromedp.Click(chromedp.CSS("#action-reopen")), chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#action-done")))
	if got := text(t, ctx, "#state"); got != "open" {
		t.Errorf("O after the reopen: %q", got)
	}
	if ev := lastEvent(t, s, "O", "reopened"); ev.Data["by"] != "jane" || ev.Data["from"] != "cancelled" {
		t.Errorf("reopened event %+v", ev)
	}

	// A stale page: S is released and claimed again after its page was
	// opened; the old form does not release the new lease.
	do(t, ctx, "open S's release", chromedp.Navigate(s.url+"/tickets/S/release"), chromedp.WaitVisible(chromedp.CSS("#confirm-form")))
	if _, err := s.client.Release(context.Background(), "S", client.ReleaseRequest{Reason: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	s.claim(t, "S", "agent-S2", "h-S")
	do(t, ctx, "confirm the stale page", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#action-error")))
	if code := eval[string](t, ctx, `document.getElementById('action-error').dataset.code`); code != "stale_epoch" {
		t.Errorf("the stale page's error code %q, want stale_epoch", code)
	}
	if tk, err := s.client.Ticket(context.Background(), "S"); err != nil || tk.Lease.Epoch != 2 || tk.Lease.State != "held" {
		t.Errorf("S after the stale form: %+v %v, want lease 2 held", tk.Lease, err)
	}
	screenshot(t, ctx, shots, "action-stale.png")

	// A post without the session's form token, or with another, from the
	// dashboard's own origin and with its cookie: refused.
	for _, body := range []string{`reason=x`, `reason=x&csrf=forged`} {
		if status := postStatus(t, ctx, "/tickets/S/cancel", body); status != 403 {
			t.Errorf("a post with %q: %d, want 403", body, status)
		}
	}
	if tk, _ := s.client.Ticket(context.Background(), "S"); tk.State != "claimed" {
		t.Errorf("S after the forged posts: %s", tk.State)
	}

	// A viewer reads, and acts on nothing.
	do(t, ctx, "sign out", chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	signIn(viewer, "")
	do(t, ctx, "open S as a viewer", chromedp.Navigate(s.url+"/tickets/S"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	if n := eval[int](t, ctx, `document.querySelectorAll('#actions').length`); n != 0 {
		t.Errorf("a viewer's page shows %d action bars", n)
	}
	do(t, ctx, "open a confirmation as a viewer", chromedp.Navigate(s.url+"/tickets/S/cancel"), chromedp.WaitVisible(chromedp.CSS("#action-refused")))
	if n := eval[int](t, ctx, `document.querySelectorAll('#confirm-form').length`); n != 0 {
		t.Errorf("a viewer's confirmation page has a form")
	}
	if status := postStatus(t, ctx, "/tickets/S/cancel", "reason=x"); status != 403 {
		t.Errorf("a viewer's post: %d, want 403", status)
	}
	if tk, _ := s.client.Ticket(context.Background(), "S"); tk.State != "claimed" {
		t.Errorf("S after the viewer's post: %s", tk.State)
	}
}
