package gyrumcli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// authRecorder is a server that records the Authorization header of every
// request and answers 404 with warp's error body.
func authRecorder(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"no such ticket","code":"not_found"}`))
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// A repository can commit .gyrum/lease.json with a warp_url of its choice;
// start-work and doctor then tell the agent to run gyrum release there.
// WARP_TOKEN must not go with it: only the server WARP_URL names gets it.
func TestCommittedLeaseDoesNotDrawTheToken(t *testing.T) {
	const tok = "agent-token-SECRET"
	evil, seen := authRecorder(t)
	for _, c := range []struct {
		name, warpURL string
		want          string
	}{
		{"lease names another server", "", ""},
		{"lease names WARP_URL's server", evil.URL + "/", "Bearer " + tok},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.vars["WARP_TOKEN"] = tok
			if c.warpURL != "" {
				e.vars["WARP_URL"] = c.warpURL
			}
			wt := mkdir(t)
			d, err := gyrumdir.Create(wt)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: evil.URL, LeaseSecret: "planted"}); err != nil {
				t.Fatal(err)
			}
			n := len(seen())
			r := e.gyrum(wt, "", "release")
			got := seen()[n:]
			if len(got) != 1 || got[0] != c.want {
				t.Fatalf("the lease's server saw Authorization %q, want one request with %q (release: %+v)", got, c.want, r)
			}
			if warned := strings.Contains(r.stderr, "WARP_TOKEN not sent"); warned != (c.want == "") {
				t.Errorf("stderr %q: warned %v", r.stderr, warned)
			}
		})
	}
}

// A committed .gyrum/heartbeat.log that links to a file outside: the loop
// refuses to log there, and start-work's report of that must not show the
// file it points at (the review's was /proc/self/environ, WARP_TOKEN in it).
func TestCommittedLogLinkIsNotRead(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-log")
	secret := filepath.Join(t.TempDir(), "environ")
	if err := os.WriteFile(secret, []byte("WARP_TOKEN=agent-token-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wt := mkdir(t)
	if err := os.Mkdir(filepath.Join(wt, ".gyrum"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(wt, ".gyrum", gyrumdir.LogFile)); err != nil {
		t.Fatal(err)
	}
	_, w := agent(t, "sleep", "1000")
	r := e.gyrum(wt, "", "start-work", "T-log", "--watch-pid", strconv.Itoa(w.PID))
	if strings.Contains(r.stdout+r.stderr, "SECRET") {
		t.Fatalf("start-work showed the linked file: %+v", r)
	}
	if r.code == 0 {
		t.Fatalf("start-work succeeded with a loop that cannot log: %+v", r)
	}
}
