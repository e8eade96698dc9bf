package httpapi_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/warp"
)

// sessionEnv is a server with tokens and sessions, and one admin page
// mounted as the dashboard's are.
func sessionEnv(t *testing.T) *env {
	t.Helper()
	o := withTokens()
	o.sessions = true
	e := newEnv(t, o)
	e.api.Mount("GET /page", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "the page")
	}), httpapi.RoleAdmin)
	return e
}

// browserDo sends req as a browser's page load would, without following
// redirects.
func (e *env) browserDo(req *http.Request) response {
	e.t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// signIn posts the sign-in form with token and next, plus the headers given.
func (e *env) signIn(token, next string, header map[string]string) response {
	e.t.Helper()
	form := url.Values{"token": {token}, "next": {next}}
	req, err := http.NewRequest("POST", e.srv.URL+httpapi.SignInPath, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return e.browserDo(req)
}

// page GETs path as a browser does (Accept: text/html), with cookie when
// it is not nil.
func (e *env) page(path string, cookie *http.Cookie) response {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	return e.browserDo(req)
}

func sessionCookie(t *testing.T, r response) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == httpapi.SessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", httpapi.SessionCookie, r.header.Values("Set-Cookie"))
	return nil
}

// storedSessions returns the id hashes the store holds, of the sessions
// given by id (cookie values), and whether each is there.
func (e *env) sessionStored(id string) bool {
	e.t.Helper()
	err := e.db.View(context.Background(), func(tx warp.Tx) error {
		_, err := tx.Session(context.Background(), warp.TokenID(id))
		return err
	})
	if err != nil && !errors.Is(err, warp.ErrNotFound) {
		e.t.Fatal(err)
	}
	return err == nil
}

// Signing in with the admin token sets a cookie that holds a random
// session id, never the token (in clear or encoded); the store keeps only
// the id's hash. The cookie opens pages and reads, not writes.
func TestSignInCookieHoldsASessionNotTheToken(t *testing.T) {
	e := sessionEnv(t)
	r := e.signIn(adminToken, "/page?x=1", nil)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/page?x=1" {
		t.Fatalf("sign-in: %d Location %q, want 303 /page?x=1; %s", r.status, r.header.Get("Location"), r.body)
	}
	raw := strings.Join(r.header.Values("Set-Cookie"), "\n")
	for _, leak := range []string{adminToken, base64.RawURLEncoding.EncodeToString([]byte(adminToken)),
		base64.StdEncoding.EncodeToString([]byte(adminToken)), url.QueryEscape(adminToken)} {
		if strings.Contains(raw, leak) {
			t.Errorf("Set-Cookie %q holds the token (%q)", raw, leak)
		}
	}
	c := sessionCookie(t, r)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", c)
	}
	if c.MaxAge != int(httpapi.DefaultSessionTTL/time.Second) {
		t.Errorf("cookie Max-Age %d, want %d", c.MaxAge, int(httpapi.DefaultSessionTTL/time.Second))
	}
	if b, err := base64.RawURLEncoding.DecodeString(c.Value); err != nil || len(b) < 32 {
		t.Errorf("session id %q: want at least 32 random bytes, base64url (%v)", c.Value, err)
	}
	if !e.sessionStored(c.Value) {
		t.Fatal("the session is not in the store under the hash of its id")
	}
	if p := e.page("/page", c); p.status != http.StatusOK || string(p.body) != "the page" {
		t.Errorf("page with the session: %d %s, want 200", p.status, p.body)
	}
	// An API read from the signed-in browser works too; a write does not.
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/tickets", nil)
	req.AddCookie(c)
	if got := e.browserDo(req); got.status != http.StatusOK {
		t.Errorf("GET /v1/tickets with the session: %d, want 200", got.status)
	}
	req, _ = http.NewRequest("PUT", e.srv.URL+"/v1/mode", strings.NewReader(`{"mode":"legacy"}`))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(c)
	if got := e.browserDo(req); got.status != http.StatusUnauthorized {
		t.Errorf("PUT /v1/mode with only the session: %d, want 401", got.status)
	}
}

// A wrong token, an agent token and an empty form show the form again
// with the error, and set no cookie.
func TestSignInRefusesWrongTokens(t *testing.T) {
	e := sessionEnv(t)
	for _, c := range []struct {
		token  string
		status int
		code   string
	}{{"not-a-token", 401, "unauthorized"}, {agentToken, 403, "forbidden"}, {"", 400, "invalid"}} {
		r := e.signIn(c.token, "/page", nil)
		if r.status != c.status || !strings.Contains(string(r.body), `data-code="`+c.code+`"`) {
			t.Errorf("token %q: %d %s, want %d with code %s", c.token, r.status, r.body, c.status, c.code)
		}
		if ck := r.header.Values("Set-Cookie"); len(ck) != 0 {
			t.Errorf("token %q set cookies %v", c.token, ck)
		}
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("token %q: Content-Type %q, want the HTML form", c.token, r.header.Get("Content-Type"))
		}
	}
}

// The sign-in form is a write: a POST another site's page makes the
// browser send is refused like every cross-origin write, and signs no one
// in (login CSRF). The same form from warp's own page goes through.
func TestSignInRefusesCrossOriginPosts(t *testing.T) {
	e := sessionEnv(t)
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example"},
	} {
		r := e.signIn(adminToken, "/page", h)
		if r.status != http.StatusForbidden || len(r.header.Values("Set-Cookie")) != 0 {
			t.Errorf("%v: %d cookies %v, want 403 and none", h, r.status, r.header.Values("Set-Cookie"))
		}
	}
	r := e.signIn(adminToken, "/page", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": e.srv.URL})
	if r.status != http.StatusSeeOther {
		t.Errorf("same-origin sign-in: %d, want 303", r.status)
	}
	sessionCookie(t, r)
}

// After sign-in the browser goes back where it was, always on this
// server, and never with a token in the address.
func TestSignInRedirectsStayOnTheServer(t *testing.T) {
	e := sessionEnv(t)
	for _, c := range []struct{ next, want string }{
		{"/page?x=1", "/page?x=1"},
		{"//evil.example/", "/"},
		{`/\evil.example/`, "/evil.example/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/hosts?window=1h&token=" + adminToken, "/hosts?window=1h"},
		{httpapi.SignInPath, "/"},
		{"", "/"},
	} {
		r := e.signIn(adminToken, c.next, nil)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != c.want {
			t.Errorf("next %q: %d Location %q, want 303 %q", c.next, r.status, r.header.Get("Location"), c.want)
		}
	}
}

// A browser without a session is sent to the sign-in form from a page,
// with the page to come back to (without a ?token=, which no longer signs
// anyone in); API paths and clients still get the JSON 401.
func TestBrowsersWithoutASessionGetTheSignInForm(t *testing.T) {
	e := sessionEnv(t)
	r := e.page("/page?x=1&token="+adminToken, nil)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/signin?next=%2Fpage%3Fx%3D1" {
		t.Errorf("page without a session: %d Location %q, want 303 /signin?next=%%2Fpage%%3Fx%%3D1", r.status, r.header.Get("Location"))
	}
	if ck := r.header.Values("Set-Cookie"); len(ck) != 0 {
		t.Errorf("?token= set cookies %v", ck)
	}
	form := e.page("/signin?next=%2Fpage", nil)
	if form.status != http.StatusOK || !strings.Contains(string(form.body), `name="next" value="/page"`) {
		t.Errorf("sign-in form: %d %s", form.status, form.body)
	}
	if csp := form.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("sign-in form CSP %q: want 'self' only", csp)
	}
	api := e.page("/v1/tickets", nil)
	if api.status != http.StatusUnauthorized || !strings.HasPrefix(api.header.Get("Content-Type"), "application/json") {
		t.Errorf("API path from a browser: %d %s, want the JSON 401", api.status, api.header.Get("Content-Type"))
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/page", nil)
	if got := e.browserDo(req); got.status != http.StatusUnauthorized || !strings.Contains(string(got.body), "sign in with a browser at /signin") {
		t.Errorf("page from a client: %d %s, want the JSON 401 naming /signin", got.status, got.body)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if got := e.browserDo(req); got.status != http.StatusOK {
		t.Errorf("page with the bearer header: %d, want 200", got.status)
	}
}

// A session ends at its expiry (then it is refused, and deleted), at
// sign-out (the cookie is cleared too), and when its token is no longer
// an admin token of the server.
func TestSessionsEnd(t *testing.T) {
	e := sessionEnv(t)
	c := sessionCookie(t, e.signIn(adminToken, "/page", nil))

	e.clock.Advance(httpapi.DefaultSessionTTL - time.Second)
	if r := e.page("/page", c); r.status != http.StatusOK {
		t.Fatalf("a second before expiry: %d, want 200", r.status)
	}
	e.clock.Advance(time.Second)
	if r := e.page("/page", c); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), httpapi.SignInPath) {
		t.Errorf("expired session: %d Location %q, want 303 to the sign-in form", r.status, r.header.Get("Location"))
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/tickets", nil)
	req.AddCookie(c)
	if r := e.browserDo(req); r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "expired or was signed out") {
		t.Errorf("expired session on the API: %d %s, want 401 saying so", r.status, r.body)
	}
	if e.sessionStored(c.Value) {
		t.Error("the expired session is still stored")
	}

	c = sessionCookie(t, e.signIn(adminToken, "/page", nil))
	req, _ = http.NewRequest("POST", e.srv.URL+httpapi.SignOutPath, nil)
	req.AddCookie(c)
	out := e.browserDo(req)
	if out.status != http.StatusSeeOther || out.header.Get("Location") != httpapi.SignInPath {
		t.Errorf("sign-out: %d Location %q, want 303 %s", out.status, out.header.Get("Location"), httpapi.SignInPath)
	}
	if cleared := sessionCookie(t, out); cleared.MaxAge >= 0 || cleared.Value != "" {
		t.Errorf("sign-out cookie %+v: want it cleared", cleared)
	}
	if e.sessionStored(c.Value) {
		t.Error("the signed-out session is still stored")
	}
	if r := e.page("/page", c); r.status != http.StatusSeeOther {
		t.Errorf("signed-out session: %d, want 303 to the sign-in form", r.status)
	}

	// The same database served with another admin token: the session of
	// the removed token opens nothing.
	c = sessionCookie(t, e.signIn(adminToken, "/page", nil))
	other, err := httpapi.NewServer(e.svc, httpapi.ServerConfig{Tokens: []httpapi.Token{{Role: httpapi.RoleAdmin, Secret: "another-admin"}}, Sessions: e.db})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(other)
	defer srv.Close()
	req, _ = http.NewRequest("GET", srv.URL+"/v1/tickets", nil)
	req.AddCookie(c)
	if r := e.browserDo(req); r.status != http.StatusUnauthorized {
		t.Errorf("session of a removed token: %d, want 401", r.status)
	}
}

// warp serve speaks plain HTTP: behind a TLS proxy the browser is on
// HTTPS, and the session cookie must be Secure so that it never rides a
// plain-HTTP request to that host. The proxy's word is enough.
func TestSessionCookieIsSecureBehindAnHTTPSProxy(t *testing.T) {
	e := sessionEnv(t)
	for _, c := range []struct {
		header, value string
		secure        bool
	}{
		{"", "", false},
		{"X-Forwarded-Proto", "https", true},
		{"X-Forwarded-Proto", "HTTPS, http", true},
		{"X-Forwarded-Proto", "http", false},
		{"Forwarded", `for=10.0.0.1;proto=https;host=warp.example`, true},
		{"Forwarded", `proto="https"`, true},
		{"Forwarded", `proto=http, proto=https`, false},
	} {
		h := map[string]string{}
		if c.header != "" {
			h[c.header] = c.value
		}
		if ck := sessionCookie(t, e.signIn(adminToken, "/", h)); ck.Secure != c.secure {
			t.Errorf("%s: %q: cookie Secure %v, want %v", c.header, c.value, ck.Secure, c.secure)
		}
	}
}

// Without tokens every page is open: the sign-in routes lead there.
func TestSignInWithoutTokensLeadsToThePage(t *testing.T) {
	e := newEnv(t, envOptions{sessions: true})
	if r := e.page("/signin?next=%2Fhosts", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/hosts" {
		t.Errorf("GET /signin without tokens: %d Location %q, want 303 /hosts", r.status, r.header.Get("Location"))
	}
}
