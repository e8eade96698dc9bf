package heartbeat_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/heartbeat"
)

var beat = client.HeartbeatRequest{Ticket: "T-1", Host: "h", Agent: "A"}

// The loop's client sends the token and the lease secret, asks for no
// kept connection, and never follows a redirect: following one would
// resend both to wherever the answer points.
func TestAPIRefusesRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	var got http.Header
	var closeAsked bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, closeAsked = r.Header.Clone(), r.Close
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)

	_, err := heartbeat.NewAPI(front.URL, "tok", "sec", 5*time.Second).Heartbeat(context.Background(), beat)
	if err == nil {
		t.Fatal("a redirect was followed")
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", n)
	}
	if a, s := got.Get("Authorization"), got.Get(client.HeaderLeaseSecret); a != "Bearer tok" || s != "sec" {
		t.Errorf("Authorization %q, lease secret %q; want Bearer tok and sec", a, s)
	}
	if !closeAsked {
		t.Error("the request did not ask to close the connection")
	}
}

// Each exchange is bounded by the timeout NewAPI is given.
func TestAPITimeout(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) })

	_, err := heartbeat.NewAPI(hung.URL, "", "", 50*time.Millisecond).Heartbeat(context.Background(), beat)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a server that never answers: got %v, want a timeout", err)
	}
}

// An https warp (a TLS front to a real one): the loop's client verifies
// the server's certificate against the system's roots — a certificate
// they do not vouch for is refused — and a loop whose API trusts it
// heartbeats through it.
func TestLoopOverHTTPS(t *testing.T) {
	ws := newWarp(t)
	target, _ := url.Parse(ws.URL())
	front := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(front.Close)

	_, err := heartbeat.NewAPI(front.URL, "", "", 5*time.Second).Heartbeat(context.Background(), beat)
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) {
		t.Fatalf("a certificate no root vouches for: got %v, want a verification error", err)
	}

	_, parent := watched(t)
	d := worktree(t, ws, "T-tls", ws.Claim("T-tls", "A"), parent)
	r := startLoop(t, d, func(c *heartbeat.Config) {
		c.API = client.NewClient(front.URL, "").WithHTTPClient(front.Client())
	})
	waitFor(t, "two heartbeats over https", func() bool { return ws.Count() >= 2 })
	if st := r.state(); st.LastOutcome != "ok" || st.LastStatus != 200 {
		t.Fatalf("state %+v, want ok 200", st)
	}
}
