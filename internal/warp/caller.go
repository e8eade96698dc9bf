package warp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Caller is who makes a request, as the HTTP layer authenticated it. The
// Service finds it in the request's context (WithCaller); calls without
// one (the CLI's own, tests, the simulator's embedded server) have full
// power.
type Caller struct {
	// Agent reports an agent-role token: its writes to a lease need proof
	// that it holds the lease (authorizeWrite). Admins, and servers
	// without tokens, are not checked.
	Agent bool
	// Token identifies the bearer token (TokenID); empty without one.
	Token string
	// LeaseSecret is the lease secret the request presents; empty for none.
	LeaseSecret string
	// WantsSecret: a claim that asks for a lease secret (every gyrum does;
	// an unmigrated client does not, and its lease is bound to its token).
	WantsSecret bool
	// Operator names the person behind an operator's write from the
	// dashboard (the session's name); the events the write records carry
	// it as "by". Empty for API calls.
	Operator string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries; ok false when none.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// TokenID is the identity recorded for a bearer token: its SHA-256, so
// the database never holds a usable token.
func TokenID(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newLeaseSecret returns a fresh lease secret and the hash stored for it.
func newLeaseSecret() (secret, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret = hex.EncodeToString(b[:])
	return secret, TokenID(secret)
}
