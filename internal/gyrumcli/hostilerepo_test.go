package gyrumcli_test

import (
	"net/http"
	"net/http/httptest"
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
