package heartbeat_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/rawhttp/rawtls"
)

// An https warp (a TLS front to a real one): the loop reaches it through
// its TLS function, and without one it refuses to start, saying what to
// run instead, rather than failing every POST.
func TestLoopOverHTTPS(t *testing.T) {
	ws := newWarp(t)
	target, _ := url.Parse(ws.URL())
	front := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(front.Close)
	pool := x509.NewCertPool()
	pool.AddCert(front.Certificate())

	_, parent := watched(t)
	d := worktree(t, ws, "T-tls", ws.Claim("T-tls", "A"), parent)
	l, _ := d.ReadLease()
	l.WarpURL = front.URL
	if err := d.WriteLease(l); err != nil {
		t.Fatal(err)
	}

	_, err := heartbeat.New(heartbeat.Config{Dir: d, Registry: gyrumdir.NewRegistry(t.TempDir()), Durations: scaled})
	if err == nil || !strings.Contains(err.Error(), "plain http only") || !strings.Contains(err.Error(), "gyrum heartbeat run") {
		t.Fatalf("no TLS, https lease: got %v, want a refusal naming gyrum heartbeat run", err)
	}

	r := startLoop(t, d, func(c *heartbeat.Config) { c.TLS = rawtls.Handshake(&tls.Config{RootCAs: pool}) })
	waitFor(t, "two heartbeats over https", func() bool { return ws.Count() >= 2 })
	if st := r.state(); st.LastOutcome != "ok" || st.LastStatus != 200 {
		t.Fatalf("state %+v, want ok 200", st)
	}
}
