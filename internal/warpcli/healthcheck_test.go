package warpcli_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warpcli"
)

// warp healthcheck asks a running server without a token, and says no (exit
// 1) for a dead address and for one that never answers, within its timeout.
func TestHealthcheck(t *testing.T) {
	s := startServer(t, nil)
	noToken := map[string]string{"WARP_URL": s.URL()}
	r := runCLI(t, noToken, time.Now, "healthcheck").mustSucceed(t)
	if want := s.URL() + "/healthz: ok\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	rep := decode[warpcli.HealthReport](t, runCLI(t, noToken, time.Now, "healthcheck", "--ready", "--json").mustSucceed(t).stdout)
	if !rep.Healthy || rep.Status != "ready" || rep.Path != "/readyz" || rep.URL != s.URL() {
		t.Errorf("--ready --json: %+v", rep)
	}

	runCLI(t, map[string]string{}, time.Now, "healthcheck", "--url", "http://127.0.0.1:1").
		mustFail(t, warpcli.ExitError, "/healthz", "is warp running at http://127.0.0.1:1")
	r = runCLI(t, map[string]string{}, time.Now, "healthcheck", "--url", "http://127.0.0.1:1", "-o", "json")
	if r.code != warpcli.ExitError {
		t.Fatalf("dead URL with --json: exit %d, want 1", r.code)
	}
	if rep := decode[warpcli.HealthReport](t, r.stdout); rep.Healthy || rep.Error == "" {
		t.Errorf("dead URL with --json: %+v, want healthy false and the error", rep)
	}

	// A port that accepts and never answers: the timeout ends the check.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	r = runCLI(t, map[string]string{}, time.Now, "healthcheck", "--url", "http://"+ln.Addr().String(), "--timeout", "200ms")
	r.mustFail(t, warpcli.ExitError, "no answer within 200ms")

	runCLI(t, map[string]string{}, time.Now, "healthcheck", "extra").mustFail(t, warpcli.ExitUsage)
	if r := runCLI(t, map[string]string{}, time.Now, "healthcheck", "--timeout", "0s"); r.code != warpcli.ExitUsage || !strings.Contains(r.stderr, "--timeout") {
		t.Errorf("--timeout 0s: exit %d %q, want a usage error", r.code, r.stderr)
	}
}
