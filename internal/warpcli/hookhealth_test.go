package warpcli_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
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
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-1", Epoch: 1, Host: "build-1", ActivityAgeS: ptr(0.0), HookSeen: ptr(false)})
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-2", Epoch: 1, Host: "build-1", ActivityAgeS: ptr(0.0)}) // an older loop
	s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T-3", Epoch: 1, Host: "build-2", ActivityAgeS: ptr(0.0), HookSeen: ptr(true), HookEvents: 7})
	s.clock.Advance(5*time.Minute + time.Second)

	r := s.run(t, nil, "ticket", "list", "--verdict", "unwired", "--json").mustSucceed(t)
	l := decode[client.TicketList](t, r.stdout)
	if len(l.Tickets) != 1 || l.Tickets[0].ID != "T-1" || l.Tickets[0].Verdict != "unwired" || l.Tickets[0].Lease.HookSeen != "no" {
		t.Fatalf("--verdict unwired: got %+v, want T-1 only", l.Tickets)
	}
	r = s.run(t, nil, "ticket", "list", "--verdict", "active", "--json").mustSucceed(t)
	if l := decode[client.TicketList](t, r.stdout); len(l.Tickets) != 2 {
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

// scrapeGauge reads one series of the server's /metrics.
func (s *server) scrapeGauge(t *testing.T, series string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return ""
}

func (s *server) sweep(t *testing.T) {
	t.Helper()
	res, err := s.Expiry.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Ops.OnSweep(res)
}

func TestHostAlarmInHostsCommandAPIAndMetrics(t *testing.T) {
	s := startServer(t, nil)
	hosts := map[string]string{"a": "build-1", "b": "build-1", "c": "build-1", "d": "build-2", "e": "build-3", "u": "build-4"}
	for id, h := range hosts {
		s.run(t, nil, "ticket", "create", id).mustSucceed(t)
		s.claim(t, id, h)
	}
	beat := func(id string, age time.Duration, seen bool) {
		s.heartbeat(t, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id, Epoch: 1, Host: hosts[id],
			ActivityAgeS: ptr(age.Seconds()), HookSeen: ptr(seen), HookEvents: 1})
	}
	s.clock.Advance(10 * time.Minute)
	for id := range hosts {
		beat(id, 0, id != "u")
	}
	s.clock.Advance(10 * time.Minute)
	for id := range hosts { // the hook stopped everywhere at 10m
		beat(id, 10*time.Minute, id != "u")
	}
	s.clock.Advance(6 * time.Minute)
	s.sweep(t)

	r := s.run(t, nil, "hosts", "--json").mustSucceed(t)
	l := decode[client.HostList](t, r.stdout)
	if l.Alarms != 1 || len(l.Hosts) != 4 {
		t.Fatalf("hosts: %d alarms over %d hosts, want 1 over 4:\n%s", l.Alarms, len(l.Hosts), r.stdout)
	}
	for _, h := range l.Hosts {
		switch h.Host {
		case "build-1":
			if h.Alarm == nil || h.Alarm.Message != "activity hook likely broken on build-1" || h.Alarm.Stale != 3 ||
				h.Leases != 3 || h.Verdicts["stalled"] != 3 || h.Hook.Seen != 3 || h.Adoption == nil || h.Adoption.V2Count != 6 {
				t.Errorf("build-1: %+v alarm %+v", h, h.Alarm)
			}
			if !h.Alarm.Since.Equal(s.clock.Now()) || h.Alarm.Fix != "run `gyrum doctor` on host build-1" {
				t.Errorf("build-1 alarm: %+v", h.Alarm)
			}
		case "build-4":
			if h.Alarm != nil || h.Verdicts["unwired"] != 1 || h.Hook.NotSeen != 1 {
				t.Errorf("build-4 (one unwired lease, below the minimum): %+v", h)
			}
		default:
			if h.Alarm != nil {
				t.Errorf("%s: one stale lease raised an alarm", h.Host)
			}
		}
	}
	r = s.run(t, nil, "hosts").mustSucceed(t)
	if !strings.Contains(r.stdout, "ALARM build-1 since") || !strings.Contains(r.stdout, "activity hook likely broken on build-1 (3 of 3 leases went stale together): run `gyrum doctor` on host build-1") {
		t.Errorf("hosts table:\n%s", r.stdout)
	}
	if strings.Count(r.stdout, "ALARM ") != 1 {
		t.Errorf("hosts table shows other alarms:\n%s", r.stdout)
	}
	if g := s.scrapeGauge(t, "warp_hosts_in_alarm"); g != "1" {
		t.Errorf("warp_hosts_in_alarm %s, want 1", g)
	}
	if g := s.scrapeGauge(t, `warp_claimed_leases{verdict="unwired"}`); g != "1" {
		t.Errorf(`warp_claimed_leases{verdict="unwired"} %s, want 1`, g)
	}

	// Activity returns on build-1.
	s.clock.Advance(time.Minute)
	for _, id := range []string{"a", "b", "c"} {
		beat(id, 0, true)
	}
	s.sweep(t)
	l = decode[client.HostList](t, s.run(t, nil, "hosts", "--json").mustSucceed(t).stdout)
	if l.Alarms != 0 {
		t.Errorf("after activity returned: %d alarms", l.Alarms)
	}
	if g := s.scrapeGauge(t, "warp_hosts_in_alarm"); g != "0" {
		t.Errorf("warp_hosts_in_alarm %s after clearing, want 0", g)
	}
	if !strings.Contains(s.log.String(), "activity hook likely broken on build-1") || !strings.Contains(s.log.String(), "host alarm cleared") {
		t.Errorf("server log does not show the alarm and its clearing:\n%s", s.log.String())
	}
	s.run(t, nil, "hosts", "--window", "0s").mustFail(t, warpcli.ExitUsage, "--window")
}
