package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpapi"
)

// FuzzRequestBodies sends fuzzed bodies to every route that takes one, on
// a real server with a claimed ticket: no panic, never a 5xx, and every
// error answer is the JSON error format.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1}`, `{"ticket":"T-1"}`,
		`{"schema_version":3}`, `{"title":"x","labels":["a"]}`, `{"agent":"a","host":"h"}`, `{"epoch":1,"reason":"r"}`,
		`{"mode":"activity","force":true}`, `{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1e309}`,
		"{\"ticket\":\"T-1\",\"host\":\"\\u0000\"}", `[]`, ``, `{"a":1}{"b":2}`, `{"hook_events":9223372036854775807}`} {
		f.Add([]byte(s), uint8(0))
	}
	e := newEnv(f, envOptions{})
	e.create("T-1")
	e.claim("T-1", "h")
	routes := []struct{ method, path string }{
		{"POST", "/v1/heartbeat"}, {"POST", "/heartbeat"}, {"POST", "/v1/tickets"}, {"POST", "/v1/tickets/T-1/claim"},
		{"POST", "/v1/claims/next"}, {"POST", "/v1/tickets/T-1/release"}, {"POST", "/v1/tickets/T-1/complete"}, {"PUT", "/v1/mode"},
	}
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		r := routes[int(route)%len(routes)]
		req, err := http.NewRequest(r.method, e.srv.URL+r.path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s %q: %d %s", r.method, r.path, body, resp.StatusCode, data)
		}
		if resp.StatusCode >= 400 {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(data, &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %s: error answer %d %q is not the JSON error format", r.method, r.path, resp.StatusCode, data)
			}
		}
	})
}

// FuzzParseTokens: a token file either parses into usable tokens or is
// refused with an error naming the file; never a panic, never an empty
// secret.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"agent:a1\nadmin:root\n", "# c\n\n", "agent:", ":x", "admin : a b", "bogus:x", "agent:a\r\nadmin:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks, err := httpapi.ParseTokens("tokens", strings.NewReader(s))
		if err != nil {
			if !strings.Contains(err.Error(), "tokens") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, tk := range toks {
			if tk.Secret == "" || strings.ContainsAny(tk.Secret, " \t\r\n") || (tk.Role != httpapi.RoleAgent && tk.Role != httpapi.RoleAdmin) {
				t.Fatalf("token %+v from %q", tk, s)
			}
		}
	})
}
