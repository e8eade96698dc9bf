package warptest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Refusing is a reverse proxy in front of a real warp that answers the
// first requests it is told to refuse as warp refuses one for now — 429
// too_many_connections or 503 unavailable, warp's error body, Retry-After:
// 0 — and forwards every other request.
type Refusing struct {
	srv *httptest.Server

	mu      sync.Mutex
	status  int
	left    int
	refused int
}

// StartRefusing proxies to target (a base URL) until the end of the test.
func StartRefusing(t testing.TB, target string) *Refusing {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	r := &Refusing{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if status, ok := r.take(); ok {
			code := "too_many_connections"
			if status == http.StatusServiceUnavailable {
				code = "unavailable"
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"code":%q,"message":"refused for now by the test"}}`, code)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the proxy's base URL.
func (r *Refusing) URL() string { return r.srv.URL }

// Refuse makes the next n requests answer status.
func (r *Refusing) Refuse(status, n int) {
	r.mu.Lock()
	r.status, r.left = status, n
	r.mu.Unlock()
}

// Refused is how many requests were refused so far.
func (r *Refusing) Refused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

func (r *Refusing) take() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left == 0 {
		return 0, false
	}
	r.left--
	r.refused++
	return r.status, true
}
