package warpcli_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warpcli"
)

// A release that fails for another reason than the lease moving on (the
// server, its database) stops stale-unlock, which still reports what it
// released before, in the table and in --json, and then fails.
func TestStaleUnlockReportsWhatItDidBeforeAFailure(t *testing.T) {
	s := startServer(t, func(c *warpcli.ServeConfig) { c.Policy.LeaseWindow = 2 * time.Hour })
	for _, id := range []string{"A", "B", "C"} {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
		s.claim(t, id, "host-"+strings.ToLower(id))
	}
	s.clock.Advance(40 * time.Minute)
	target, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		var releases atomic.Int32
		proxy := httputil.NewSingleHostReverseProxy(target)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/release") && releases.Add(1) >= 2 { // a refusal that lasts past the retries
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(`{"error":{"code":"unavailable","message":"the database is unavailable; retry later"}}`))
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		args := []string{"stale-unlock"}
		if format == "json" {
			args = append(args, "--json")
		}
		r := s.run(t, map[string]string{"WARP_URL": front.URL}, args...)
		front.Close()
		if r.code != warpcli.ExitError || !strings.Contains(r.stderr, "unavailable") {
			t.Errorf("%s: exit %d, stderr %q; want a failure naming the 503", format, r.code, r.stderr)
		}
		if format == "json" {
			rep := decode[warpcli.StaleUnlockReport](t, r.stdout)
			if len(rep.Stale) != 2 || rep.Stale[0].Action != "released" || rep.Stale[1].Action != "failed" || rep.Stale[1].Error == "" {
				t.Errorf("json report %+v, want one released and the failed one", rep)
			}
			continue
		}
		if !strings.Contains(r.stdout, "released A epoch 1") || !strings.Contains(r.stdout, "failed to release B epoch 1") || strings.Contains(r.stdout, " C ") {
			t.Errorf("table printed %q, want A released, B failed, C not tried", r.stdout)
		}
	}
}
