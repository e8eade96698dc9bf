package postgres_test

import (
	"context"
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestSmoke(t *testing.T) {
	db := openDB(t, postgres.Options{})
	ctx := context.Background()
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	tk, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1", Title: "x", Labels: []string{"b", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := svc.ClaimNext(ctx, warp.ClaimRequest{Agent: "O", Host: "h", Labels: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v %+v", tk, v)
	page, err := svc.ListTickets(ctx, warp.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", page)
	if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.Sweep(ctx)
	t.Logf("%+v %v", r, err)
	a, err := svc.Adoption(ctx, warp.DefaultAdoptionWindow)
	t.Logf("%+v %v", a, err)
}
