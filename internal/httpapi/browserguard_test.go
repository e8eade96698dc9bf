package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/warp"
)

// browserRequest sends what a browser would for a page: a body it may send
// to any site without asking first (text/plain), with the headers given
// (Origin, Sec-Fetch-Site) and host as the Host header ("" keeps the
// server's address).
func (e *env) browserRequest(method, path, token, host string, header map[string]string, body string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// A tokenless warp on loopback takes every caller for the operator. A page
// on another site that the operator visits can still make the browser
// send it a write (a text/plain POST needs no permission): refused, and
// the lease stays held. The same write from a client (no Origin, no
// Sec-Fetch-Site) or from warp's own pages goes through.
func TestTokenlessServerRefusesCrossSiteWrites(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.mustStatus(e.json("POST", "/v1/tickets", "", httpapi.CreateTicketRequest{ID: "T-1"}, nil), http.StatusCreated)
	e.mustStatus(e.json("POST", "/v1/tickets/T-1/claim", "", httpapi.ClaimRequest{Agent: "a", Host: "h"}, nil), http.StatusOK)
	for name, h := range map[string]map[string]string{
		"Origin":         {"Origin": "https://evil.example"},
		"Sec-Fetch-Site": {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"same-site":      {"Sec-Fetch-Site": "same-site"},
	} {
		r := e.browserRequest("POST", "/v1/tickets/T-1/release", "", "", h, `{"reason":"csrf"}`)
		if r.status != http.StatusForbidden || r.errorCode() != httpapi.CodeForbidden || !strings.Contains(r.errorMessage(), "cross-origin") {
			t.Errorf("%s: release from another site: %d %s", name, r.status, r.body)
		}
	}
	if v := e.ticket("T-1"); v.Lease == nil || v.Lease.State != warp.LeaseHeld {
		t.Fatalf("lease after the refused writes: %+v", v.Lease)
	}
	// warp's own pages, and clients, which send neither header.
	e.mustStatus(e.browserRequest("POST", "/v1/tickets", "", "", map[string]string{"Sec-Fetch-Site": "same-origin"}, `{"id":"T-2"}`), http.StatusCreated)
	e.mustStatus(e.browserRequest("POST", "/v1/tickets/T-1/release", "", "", nil, `{"reason":"done"}`), http.StatusOK)
}

// DNS rebinding: a page whose domain the attacker re-resolves to 127.0.0.1
// is same-origin with itself, so the browser lets it read and write; what
// gives it away is the Host it names. A tokenless warp answers only
// loopback names, unless told to answer any (--insecure).
func TestTokenlessServerAnswersOnlyLoopbackHosts(t *testing.T) {
	e := newEnv(t, envOptions{})
	port := e.srv.URL[strings.LastIndex(e.srv.URL, ":")+1:]
	for _, host := range []string{"rebind.evil.example:" + port, "rebind.evil.example", "10.0.0.7:" + port, "localhost.evil.example:" + port} {
		for _, m := range []string{"GET", "PUT"} {
			r := e.browserRequest(m, "/v1/mode", "", host, nil, `{"mode":"legacy","force":true}`)
			if r.status != http.StatusForbidden || !strings.Contains(r.errorMessage(), "DNS rebinding") {
				t.Errorf("%s /v1/mode with Host %q: %d %s", m, host, r.status, r.body)
			}
		}
	}
	if m := e.mustStatus(e.request("GET", "/v1/mode", "", "", nil), http.StatusOK); !strings.Contains(string(m.body), "transition") {
		t.Errorf("mode after the refused writes: %s", m.body)
	}
	for _, host := range []string{"localhost:" + port, "LOCALHOST", "app.localhost:" + port, "127.0.0.1:" + port, "127.8.9.1", "[::1]:" + port} {
		e.mustStatus(e.browserRequest("GET", "/v1/mode", "", host, nil, ""), http.StatusOK)
	}

	open := newEnv(t, envOptions{cfg: httpapi.ServerConfig{AnyHost: true}})
	open.mustStatus(open.browserRequest("GET", "/v1/mode", "", "warp.internal:7077", nil, ""), http.StatusOK)
}

// With tokens, a request names whatever host it reached the server by;
// a cross-site write is refused all the same, even with a valid token.
func TestServerWithTokensAnswersAnyHostButNoCrossSiteWrite(t *testing.T) {
	e := newEnv(t, withTokens())
	e.mustStatus(e.browserRequest("GET", "/v1/mode", adminToken, "warp.example.com", nil, ""), http.StatusOK)
	r := e.browserRequest("POST", "/v1/tickets", adminToken, "", map[string]string{"Origin": "https://evil.example"}, `{"id":"T-9"}`)
	if r.status != http.StatusForbidden {
		t.Errorf("cross-site create with the admin token: %d %s", r.status, r.body)
	}
}
