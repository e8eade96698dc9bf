package warpcli_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

var (
	warpBinOnce sync.Once
	warpBin     string
	warpBinErr  error
)

// buildWarp builds cmd/warp once for the tests that signal a real process.
func buildWarp(t *testing.T) string {
	t.Helper()
	warpBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "warpcli-bin-")
		if err != nil {
			warpBinErr = err
			return
		}
		warpBin = filepath.Join(dir, "warp")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", warpBin, "github.com/gyrum-labs/warp/cmd/warp")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			warpBinErr = errors.New(string(out))
		}
	})
	if warpBinErr != nil {
		t.Fatalf("build warp: %v", warpBinErr)
	}
	return warpBin
}

// warp serve reads its token file again on SIGHUP (issue 46): a token
// added works at once, a token removed is refused, and so is the dashboard
// session it opened; a file that does not parse changes nothing and says
// so in the log. The process keeps serving throughout.
func TestServeReadsTheTokenFileOnSIGHUP(t *testing.T) {
	bin := buildWarp(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(tokens, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("admin:old-admin\nagent:old-agent\n")
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "warp.db"), "--token-file", tokens)
	cmd.Env = append(os.Environ(), "WARP_TOKEN=")
	p := warpclitest.StartProcess(t, cmd)
	ctx := context.Background()
	modeWith := func(token string) error {
		_, err := client.NewClient(p.URL, token).Mode(ctx)
		return err
	}
	if err := modeWith("old-admin"); err != nil {
		t.Fatalf("the first admin token: %v", err)
	}
	// A browser signs in with the old admin token.
	cookie := signIn(t, p.URL, "old-admin")
	if code := pageWith(t, p.URL, cookie); code != http.StatusOK {
		t.Fatalf("the session before SIGHUP: %d, want 200", code)
	}

	hup := func(wantLog string) {
		t.Helper()
		if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.Log(), wantLog) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log after SIGHUP:\n%s", wantLog, p.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	write("admin:new-admin\nagent:old-agent\nviewer:a-viewer\n")
	hup("tokens read again")
	if err := modeWith("new-admin"); err != nil {
		t.Errorf("the new admin token after SIGHUP: %v", err)
	}
	if err := modeWith("old-admin"); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("the removed admin token after SIGHUP: %v, want unauthorized", err)
	}
	if err := modeWith("a-viewer"); err != nil {
		t.Errorf("a viewer token reads: %v", err)
	}
	if _, err := client.NewClient(p.URL, "a-viewer").CreateTicket(ctx, client.CreateTicketRequest{}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("a viewer token writes: %v, want forbidden", err)
	}
	if code := pageWith(t, p.URL, cookie); code != http.StatusSeeOther {
		t.Errorf("the session of the removed token: %d, want 303 to the sign-in form", code)
	}

	// A file that does not parse keeps the tokens in force.
	write("admin new-admin\n")
	hup("the tokens were not read again")
	if err := modeWith("new-admin"); err != nil {
		t.Errorf("after a bad file: %v, want the tokens in force kept", err)
	}
	select {
	case <-p.Done():
		t.Fatalf("warp exited on SIGHUP:\n%s", p.Log())
	default:
	}
}

// Without a signal: warp serve notices its token file changed (checked
// every --token-poll) and reads it again, as a container's mounted secret
// is rotated: a new file renamed over the old. A file that does not parse
// keeps the tokens in force and says so once.
func TestServeReadsTheTokenFileWhenItChanges(t *testing.T) {
	bin := buildWarp(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	rotate := func(text string) {
		t.Helper()
		tmp := filepath.Join(dir, "tokens.new")
		if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, tokens); err != nil {
			t.Fatal(err)
		}
	}
	rotate("admin:first-admin\n")
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "warp.db"),
		"--token-file", tokens, "--token-poll", "50ms")
	cmd.Env = append(os.Environ(), "WARP_TOKEN=")
	p := warpclitest.StartProcess(t, cmd)
	ctx := context.Background()
	modeWith := func(token string) error {
		_, err := client.NewClient(p.URL, token).Mode(ctx)
		return err
	}
	waitLog := func(want string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(p.Log(), want) < n {
			if time.Now().After(deadline) {
				t.Fatalf("no %d× %q in the log:\n%s", n, want, p.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := modeWith("first-admin"); err != nil {
		t.Fatalf("the first admin token: %v", err)
	}
	rotate("admin:second-admin\n")
	waitLog("tokens read again", 1)
	if err := modeWith("second-admin"); err != nil {
		t.Errorf("the rotated admin token: %v", err)
	}
	if err := modeWith("first-admin"); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("the replaced admin token: %v, want unauthorized", err)
	}
	rotate("admin second-admin\n")
	waitLog("the token file changed but was not read again", 1)
	if err := modeWith("second-admin"); err != nil {
		t.Errorf("after a bad file: %v, want the tokens in force kept", err)
	}
	// The bad file is reported once, not at every poll.
	rotate("admin:third-admin\n")
	waitLog("tokens read again", 2)
	if n := strings.Count(p.Log(), "the token file changed but was not read again"); n != 1 {
		t.Errorf("the bad file was reported %d times, want once", n)
	}
	if err := modeWith("third-admin"); err != nil {
		t.Errorf("the admin token after the bad file was fixed: %v", err)
	}
}

// signIn signs in at base with token and returns the session cookie.
func signIn(t *testing.T, base, token string) *http.Cookie {
	t.Helper()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.PostForm(base+"/signin", map[string][]string{"token": {token}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "warp_session" && c.Value != "" {
			return c
		}
	}
	t.Fatalf("sign-in with %s: status %d, no session cookie", token, resp.StatusCode)
	return nil
}

// pageWith opens the dashboard with the session cookie and returns the
// status (not following redirects).
func pageWith(t *testing.T, base string, c *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.Header.Set("Accept", "text/html")
	req.AddCookie(c)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestMain(m *testing.M) {
	code := m.Run()
	if warpBin != "" {
		os.RemoveAll(filepath.Dir(warpBin))
	}
	os.Exit(code)
}
