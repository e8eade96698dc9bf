package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// beat sends a v2 heartbeat for id from host with activity age and the
// loop's hook_seen.
func (e *env) beat(id, host string, age time.Duration, seen bool) {
	e.t.Helper()
	if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: e.view(id).Ticket.Epoch,
		Host: host, Agent: "a", ActivityAge: age.Seconds(), HookSeen: &seen}); err != nil {
		e.t.Fatalf("heartbeat %s: %v", id, err)
	}
}

// pass runs the verdict pass and returns its alarm changes.
func (e *env) pass() []warp.HostAlarmChange {
	e.t.Helper()
	p, err := e.svc.VerdictPass(e.ctx)
	if err != nil {
		e.t.Fatalf("verdict pass: %v", err)
	}
	return p.Alarms
}

// globalEvents returns the global events of kind.
func (e *env) globalEvents(kind warp.EventKind) []warp.Event {
	e.t.Helper()
	var out []warp.Event
	e.read(func(tx warp.Tx) error {
		evs, err := tx.Events(e.ctx, "", 0, 1000)
		for _, ev := range evs {
			if ev.Kind == kind {
				out = append(out, ev)
			}
		}
		return err
	})
	return out
}

func (e *env) hostStatus(host string) warp.HostStatus {
	e.t.Helper()
	hs, err := e.svc.Hosts(e.ctx, warp.DefaultAdoptionWindow)
	if err != nil {
		e.t.Fatalf("hosts: %v", err)
	}
	for _, h := range hs {
		if h.Host == host {
			return h
		}
	}
	e.t.Fatalf("hosts: no %s in %+v", host, hs)
	return warp.HostStatus{}
}

func testHostAlarms(t *testing.T, open func(t *testing.T) warp.Store) {
	// Policy: stall 15m, silent 9m. Claims at T0; at 10m every loop reports
	// fresh activity; at 20m they report it 10m old (the hook stopped): the
	// leases turn stalled at 25m while their loops still heartbeat.
	stopHook := func(e *env, hosts map[string]string) {
		e.t.Helper()
		for id, h := range hosts {
			e.create(id)
			e.claim(id, h)
		}
		e.clock.Advance(10 * time.Minute)
		for id, h := range hosts {
			e.beat(id, h, 0, true)
		}
		e.clock.Advance(10 * time.Minute)
		for id, h := range hosts {
			e.beat(id, h, 10*time.Minute, true)
		}
	}

	t.Run("RaisedOnceClearedWhenActivityReturns", func(t *testing.T) {
		e := newEnv(t, open)
		stopHook(e, map[string]string{"a": "h1", "b": "h1", "c": "h1", "d": "h2", "e": "h3"})
		e.clock.Advance(5 * time.Minute)
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("at the stall threshold itself: alarms %+v, want none", got)
		}
		e.clock.Advance(time.Minute)
		got := e.pass()
		if len(got) != 1 || got[0].Host != "h1" || !got[0].Raised || got[0].Leases != 3 || got[0].Stale != 3 {
			t.Fatalf("three stalled leases on h1, one on h2 and h3: got %+v, want one alarm for h1 (3 of 3)", got)
		}
		raisedAt := e.clock.Now()
		evs := e.globalEvents(warp.EventHostAlarm)
		if len(evs) != 1 || evs[0].Data != (warp.HostAlarmData{Host: "h1", Leases: 3, Stale: 3, Message: "activity hook likely broken on h1"}) ||
			evs[0].ID != got[0].EventID || !evs[0].At.Equal(raisedAt) {
			t.Fatalf("host-alarm events: got %+v, want h1's, 3 of 3 leases stale", evs)
		}
		// Later passes and a server restart do not raise it again.
		e.clock.Advance(30 * time.Second)
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("second pass: %+v", got)
		}
		e.start()
		e.clock.Advance(30 * time.Second)
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("pass after a restart: %+v", got)
		}
		if n := len(e.globalEvents(warp.EventHostAlarm)); n != 1 {
			t.Fatalf("host-alarm events after restart: %d, want 1", n)
		}
		h1 := e.hostStatus("h1")
		if h1.Alarm == nil || !h1.Alarm.Since.Equal(raisedAt) || h1.Leases != 3 || h1.Verdicts[warp.VerdictStalled] != 3 || h1.HookSeen[warp.HookYes] != 3 {
			t.Errorf("hosts h1: got %+v alarm %+v", h1, h1.Alarm)
		}
		if h1.Adoption == nil || h1.Adoption.V2Count != 6 {
			t.Errorf("hosts h1 adoption: got %+v, want 6 v2 heartbeats", h1.Adoption)
		}
		if h2 := e.hostStatus("h2"); h2.Alarm != nil || h2.Verdicts[warp.VerdictStalled] != 1 {
			t.Errorf("hosts h2: got %+v", h2)
		}
		// The hook works again on one lease: the others are still stale but
		// no longer most of the host's within the window — cleared.
		e.beat("a", "h1", 0, true)
		got = e.pass()
		if len(got) != 1 || got[0].Host != "h1" || got[0].Raised || got[0].Reason != warp.AlarmClearedActivity || !got[0].Since.Equal(raisedAt) {
			t.Fatalf("activity returns: got %+v, want h1 cleared (activity-returned)", got)
		}
		cl := e.globalEvents(warp.EventHostAlarmCleared)
		if len(cl) != 1 || cl[0].Data.(warp.HostAlarmClearedData).Host != "h1" || cl[0].Data.(warp.HostAlarmClearedData).Reason != warp.AlarmClearedActivity {
			t.Fatalf("host-alarm-cleared events: got %+v", cl)
		}
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("pass after clearing: %+v", got)
		}
		if h1 := e.hostStatus("h1"); h1.Alarm != nil {
			t.Errorf("hosts h1 after clearing: alarm %+v", h1.Alarm)
		}
	})

	t.Run("Thresholds", func(t *testing.T) {
		e := newEnv(t, open)
		hosts := map[string]string{}
		for i := range 2 { // two leases: below the minimum of 3
			hosts[fmt.Sprintf("two-%d", i)] = "two"
		}
		for i := range 5 { // five leases, four stale: 80 %
			hosts[fmt.Sprintf("four-%d", i)] = "four"
		}
		for i := range 5 { // five leases, three stale: 60 %
			hosts[fmt.Sprintf("three-%d", i)] = "three"
		}
		stopHook(e, hosts)
		for _, id := range []string{"four-4", "three-3", "three-4"} {
			e.beat(id, hosts[id], 0, true) // still working
		}
		e.clock.Advance(6 * time.Minute)
		got := e.pass()
		if len(got) != 1 || got[0].Host != "four" || got[0].Leases != 5 || got[0].Stale != 4 {
			t.Fatalf("got %+v, want one alarm: four (4 of 5)", got)
		}
	})

	// A pass tallies only the hosts that may have moved; a host whose
	// working leases end (no verdict change at all) is one of them: fewer
	// held leases make the stale ones most of the host's.
	t.Run("RaisedWhenTheWorkingLeasesEnd", func(t *testing.T) {
		e := newEnv(t, open)
		hosts := map[string]string{}
		for i := range 5 { // five leases, three stale: 60 %
			hosts[fmt.Sprintf("three-%d", i)] = "three"
		}
		stopHook(e, hosts)
		e.beat("three-3", "three", 0, true)
		e.beat("three-4", "three", 0, true)
		e.clock.Advance(6 * time.Minute)
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("three of five stale: got %+v, want no alarm", got)
		}
		e.clock.Advance(time.Second)
		for _, id := range []string{"three-3", "three-4"} {
			if _, err := e.svc.Release(e.ctx, id, 0, "done"); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(time.Second)
		got := e.pass()
		if len(got) != 1 || got[0].Host != "three" || !got[0].Raised || got[0].Leases != 3 || got[0].Stale != 3 {
			t.Fatalf("the two working leases released: got %+v, want an alarm for three (3 of 3)", got)
		}
	})

	t.Run("ConfiguredThresholds", func(t *testing.T) {
		e := newEnv(t, open, func(c *warp.Config) { c.HookAlarm = warp.HookAlarm{Ratio: 1, Min: 2} })
		stopHook(e, map[string]string{"a": "h1", "b": "h1", "c": "h2", "d": "h2", "e": "h2"})
		e.beat("e", "h2", 0, true)
		e.clock.Advance(6 * time.Minute)
		got := e.pass()
		if len(got) != 1 || got[0].Host != "h1" {
			t.Fatalf("ratio 1, min 2: got %+v, want h1 only (h2 has 2 of 3)", got)
		}
	})

	t.Run("Unwired", func(t *testing.T) {
		// New leases on a host whose hook never fires: they turn unwired at
		// claim + 15m while their loops still heartbeat.
		e := newEnv(t, open)
		for _, id := range []string{"a", "b", "c"} {
			e.createClaim(id, "h1")
		}
		e.clock.Advance(4 * time.Minute)
		for _, id := range []string{"a", "b", "c"} {
			e.beat(id, "h1", 4*time.Minute, false)
		}
		e.clock.Advance(8 * time.Minute)
		for _, id := range []string{"a", "b", "c"} {
			e.beat(id, "h1", 12*time.Minute, false)
		}
		e.clock.Advance(3*time.Minute + time.Second)
		e.checkVerdicts("unwired", map[string]warp.Verdict{"a": warp.VerdictUnwired, "b": warp.VerdictUnwired, "c": warp.VerdictUnwired})
		got := e.pass()
		if len(got) != 1 || got[0].Host != "h1" || got[0].Stale != 3 {
			t.Fatalf("three unwired leases: got %+v, want one alarm for h1", got)
		}
		// The loops stop (staleness) and the leases go silent: the alarm
		// stays, nothing proves the hook works.
		e.clock.Advance(10 * time.Minute)
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("silent afterwards: %+v", got)
		}
		if h := e.hostStatus("h1"); h.Alarm == nil || h.Verdicts[warp.VerdictSilent] != 3 {
			t.Errorf("hosts h1: %+v", h)
		}
		// The leases lapse and the host goes quiet for the adoption window:
		// the alarm is cleared as host-gone.
		e.clock.Advance(time.Hour)
		if ids := e.sweptTickets(); len(ids) != 3 {
			t.Fatalf("sweep lapsed %v", ids)
		}
		if got := e.pass(); len(got) != 0 {
			t.Fatalf("host without leases but seen within the window: %+v", got)
		}
		e.clock.Advance(warp.DefaultAdoptionWindow)
		got = e.pass()
		if len(got) != 1 || got[0].Raised || got[0].Reason != warp.AlarmClearedHostGone {
			t.Fatalf("host gone: got %+v, want cleared (host-gone)", got)
		}
	})

	t.Run("DeadHostIsNoAlarm", func(t *testing.T) {
		// The host dies with its agents busy: heartbeats and activity stop
		// together, the leases go silent first — not a hook problem.
		e := newEnv(t, open)
		for _, id := range []string{"a", "b", "c"} {
			e.createClaim(id, "h1")
		}
		e.clock.Advance(4 * time.Minute)
		for _, id := range []string{"a", "b", "c"} {
			e.beat(id, "h1", 10*time.Second, true)
		}
		for range 6 {
			e.clock.Advance(5 * time.Minute)
			if got := e.pass(); len(got) != 0 {
				t.Fatalf("dead host at %s: alarms %+v", e.clock.Now().Sub(T0()), got)
			}
		}
	})
}
