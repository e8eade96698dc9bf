package warpcli_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An error answer's text reaches the terminal in the error message: a
// proxy's page (or a hostile server) carrying terminal escapes (OSC 52
// writes the clipboard, CSI 2J clears the screen) is printed inert.
func TestErrorTextFromTheServerIsPrintedInert(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("bad gateway \x1b]52;c;ZXZpbA==\x07 \x1b[2J"))
	}))
	defer srv.Close()
	r := runCLI(t, map[string]string{"WARP_URL": srv.URL}, nil, "mode")
	if r.code == 0 || strings.ContainsAny(r.stderr, "\x1b\x07") || !strings.Contains(r.stderr, `\x1b]52`) {
		t.Errorf("exit %d, stderr %q: want a failure with the escapes shown as text", r.code, r.stderr)
	}
}
