package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Role is what a caller may do. Routes declare the least role they need.
type Role int

// Roles, from least to most privileged.
const (
	// RoleOpen routes need no token (health checks).
	RoleOpen Role = iota
	// RoleAgent may claim, claim-next, heartbeat, release (with an epoch)
	// and complete.
	RoleAgent
	// RoleAdmin may do everything.
	RoleAdmin
	// RoleViewer reads what an admin reads (the API's GETs, the
	// dashboard, /metrics, the event stream) and writes nothing: a
	// dashboard session of a viewer token shows no action. It is not
	// ordered among the others: authorize checks it on its own.
	RoleViewer
)

// String returns the role's name as written in a token file.
func (r Role) String() string {
	switch r {
	case RoleOpen:
		return "open"
	case RoleAgent:
		return "agent"
	case RoleAdmin:
		return "admin"
	case RoleViewer:
		return "viewer"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Token is one bearer token and the role it grants.
type Token struct {
	Role   Role
	Secret string
}

// ParseTokens reads a token file: one `role:token` a line, role agent,
// admin or viewer; blank lines and lines starting with # are skipped. name is used in
// error messages (the file's path). A token may not appear twice.
func ParseTokens(name string, r io.Reader) ([]Token, error) {
	var out []Token
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		role, secret, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("token file %s line %d: want role:token (role agent, admin or viewer), got no colon", name, n)
		}
		var rl Role
		switch strings.TrimSpace(role) {
		case "agent":
			rl = RoleAgent
		case "admin":
			rl = RoleAdmin
		case "viewer":
			rl = RoleViewer
		default:
			return nil, fmt.Errorf("token file %s line %d: unknown role %q: want agent, admin or viewer", name, n, strings.TrimSpace(role))
		}
		secret = strings.TrimSpace(secret)
		if secret == "" {
			return nil, fmt.Errorf("token file %s line %d: empty token after %q", name, n, role+":")
		}
		if strings.IndexFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			// A Bearer header cannot carry it: the token could never be used.
			return nil, fmt.Errorf("token file %s line %d: token contains whitespace or a control character", name, n)
		}
		if prev, dup := seen[secret]; dup {
			return nil, fmt.Errorf("token file %s line %d: token repeats line %d", name, n, prev)
		}
		seen[secret] = n
		out = append(out, Token{Role: rl, Secret: secret})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", name, err)
	}
	return out, nil
}

// LoadTokenFile reads and parses the token file at path.
func LoadTokenFile(path string) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	return ParseTokens(path, f)
}

type roleKey struct{}

// CallerRole returns the role the request was authorised with: the role of
// its token, or RoleAdmin when the server has no tokens configured. Mounted
// handlers use it to refine their own checks.
func CallerRole(ctx context.Context) Role {
	r, _ := ctx.Value(roleKey{}).(Role)
	return r
}

// tokenIndex finds a presented secret's token in one step, whatever the
// number of tokens (a fleet may give every host its own): by the SHA-256
// of the secret, which is also the token's identity (warp.TokenID).
// Hashing first keeps the lookup's timing from leaking how much of a guess
// matches a real token, as comparing every token in constant time did: the
// map compares digests, and a digest's prefix says nothing of a secret's.
type tokenIndex map[[sha256.Size]byte]tokenEntry

type tokenEntry struct {
	role Role
	id   string // warp.TokenID of the secret
}

// authState is what the configured tokens decide: the index of bearer
// tokens, and the role of each token that may hold a dashboard session
// (admin and viewer), by identity. Server.SetTokens replaces it whole.
type authState struct {
	tokens tokenIndex
	// sessionRoles maps the TokenID of every admin and viewer token to
	// its role: a session opens pages only while the token that signed in
	// is one of them, with that token's current role.
	sessionRoles map[string]Role
}

func newAuthState(tokens []Token) *authState {
	a := &authState{tokens: newTokenIndex(tokens), sessionRoles: map[string]Role{}}
	for _, t := range tokens {
		if t.Role == RoleAdmin || t.Role == RoleViewer {
			a.sessionRoles[warp.TokenID(t.Secret)] = t.Role
		}
	}
	return a
}

// checkTokens refuses an empty secret, an unknown role and one secret
// with two roles (the later would win: an agent's token made admin).
func checkTokens(tokens []Token) error {
	roles := make(map[string]Role, len(tokens))
	for i, t := range tokens {
		if t.Secret == "" || (t.Role != RoleAgent && t.Role != RoleAdmin && t.Role != RoleViewer) {
			return fmt.Errorf("httpapi: token %d: want a non-empty secret with role agent, admin or viewer", i)
		}
		if r, dup := roles[t.Secret]; dup && r != t.Role {
			return fmt.Errorf("httpapi: token %d: its secret is also configured as %s: one secret, one role", i, r)
		}
		roles[t.Secret] = t.Role
	}
	return nil
}

// newTokenIndex indexes tokens; of two with one secret the later wins.
func newTokenIndex(tokens []Token) tokenIndex {
	ix := make(tokenIndex, len(tokens))
	for _, t := range tokens {
		ix[sha256.Sum256([]byte(t.Secret))] = tokenEntry{role: t.Role, id: warp.TokenID(t.Secret)}
	}
	return ix
}

// lookup returns the role of a presented secret and its token's identity.
func (ix tokenIndex) lookup(secret string) (role Role, id string, found bool) {
	e, found := ix[sha256.Sum256([]byte(secret))]
	return e.role, e.id, found
}
