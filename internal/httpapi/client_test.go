package httpapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The public client against a real warp with tokens, the way an
// integrator's loop uses it: create, claim with a lease secret, heartbeat
// with it, and read every refusal through the package's error values.
func TestClientAgainstARealServer(t *testing.T) {
	srv := warptest.StartWithTokens(t, warp.DefaultPolicy(), []httpapi.Token{
		{Role: httpapi.RoleAdmin, Secret: "admin-secret"},
		{Role: httpapi.RoleAgent, Secret: "agent-one"},
		{Role: httpapi.RoleAgent, Secret: "agent-two"},
	})
	ctx := context.Background()
	admin := client.NewClient(srv.URL(), "admin-secret")
	if _, err := admin.CreateTicket(ctx, client.CreateTicketRequest{ID: "T-1", Title: "one"}); err != nil {
		t.Fatal(err)
	}
	one := client.NewClient(srv.URL(), "agent-one")
	tk, err := one.Claim(ctx, "T-1", client.ClaimRequest{Agent: "a", Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Lease == nil || tk.Lease.Epoch != 1 || tk.LeaseSecret == "" {
		t.Fatalf("claim answered %+v, want epoch 1 with a lease secret", tk)
	}
	v2, age := 2, 1.0
	hb := client.HeartbeatRequest{SchemaVersion: &v2, Ticket: "T-1", Epoch: 1, Host: "h1", ActivityAgeS: &age}
	res, err := one.WithLeaseSecret(tk.LeaseSecret).Heartbeat(ctx, hb)
	if err != nil || !res.Extended || res.Verdict != "active" {
		t.Fatalf("heartbeat with the secret: %+v %v", res, err)
	}

	// Refusals unwrap to the package's error values.
	_, err = client.NewClient(srv.URL(), "agent-two").Heartbeat(ctx, hb)
	if !errors.Is(err, client.ErrNotHolder) {
		t.Errorf("another agent's heartbeat: %v, want ErrNotHolder", err)
	}
	stale := hb
	stale.Epoch = 7
	if _, err := one.WithLeaseSecret(tk.LeaseSecret).Heartbeat(ctx, stale); !errors.Is(err, client.ErrStaleEpoch) {
		t.Errorf("stale epoch: %v, want ErrStaleEpoch", err)
	}
	if _, err := one.Claim(ctx, "T-1", client.ClaimRequest{Agent: "b"}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("claiming a claimed ticket: %v, want ErrConflict", err)
	}
	if _, err := client.NewClient(srv.URL(), "nope").Ticket(ctx, "T-1"); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("unknown token: %v, want ErrUnauthorized", err)
	}
	if _, err := admin.Release(ctx, "T-1", client.ReleaseRequest{Reason: "operator"}); err != nil {
		t.Fatal(err)
	}
	_, err = one.WithLeaseSecret(tk.LeaseSecret).Heartbeat(ctx, hb)
	var ae *client.APIError
	if !errors.Is(err, client.ErrLeaseEnded) || !errors.As(err, &ae) ||
		ae.DetailValue(client.DetailLeaseState) != "released" || ae.DetailValue(client.DetailEndReason) != "operator" {
		t.Errorf("heartbeat after the release: %v (%+v), want ErrLeaseEnded with lease_state and end_reason", err, ae)
	}
	mode, err := admin.Mode(ctx)
	if err != nil || mode == "" {
		t.Errorf("mode: %q %v", mode, err)
	}
}

// An operator's edit, cancel and reopen through the public client against
// a real warp: admin only, the holder's loop told of the cancel, the
// listing by labels.
func TestClientTicketOperations(t *testing.T) {
	srv := warptest.StartWithTokens(t, warp.DefaultPolicy(), []httpapi.Token{
		{Role: httpapi.RoleAdmin, Secret: "admin-secret"},
		{Role: httpapi.RoleAgent, Secret: "agent-one"},
	})
	ctx := context.Background()
	admin := client.NewClient(srv.URL(), "admin-secret")
	agent := client.NewClient(srv.URL(), "agent-one")
	for _, id := range []string{"T-1", "T-2"} {
		if _, err := admin.CreateTicket(ctx, client.CreateTicketRequest{ID: id, Labels: []string{"go"}}); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := admin.EditTicket(ctx, "T-1", client.EditTicketRequest{Title: client.Ptr("one"), AddLabels: []string{"db"}})
	if err != nil || tk.Title != "one" || len(tk.Labels) != 2 {
		t.Fatalf("edit: %+v, %v", tk, err)
	}
	page, err := admin.ListTickets(ctx, client.ListOptions{Labels: []string{"go", "db"}})
	if err != nil || len(page.Tickets) != 1 || page.Tickets[0].ID != "T-1" {
		t.Errorf("list by labels go and db: %+v, %v", page.Tickets, err)
	}
	if _, err := agent.EditTicket(ctx, "T-1", client.EditTicketRequest{Title: client.Ptr("x")}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("an agent's edit: %v, want forbidden", err)
	}
	if _, err := agent.CancelTicket(ctx, "T-1", client.TicketChangeRequest{}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("an agent's cancel: %v, want forbidden", err)
	}
	claimed, err := agent.Claim(ctx, "T-1", client.ClaimRequest{Agent: "a", Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	tk, err = admin.CancelTicket(ctx, "T-1", client.TicketChangeRequest{Reason: "superseded"})
	if err != nil || tk.State != "cancelled" || tk.Lease.State != "released" || tk.Lease.EndReason != "cancelled: superseded" {
		t.Fatalf("cancel: %+v, %v", tk, err)
	}
	var ae *client.APIError
	_, err = agent.WithLeaseSecret(claimed.LeaseSecret).Heartbeat(ctx, client.NewHeartbeat("T-1", 1, 0))
	if !errors.As(err, &ae) || ae.DetailValue(client.DetailEndReason) != "cancelled: superseded" {
		t.Errorf("the holder's heartbeat after the cancel: %v, want lease_ended with the cancel's reason", err)
	}
	if _, err := agent.ClaimNext(ctx, client.ClaimNextRequest{Labels: []string{"db"}}); !errors.Is(err, client.ErrNoOpenTicket) {
		t.Errorf("claim-next of the cancelled ticket's label: %v, want no open ticket", err)
	}
	if _, err := admin.ReopenTicket(ctx, "T-2", client.TicketChangeRequest{}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("reopen of an open ticket: %v, want conflict", err)
	}
	if tk, err = admin.ReopenTicket(ctx, "T-1", client.TicketChangeRequest{Reason: "wanted after all"}); err != nil || tk.State != "open" {
		t.Fatalf("reopen: %+v, %v", tk, err)
	}
	if tk, err = agent.ClaimNext(ctx, client.ClaimNextRequest{Labels: []string{"db"}}); err != nil || tk.ID != "T-1" || tk.Epoch != 2 {
		t.Errorf("claim-next after the reopen: %+v, %v", tk, err)
	}
}
