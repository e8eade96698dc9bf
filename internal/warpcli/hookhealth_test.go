package warpcli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

func TestUnwiredVerdictInListAndShow(t *testing.T) {
	s := startServer(t, nil)
	for _, id := range []string{"T-1", "T-2", "T-3"} {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
	}
	s.claim(t, "T-1", "build-1")
	s.claim(t, "T-2", "build-1")
	s.claim(t, "T-3", "build-2")
	s.clock.Advance(10 * time.Minute)
	s.heartbeat(t, httpapi.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-1", Epoch: 1, Host: "build-1", ActivityAgeS: ptr(0.0), HookSeen: ptr(false)})
	s.heartbeat(t, httpapi.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-2", Epoch: 1, Host: "build-1", ActivityAgeS: ptr(0.0)}) // an older loop
	s.heartbeat(t, httpapi.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-3", Epoch: 1, Host: "build-2", ActivityAgeS: ptr(0.0), HookSeen: ptr(true), HookEvents: 7})
	s.clock.Advance(5*time.Minute + time.Second)

	r := s.run(t, nil, "ticket", "list", "--verdict", "unwired", "--json").mustSucceed(t)
	l := decode[httpapi.TicketList](t, r.stdout)
	if len(l.Tickets) != 1 || l.Tickets[0].ID != "T-1" || l.Tickets[0].Verdict != "unwired" || l.Tickets[0].Lease.HookSeen != "no" {
		t.Fatalf("--verdict unwired: got %+v, want T-1 only", l.Tickets)
	}
	r = s.run(t, nil, "ticket", "list", "--verdict", "active", "--json").mustSucceed(t)
	if l := decode[httpapi.TicketList](t, r.stdout); len(l.Tickets) != 2 {
		t.Fatalf("--verdict active: got %+v, want T-2 (no hook fields: as before) and T-3", l.Tickets)
	}
	r = s.run(t, nil, "ticket", "list").mustSucceed(t)
	if !strings.Contains(r.stdout, "unwired (T-1): the activity hook has not fired since the loop started: run `gyrum doctor` on host build-1") {
		t.Errorf("list does not show the fix:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "build-2:") || strings.Contains(r.stdout, "(T-2)") {
		t.Errorf("list shows a fix for a wired lease:\n%s", r.stdout)
	}
	r = s.run(t, nil, "ticket", "show", "T-1").mustSucceed(t)
	for _, want := range []string{"unwired", "run `gyrum doctor` on host build-1", "not fired since the loop started"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show T-1 does not contain %q:\n%s", want, r.stdout)
		}
	}
	r = s.run(t, nil, "ticket", "show", "T-3").mustSucceed(t)
	if !strings.Contains(r.stdout, "fired since the loop started (7 events reported)") || strings.Contains(r.stdout, "gyrum doctor") {
		t.Errorf("show T-3:\n%s", r.stdout)
	}
	r = s.run(t, nil, "ticket", "show", "T-2").mustSucceed(t)
	if !strings.Contains(r.stdout, "not reported") {
		t.Errorf("show T-2 (older loop):\n%s", r.stdout)
	}
	s.run(t, nil, "ticket", "list", "--verdict", "wired").mustFail(t, warpcli.ExitUsage, "unwired")
}
