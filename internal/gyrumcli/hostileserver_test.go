package gyrumcli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/warp"
)

// claimRewriter is a proxy in front of the env's real warp that answers
// every claim with the ticket id swapped for id: what another service at
// WARP_URL, or a hostile one, could send.
func claimRewriter(t *testing.T, e *env, id string) string {
	t.Helper()
	target, err := url.Parse(e.ws.URL())
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodPost || !(strings.HasSuffix(r.Request.URL.Path, "/claim") || r.Request.URL.Path == "/v1/claims/next") {
			return nil
		}
		data, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err == nil {
			m["id"] = id
			data, _ = json.Marshal(m)
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
		r.Header.Set("Content-Length", strconv.Itoa(len(data)))
		return nil
	}
	s := httptest.NewServer(p)
	t.Cleanup(s.Close)
	return s.URL
}

// A claim answered with a ticket id that is not one (here a path that
// climbs out of the worktree root) sets nothing up: no directory, no
// branch, no .gyrum/, no loop. The id becomes a path and a branch name.
func TestStartWorkRefusesAnInvalidTicketIDFromTheServer(t *testing.T) {
	for _, bad := range []string{"../../escaped", "a/b", "-rf", strings.Repeat("x", 65)} {
		t.Run(bad[:min(len(bad), 8)], func(t *testing.T) {
			e := newEnv(t)
			e.ws.Create("T-h")
			e.vars["WARP_URL"] = claimRewriter(t, e, bad)
			repo := initRepo(t)
			root := filepath.Join(t.TempDir(), "a", "b")
			e.vars["GYRUM_WORKTREE_ROOT"] = root
			_, watched := agent(t, "sleep", "1000")
			r := e.gyrum(repo, "", "start-work", "--next", "--worktree", "--watch-pid", strconv.Itoa(watched.PID))
			if r.code != 1 || !strings.Contains(r.stderr, "not a valid ticket id") {
				t.Fatalf("got %+v, want exit 1 naming the invalid id", r)
			}
			for _, dir := range []string{root, filepath.Dir(root)} {
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("%s holds %d entries after the refusal", dir, len(ents))
				}
			}
			if b := gitOut(t, repo, "branch", "--list"); strings.Contains(b, "gyrum/") {
				t.Errorf("branches after the refusal:\n%s", b)
			}
			if list := gitOut(t, repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
				t.Errorf("git worktree list:\n%s", list)
			}
			if live := e.loopsRunning(); len(live) != 0 {
				t.Errorf("loops running: %+v", live)
			}
		})
	}
}

// A claim of one ticket answered with another (valid) id is released and
// sets nothing up.
func TestStartWorkRefusesAnotherTicketThanAsked(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-asked")
	e.ws.Create("T-other")
	e.vars["WARP_URL"] = claimRewriter(t, e, "T-other")
	wt := mkdir(t)
	_, watched := agent(t, "sleep", "1000")
	r := e.gyrum(wt, "", "start-work", "T-asked", "--watch-pid", strconv.Itoa(watched.PID))
	if r.code != 1 || !strings.Contains(r.stderr, "answered with ticket T-other") {
		t.Fatalf("got %+v, want exit 1 naming the other ticket", r)
	}
	if _, err := os.Stat(filepath.Join(wt, ".gyrum", "lease.json")); err == nil {
		t.Error("lease.json written for the wrong ticket")
	}
	// The release went to the id the server named, with the epoch of the
	// claim: warp refuses it (T-other was never claimed) and T-asked is
	// still held by the claim, which is all a confused server allows.
	if v := e.ws.Ticket("T-other"); v.Lease != nil {
		t.Errorf("T-other: lease %+v, want none", v.Lease)
	}
	if v := e.ws.Ticket("T-asked"); v.Lease == nil || v.Lease.State != warp.LeaseHeld {
		t.Errorf("T-asked: lease %+v", v.Lease)
	}
	if live := e.loopsRunning(); len(live) != 0 {
		t.Errorf("loops running: %+v", live)
	}
}
