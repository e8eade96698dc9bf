package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpapi"
)

const viewerToken = "viewer-secret-1"

// A viewer token reads what an admin reads and writes nothing (issue 46:
// read-only operators).
func TestViewerTokenReadsOnly(t *testing.T) {
	o := withTokens()
	o.tokens = append(o.tokens, httpapi.Token{Role: httpapi.RoleViewer, Secret: viewerToken})
	e := newEnv(t, o)
	e.create("T-1")
	for _, path := range []string{"/v1/tickets", "/v1/tickets/T-1", "/v1/tickets/T-1/events", "/v1/mode", "/v1/hosts", "/v1/adoption"} {
		e.mustStatus(e.request("GET", path, viewerToken, "", nil), http.StatusOK)
	}
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/tickets", `{}`},
		{"PATCH", "/v1/tickets/T-1", `{"title":"x"}`},
		{"POST", "/v1/tickets/T-1/cancel", ``},
		{"POST", "/v1/tickets/T-1/claim", ``},
		{"PUT", "/v1/mode", `{"mode":"legacy"}`},
		{"POST", "/v1/heartbeat", `{"ticket":"T-1"}`},
	} {
		r := e.mustStatus(e.request(w.method, w.path, viewerToken, "application/json", []byte(w.body)), http.StatusForbidden)
		if !strings.Contains(r.errorMessage(), "viewer") {
			t.Errorf("%s %s: %q does not say the token is a viewer's", w.method, w.path, r.errorMessage())
		}
	}
	if v := e.ticket("T-1"); v.Ticket.State != "open" || v.Ticket.Title != "ticket T-1" {
		t.Errorf("a viewer changed T-1: %+v", v.Ticket)
	}
}

// SetTokens replaces the tokens in force (SIGHUP), and refuses what would
// open a server that has tokens, or a bad set.
func TestSetTokens(t *testing.T) {
	e := newEnv(t, withTokens())
	e.mustStatus(e.request("GET", "/v1/mode", adminToken, "", nil), http.StatusOK)
	if err := e.api.SetTokens(nil); err == nil {
		t.Error("an empty token set was taken: the server would be open")
	}
	if err := e.api.SetTokens([]httpapi.Token{{Role: httpapi.RoleAdmin, Secret: "x"}, {Role: httpapi.RoleAgent, Secret: "x"}}); err == nil {
		t.Error("one secret with two roles was taken")
	}
	if err := e.api.SetTokens([]httpapi.Token{{Role: httpapi.RoleOpen, Secret: "y"}}); err == nil {
		t.Error("a token of role open was taken")
	}
	e.mustStatus(e.request("GET", "/v1/mode", adminToken, "", nil), http.StatusOK) // the refusals kept the tokens
	if err := e.api.SetTokens([]httpapi.Token{{Role: httpapi.RoleAdmin, Secret: "admin-2"}}); err != nil {
		t.Fatal(err)
	}
	e.mustStatus(e.request("GET", "/v1/mode", adminToken, "", nil), http.StatusUnauthorized)
	e.mustStatus(e.request("GET", "/v1/mode", "admin-2", "", nil), http.StatusOK)

	open := newEnv(t, envOptions{})
	if err := open.api.SetTokens([]httpapi.Token{{Role: httpapi.RoleAdmin, Secret: "z"}}); err == nil {
		t.Error("a server started without tokens took tokens: it listens on loopback only, as an open server")
	}
}

func TestParseTokensViewer(t *testing.T) {
	toks, err := httpapi.ParseTokens("f", strings.NewReader("viewer:abc\nadmin:def\n"))
	if err != nil || len(toks) != 2 || toks[0].Role != httpapi.RoleViewer || toks[0].Role.String() != "viewer" {
		t.Fatalf("%+v, %v", toks, err)
	}
	if _, err := httpapi.ParseTokens("f", strings.NewReader("reader:abc\n")); err == nil || !strings.Contains(err.Error(), "agent, admin or viewer") {
		t.Errorf("unknown role: %v", err)
	}
}
