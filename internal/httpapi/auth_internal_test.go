package httpapi

import (
	"fmt"
	"testing"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The index answers every token with its role and its identity as warp
// knows it (the claimant a lease stores), nothing for a secret it does not
// hold, and the later of two tokens with one secret, as the server's
// token list means (WARP_TOKEN's admin token comes after the file's).
func TestTokenIndex(t *testing.T) {
	ix := newTokenIndex([]Token{{RoleAgent, "a1"}, {RoleAdmin, "root"}, {RoleAgent, "a2"}, {RoleAdmin, "a2"}})
	for _, c := range []struct {
		secret string
		role   Role
	}{{"a1", RoleAgent}, {"root", RoleAdmin}, {"a2", RoleAdmin}} {
		role, id, ok := ix.lookup(c.secret)
		if !ok || role != c.role || id != warp.TokenID(c.secret) {
			t.Errorf("%q: %v %q %v, want %v and warp.TokenID's %q", c.secret, role, id, ok, c.role, warp.TokenID(c.secret))
		}
	}
	for _, s := range []string{"", "a", "a1 ", "A1", "root\x00"} {
		if role, id, ok := ix.lookup(s); ok || role != RoleOpen || id != "" {
			t.Errorf("%q: %v %q %v, want nothing", s, role, id, ok)
		}
	}
}

// BenchmarkTokenLookup: one lookup among n configured tokens (a fleet
// that gives every host a token has thousands). The cost must not grow
// with n.
func BenchmarkTokenLookup(b *testing.B) {
	for _, n := range []int{1, 1000, 10000} {
		tokens := make([]Token, n)
		for i := range tokens {
			tokens[i] = Token{RoleAgent, fmt.Sprintf("agent-token-%032d", i)}
		}
		ix := newTokenIndex(tokens)
		want := tokens[n/2].Secret
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, ok := ix.lookup(want); !ok {
					b.Fatal("not found")
				}
			}
		})
	}
}
