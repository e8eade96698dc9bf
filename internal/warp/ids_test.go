package warp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

func TestValidTicketID(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"T-1", true},
		{"a", true},
		{"9", true},
		{"abc.DEF_ghi-0", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{"-T", false},
		{".T", false},
		{"_T", false},
		{"T 1", false},
		{"T/1", false},
		{"T\n", false},
		{"Tä", false},
		{"T:1", false},
	}
	for _, c := range cases {
		if got := warp.ValidTicketID(c.id); got != c.want {
			t.Errorf("ValidTicketID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}

// A v1 heartbeat has no exit report in its contract: an "exit" field that
// reaches the Service in a v1 heartbeat must not mark the agent exited.
func TestV1HeartbeatIgnoresExit(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir()+"/warp.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Claim(ctx, "T-1", warp.ClaimRequest{Agent: "O", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", Exit: warp.ExitParentExited}); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Ticket(ctx, "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if v.Lease.Exit != "" || v.Verdict == warp.VerdictExited {
		t.Fatalf("got exit %q verdict %s after a v1 heartbeat, want no exit and not exited", v.Lease.Exit, v.Verdict)
	}
}
