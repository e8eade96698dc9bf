package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// A server that answers with a redirect (a misconfigured or hostile proxy
// at WARP_URL) gets no request followed to where it points: net/http would
// resend the lease secret header, and for 307 and 308 the body, to another
// host.
func TestClientRefusesRedirects(t *testing.T) {
	var reached int32 // sync/atomic's Int32 would need Go 1.19
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&reached, 1)
		t.Errorf("followed to %s with lease secret %q", r.URL, r.Header.Get(client.HeaderLeaseSecret))
	}))
	defer elsewhere.Close()
	target := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	ctx := context.Background()
	for name, c := range map[string]*client.Client{
		"NewClient":      client.NewClient(redirector.URL, "agent-token"),
		"WithHTTPClient": client.NewClient(redirector.URL, "agent-token").WithHTTPClient(&http.Client{}),
	} {
		_, err := c.WithLeaseSecret("s3cret").Release(ctx, "T-1", client.ReleaseRequest{Epoch: 1, Reason: "x"})
		if err == nil || !strings.Contains(err.Error(), "not followed") {
			t.Errorf("%s: release through a redirect: %v, want an error saying it was not followed", name, err)
		}
	}
	if n := atomic.LoadInt32(&reached); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

// A server whose cursors never end (the same one again, an empty page that
// names a next one) gets an error, not an endless walk.
func TestAllTicketsStopsOnCursorsThatDoNotMoveOn(t *testing.T) {
	for name, page := range map[string]func(n int64) string{
		"the same cursor": func(int64) string { return `{"tickets":[{"id":"T-1"}],"next_cursor":"same"}` },
		"empty pages":     func(n int64) string { return fmt.Sprintf(`{"tickets":[],"next_cursor":"c%d"}`, n) },
	} {
		var n int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(page(atomic.AddInt64(&n, 1))))
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.NewClient(srv.URL, "").AllTickets(ctx, client.ListOptions{})
		timedOut := ctx.Err() != nil
		cancel()
		srv.Close()
		if err == nil || timedOut || atomic.LoadInt64(&n) > 3 {
			t.Errorf("%s: %d requests, err %v; want an error within a few pages", name, atomic.LoadInt64(&n), err)
		}
	}
}
