package httpapi_test

import (
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
