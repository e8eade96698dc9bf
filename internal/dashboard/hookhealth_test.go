package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/dashboard"
)

// beatHook sends a v2 heartbeat with the loop's hook report.
func (s *server) beatHook(tb testing.TB, id, host string, age time.Duration, seen bool) {
	tb.Helper()
	if _, err := s.client.Heartbeat(context.Background(), client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id, Epoch: 1,
		Host: host, Agent: "agent", ActivityAgeS: ptr(age.Seconds()), HookSeen: ptr(seen), HookEvents: 1}); err != nil {
		tb.Fatalf("heartbeat %s: %v", id, err)
	}
}

func TestUnwiredBadgeAndFix(t *testing.T) {
	s := startServer(t)
	s.create(t, "U", "never wired")
	s.claim(t, "U", "agent-U", "build-9")
	s.create(t, "W", "wired")
	s.claim(t, "W", "agent-W", "build-8")
	s.clk.Advance(10 * time.Minute)
	s.beatHook(t, "U", "build-9", 0, false)
	s.beatHook(t, "W", "build-8", 0, true)
	s.clk.Advance(6 * time.Minute)
	hc := &http.Client{}
	_, body, _ := get(t, hc, s.url+"/")
	fix := "run `gyrum doctor` on host build-9: the activity hook has not fired since the loop started"
	mustContain(t, "index", body, `<span class="badge v-unwired" data-field="verdict" title="`+fix+`">unwired</span>`,
		`class="chip v-unwired`)
	if strings.Count(body, "gyrum doctor") != 1 {
		t.Errorf("index: the fix shows for other rows too:\n%s", body)
	}
	_, body, _ = get(t, hc, s.url+"/?verdict=unwired")
	mustContain(t, "index filtered", body, `id="t-U"`)
	if strings.Contains(body, `id="t-W"`) {
		t.Errorf("?verdict=unwired lists the wired lease")
	}
	_, body, _ = get(t, hc, s.url+"/tickets/U")
	mustContain(t, "ticket", body, `<span class="badge v-unwired" id="verdict">unwired</span>`, `<dd class="fix" id="fix">`+fix+`</dd>`,
		"no (1 events)")
	_, body, _ = get(t, hc, s.url+"/tickets/W")
	if strings.Contains(body, `id="fix"`) {
		t.Errorf("ticket W (wired) shows a fix:\n%s", body)
	}
}

func TestHostsPageShowsAlarm(t *testing.T) {
	s := startServer(t)
	hosts := map[string]string{"a": "build-1", "b": "build-1", "c": "build-1", "d": "build-2"}
	for id, h := range hosts {
		s.create(t, id, id)
		s.claim(t, id, "agent-"+id, h)
	}
	s.clk.Advance(10 * time.Minute)
	for id, h := range hosts {
		s.beatHook(t, id, h, 0, true)
	}
	s.clk.Advance(10 * time.Minute)
	for id, h := range hosts { // the hook stopped at 10m on every lease
		s.beatHook(t, id, h, 10*time.Minute, true)
	}
	s.clk.Advance(6 * time.Minute)
	st := openStream(t, s.url)
	res := s.Sweep(t)
	if len(res.HostAlarms) != 1 || res.HostAlarms[0].Host != "build-1" {
		t.Fatalf("sweep alarms %+v, want build-1", res.HostAlarms)
	}
	m, _ := st.until(t, "the host alarm", func(m dashboard.Message) bool { return m.Kind == dashboard.KindHostAlarm })
	if m.To != "build-1" || m.Reason != "raised" {
		t.Errorf("stream: %+v, want host-alarm build-1 raised", m)
	}
	hc := &http.Client{}
	_, body, _ := get(t, hc, s.url+"/hosts")
	mustContain(t, "hosts", body, `<section id="alarms"`, `data-alarm="build-1"`, "activity hook likely broken on build-1",
		"3 of its 3 leases went stalled or unwired together", "Fix: run `gyrum doctor` on host build-1.",
		`<tr data-host="build-1" class="in-alarm" data-alarm="1">`, `<tr data-host="build-2">`)
	if strings.Contains(body, `data-alarm="build-2"`) {
		t.Errorf("build-2 (one stale lease) is in alarm:\n%s", body)
	}
	// Activity returns: the alarm is gone from the page.
	s.clk.Advance(time.Minute)
	s.beatHook(t, "a", "build-1", 0, true)
	res = s.Sweep(t)
	if len(res.HostAlarms) != 1 || res.HostAlarms[0].Raised {
		t.Fatalf("sweep after activity returned: %+v, want build-1 cleared", res.HostAlarms)
	}
	m, _ = st.until(t, "the clearing", func(m dashboard.Message) bool { return m.Kind == dashboard.KindHostAlarm })
	if m.To != "build-1" || m.Reason != "activity-returned" {
		t.Errorf("stream: %+v, want host-alarm build-1 activity-returned", m)
	}
	_, body, _ = get(t, hc, s.url+"/hosts")
	if strings.Contains(body, `id="alarms"`) || strings.Contains(body, "in-alarm") {
		t.Errorf("hosts page still shows the alarm:\n%s", body)
	}
}
