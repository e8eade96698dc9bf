package storetest

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/gyrum-labs/warp/internal/warp"
)

// SeedCountedHosts claims five tickets on hosts h1 and h2 through svc, with
// hook health unknown, yes, no, yes, unknown, and returns the hosts
// overview: the fixture of each store's test that its counts migration
// backfills what the writes would have counted (compare with SameHosts
// after rolling the schema back and migrating again).
func SeedCountedHosts(t *testing.T, svc *warp.Service) []warp.HostStatus {
	t.Helper()
	ctx := context.Background()
	yes, no := true, false
	for i, hook := range []*bool{nil, &yes, &no, &yes, nil} {
		id := fmt.Sprintf("M-%d", i)
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: []string{"h1", "h2"}[i%2]}); err != nil {
			t.Fatal(err)
		}
		if hook != nil {
			if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, HookSeen: hook}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hs, err := svc.Hosts(ctx, warp.DefaultAdoptionWindow)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].HookSeen[warp.HookUnknown] != 2 || hs[0].HookSeen[warp.HookNo] != 1 || hs[1].HookSeen[warp.HookYes] != 2 {
		t.Fatalf("the fixture is not what the test means: %+v", hs)
	}
	return hs
}

// SameHosts checks that svc's hosts overview equals want: hosts, held
// leases, verdicts and hook health.
func SameHosts(t *testing.T, svc *warp.Service, want []warp.HostStatus) {
	t.Helper()
	got, err := svc.Hosts(context.Background(), warp.DefaultAdoptionWindow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("hosts: got %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Host != w.Host || g.Leases != w.Leases || !maps.Equal(g.Verdicts, w.Verdicts) || !maps.Equal(g.HookSeen, w.HookSeen) {
			t.Errorf("host %s: %d leases %v hook %v; want %s: %d %v %v", g.Host, g.Leases, g.Verdicts, g.HookSeen, w.Host, w.Leases, w.Verdicts, w.HookSeen)
		}
	}
}
