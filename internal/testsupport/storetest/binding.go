package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// A lease is bound to its claimant: an agent writes to it only with the
// lease secret its claim returned (or, for a client that asked for none,
// with the token that claimed); admins always may; and no error tells
// another agent who holds the ticket or which epoch it is at.
func testBinding(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	as := func(token, secret string, wants bool) context.Context {
		return warp.WithCaller(e.ctx, warp.Caller{Agent: true, Token: warp.TokenID(token), LeaseSecret: secret, WantsSecret: wants})
	}
	admin := warp.WithCaller(e.ctx, warp.Caller{Token: warp.TokenID("root")})
	hb := func(ctx context.Context, id string, epoch int64, v int) error {
		_, err := e.svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: v, Ticket: id, Epoch: epoch, ActivityAge: 1})
		return err
	}
	for _, id := range []string{"T-1", "T-2", "T-3"} {
		if _, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
	}

	// A claim that asks for a secret gets one, once; it is stored hashed.
	v, err := e.svc.Claim(as("tok-a", "", true), "T-1", warp.ClaimRequest{Agent: "A", Host: "hA"})
	if err != nil {
		t.Fatal(err)
	}
	secret := v.LeaseSecret
	l := e.lease("T-1")
	if len(secret) < 32 || l.SecretHash != warp.TokenID(secret) || l.Claimant != warp.TokenID("tok-a") || strings.Contains(l.SecretHash, secret) {
		t.Fatalf("claim: secret %q, lease claimant %q hash %q", secret, l.Claimant, l.SecretHash)
	}
	if again, _ := e.svc.Ticket(e.ctx, "T-1"); again.LeaseSecret != "" {
		t.Error("the secret is shown again after the claim")
	}
	for name, ctx := range map[string]context.Context{
		"another agent":               as("tok-b", "", false),
		"the same token, no secret":   as("tok-a", "", false),
		"a wrong secret":              as("tok-b", strings.Repeat("0", 64), false),
		"the secret of another lease": as("tok-b", "new", false),
	} {
		wantErr(t, name+": v2", hb(ctx, "T-1", 1, 2), warp.ErrNotHolder)
		wantErr(t, name+": v1", hb(ctx, "T-1", 0, 1), warp.ErrNotHolder)
		_, err := e.svc.Release(ctx, "T-1", 1, "hijack")
		wantErr(t, name+": release", err, warp.ErrNotHolder)
		_, err = e.svc.Complete(ctx, "T-1", 1, "")
		wantErr(t, name+": complete", err, warp.ErrNotHolder)
		if err != nil && (strings.Contains(err.Error(), `"A"`) || strings.Contains(err.Error(), "hA")) {
			t.Errorf("%s: the refusal names the holder: %v", name, err)
		}
	}
	if l := e.lease("T-1"); l.State != warp.LeaseHeld || l.LastHeartbeatAt != e.lease("T-1").ClaimedAt {
		t.Errorf("refused writes changed the lease: %+v", l)
	}
	// The holder, with its secret (whatever token carries it), and admins may.
	if err := hb(as("tok-a", secret, false), "T-1", 1, 2); err != nil {
		t.Errorf("holder's heartbeat: %v", err)
	}
	if err := hb(as("tok-c", secret, false), "T-1", 0, 1); err != nil {
		t.Errorf("holder's v1 heartbeat: %v", err)
	}
	if err := hb(admin, "T-1", 1, 2); err != nil {
		t.Errorf("admin heartbeat: %v", err)
	}

	// No disclosure to agents: a claim of a held ticket and a stale epoch.
	_, err = e.svc.Claim(as("tok-b", "", true), "T-1", warp.ClaimRequest{Agent: "B"})
	wantErr(t, "claim of a held ticket", err, warp.ErrConflict)
	if msg := warp.ErrorMessage(err); !strings.Contains(msg, "held by another agent") || strings.Contains(msg, "hA") || strings.Contains(msg, "epoch") {
		t.Errorf("claim conflict tells an agent %q", msg)
	}
	_, err = e.svc.Claim(admin, "T-1", warp.ClaimRequest{Agent: "X"})
	if msg := warp.ErrorMessage(err); !strings.Contains(msg, `"A"`) {
		t.Errorf("an admin is not told who holds it: %q", msg)
	}
	if _, err := e.svc.Release(as("tok-a", secret, false), "T-1", 1, "done"); err != nil {
		t.Fatalf("holder's release: %v", err)
	}
	if _, err := e.svc.Claim(as("tok-b", "", true), "T-1", warp.ClaimRequest{Agent: "B"}); err != nil {
		t.Fatal(err)
	}
	err = hb(as("tok-a", secret, false), "T-1", 1, 2)
	wantErr(t, "old holder, stale epoch", err, warp.ErrStaleEpoch)
	if msg := warp.ErrorMessage(err); strings.Contains(msg, "current epoch is") || strings.Contains(msg, "2") {
		t.Errorf("stale epoch tells an agent %q", msg)
	}

	// An unmigrated client asks for no secret: its lease is bound to its token.
	if _, err := e.svc.Claim(as("tok-old", "", false), "T-2", warp.ClaimRequest{Agent: "O"}); err != nil {
		t.Fatal(err)
	}
	if l := e.lease("T-2"); l.SecretHash != "" {
		t.Fatalf("a claim without a secret got hash %q", l.SecretHash)
	}
	if err := hb(as("tok-old", "", false), "T-2", 0, 1); err != nil {
		t.Errorf("the old loop's v1 heartbeat with its own token: %v", err)
	}
	wantErr(t, "another token on an unbound lease", hb(as("tok-b", "", false), "T-2", 0, 1), warp.ErrNotHolder)

	// Calls without a caller (embedded servers, the CLI's tests) keep full power.
	if _, err := e.svc.Claim(e.ctx, "T-3", warp.ClaimRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := hb(e.ctx, "T-3", 1, 2); err != nil {
		t.Errorf("no caller: %v", err)
	}

	// A write to an ended lease says how it ended (a loop tells its agent
	// at once), and why only to whoever may write to it.
	if _, err := e.svc.Release(admin, "T-3", 1, "operator: rebalancing"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		ctx    context.Context
		reason string
	}{{"admin", admin, "operator: rebalancing"}, {"another agent", as("tok-x", "", false), ""}} {
		err := hb(c.ctx, "T-3", 1, 2)
		wantErr(t, c.name+": heartbeat to an ended lease", err, warp.ErrLeaseEnded)
		var we *warp.Error
		if !errors.As(err, &we) || we.Detail[warp.DetailLeaseState] != "released" || we.Detail[warp.DetailEndReason] != c.reason {
			t.Errorf("%s: detail of the 410: %+v, want released and reason %q", c.name, we, c.reason)
		}
	}
}

// One agent token cannot flood the adoption table: a heartbeat naming one
// host more than the bound allows is refused (the table keeps what it
// had), hosts it reported before stay usable, another token has its own
// bound, admins have none, and hosts leave the count once unseen for the
// adoption window.
func testHostBound(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open, func(c *warp.Config) { c.MaxHostsPerToken = 3 })
	as := func(token string) context.Context {
		return warp.WithCaller(e.ctx, warp.Caller{Agent: true, Token: warp.TokenID(token)})
	}
	e.create("T-1")
	if _, err := e.svc.Claim(as("tok-a"), "T-1", warp.ClaimRequest{}); err != nil {
		t.Fatal(err)
	}
	hb := func(ctx context.Context, host string) error {
		_, err := e.svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", Host: host})
		return err
	}
	for _, h := range []string{"h1", "h2", "h3", "h1", "h3"} {
		if err := hb(as("tok-a"), h); err != nil {
			t.Fatalf("host %s within the bound: %v", h, err)
		}
	}
	err := hb(as("tok-a"), "h4")
	wantErr(t, "a fourth host", err, warp.ErrTooManyHosts)
	if msg := warp.ErrorMessage(err); !strings.Contains(msg, "at most 3") || !strings.Contains(msg, "--max-hosts-per-token") {
		t.Errorf("message %q", msg)
	}
	a, err := e.svc.Adoption(e.ctx, warp.DefaultAdoptionWindow)
	if err != nil || a.HostCount != 3 {
		t.Fatalf("adoption after the refusal: %d hosts, %v; want 3", a.HostCount, err)
	}
	if err := hb(as("tok-a"), "h2"); err != nil {
		t.Errorf("a known host after the refusal: %v", err)
	}
	// The bound is per token; admins are not bound.
	if err := hb(warp.WithCaller(e.ctx, warp.Caller{Token: warp.TokenID("root")}), "admin-host"); err != nil {
		t.Errorf("admin: %v", err)
	}
	// A day later the old hosts no longer count.
	e.clock.Advance(warp.DefaultAdoptionWindow + time.Minute)
	if err := hb(as("tok-a"), "h4"); err != nil {
		t.Errorf("a new host after the window: %v", err)
	}
}
