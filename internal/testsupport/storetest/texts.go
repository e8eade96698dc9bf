package storetest

import (
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Every free-text field follows one rule on both stores: valid UTF-8, no
// NUL, bounded. PostgreSQL used to answer a NUL with 500 (which a loop
// retries forever) while SQLite stored it.
func testTexts(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open)
	e.createClaim("T-1", "h1")
	before := e.lease("T-1")
	bad := []string{"a\x00b", "\xff\xfe", strings.Repeat("x", 5000)}
	for _, v := range bad {
		calls := map[string]func() error{
			"title": func() error { _, err := e.svc.CreateTicket(e.ctx, warp.NewTicket{ID: "T-2", Title: v}); return err },
			"claim agent": func() error {
				_, err := e.svc.Claim(e.ctx, "T-1", warp.ClaimRequest{Agent: v})
				return err
			},
			"claim-next host": func() error {
				_, err := e.svc.ClaimNext(e.ctx, warp.ClaimRequest{Host: v})
				return err
			},
			"heartbeat host": func() error {
				_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: v})
				return err
			},
			"heartbeat in_flight": func() error {
				_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, InFlight: v})
				return err
			},
			"v1 heartbeat agent": func() error {
				_, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1", Agent: v})
				return err
			},
			"release reason":  func() error { _, err := e.svc.Release(e.ctx, "T-1", 1, v); return err },
			"complete pr_url": func() error { _, err := e.svc.Complete(e.ctx, "T-1", 1, v); return err },
		}
		for name, call := range calls {
			wantErr(t, name+" "+clipText(v), call(), warp.ErrInvalid)
		}
	}
	if _, err := e.svc.Ticket(e.ctx, "T-2"); err == nil {
		t.Error("a ticket with a bad title was created")
	}
	after := e.lease("T-1")
	if after.State != warp.LeaseHeld || !after.LastHeartbeatAt.Equal(before.LastHeartbeatAt) || after.Host != before.Host || after.InFlight != before.InFlight {
		t.Errorf("bad input changed the lease: before %+v after %+v", before, after)
	}
	// Every other character is fine, on both stores.
	good := "tab\there, é, 漢字, emoji 🚀, <script>, ESC \x1b[31m"
	if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: good, InFlight: good}); err != nil {
		t.Fatalf("heartbeat with text %q: %v", good, err)
	}
	if l := e.lease("T-1"); l.InFlight != good {
		t.Errorf("in_flight round trip: got %q, want %q", l.InFlight, good)
	}
}

func clipText(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}
