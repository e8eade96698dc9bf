package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpapi"
)

func TestParseTokens(t *testing.T) {
	got, err := httpapi.ParseTokens("tokens", strings.NewReader("# fleet tokens\n\nagent:a1\n  admin : root-1  \nagent:a2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []httpapi.Token{{Role: httpapi.RoleAgent, Secret: "a1"}, {Role: httpapi.RoleAdmin, Secret: "root-1"}, {Role: httpapi.RoleAgent, Secret: "a2"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("token %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseTokensRejectsBadLinesNamingFileAndLine(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"no colon", "agent:ok\njusttoken\n", "/etc/warp/tokens line 2"},
		{"unknown role", "# c\nroot:x\n", "line 2: unknown role \"root\""},
		{"empty token", "admin:\n", "line 1: empty token"},
		{"space in token", "admin:a b\n", "line 1: token contains whitespace"},
		{"duplicate", "admin:x\nagent:y\nagent:x\n", "line 3: token repeats line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := httpapi.ParseTokens("/etc/warp/tokens", strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/etc/warp/tokens") {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestLoadTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("admin:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := httpapi.LoadTokenFile(path)
	if err != nil || len(got) != 1 || got[0].Role != httpapi.RoleAdmin {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := httpapi.LoadTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// The ?token= exchange never sends the browser elsewhere, and takes only
// an admin token (an agent token used to buy a cookie too).
func TestTokenExchangeStaysOnTheServer(t *testing.T) {
	e := newEnv(t, withTokens())
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := client.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct{ path, want string }{
		{"//evil.example/?token=" + adminToken, "/evil.example/"},
		{"/%5Cevil.example/?token=" + adminToken, "/evil.example/"},
		{"/hosts?window=1h&token=" + adminToken, "/hosts?window=1h"},
	} {
		r := get(c.path)
		if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != c.want {
			t.Errorf("GET %s: %d Location %q, want 303 %q", c.path, r.StatusCode, r.Header.Get("Location"), c.want)
		}
	}
	r := get("/?token=" + agentToken)
	if r.StatusCode != http.StatusForbidden || r.Header.Get("Set-Cookie") != "" {
		t.Errorf("agent token: %d Set-Cookie %q, want 403 and no cookie", r.StatusCode, r.Header.Get("Set-Cookie"))
	}
}

// warp serve speaks plain HTTP: behind a TLS proxy the browser is on HTTPS,
// and the cookie (the admin token) must be Secure so that it never rides a
// plain-HTTP request to that host. The proxy's word is enough.
func TestTokenCookieIsSecureBehindAnHTTPSProxy(t *testing.T) {
	e := newEnv(t, withTokens())
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
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
		req, err := http.NewRequest("GET", e.srv.URL+"/?token="+adminToken, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.header != "" {
			req.Header.Set(c.header, c.value)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cookies := resp.Cookies()
		if len(cookies) != 1 || cookies[0].Secure != c.secure {
			t.Errorf("%s: %q: cookies %+v, want one with Secure %v", c.header, c.value, cookies, c.secure)
		}
	}
}
