package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

func allVerdicts() []warp.Verdict { return warp.Verdicts() }

// pageIDs returns the ticket ids of page, in its order.
func pageIDs(page warp.TicketPage) []string {
	var ids []string
	for _, tv := range page.Tickets {
		ids = append(ids, tv.Ticket.ID)
	}
	return ids
}

// checkVerdicts checks, at the clock's time, that every claimed ticket's
// derived verdict (Service.Ticket) is want[id], that each ListTickets
// verdict filter returns exactly the tickets with that verdict, and that
// CountHeld of the verdict's bounds and Service.CountVerdicts agree.
func (e *env) checkVerdicts(what string, want map[string]warp.Verdict) {
	e.t.Helper()
	for id, v := range want {
		if got := e.view(id).Verdict; got != v {
			e.t.Errorf("%s: verdict of %s: got %q, want %q", what, id, got, v)
		}
	}
	counts := map[warp.Verdict]int64{}
	// The same listings by walking every claimed ticket: the service lists
	// a rare verdict from the index of recorded verdicts and the due
	// leases, and both must give the same pages.
	walk := e.walker()
	for _, v := range allVerdicts() {
		page, err := e.svc.ListTickets(e.ctx, warp.ListOptions{Verdict: v, Limit: warp.MaxListLimit})
		if err != nil {
			e.t.Fatalf("%s: list verdict %s: %v", what, v, err)
		}
		walked, err := walk.ListTickets(e.ctx, warp.ListOptions{Verdict: v, Limit: warp.MaxListLimit})
		if err != nil {
			e.t.Fatalf("%s: list verdict %s by walking: %v", what, v, err)
		}
		if a, b := pageIDs(page), pageIDs(walked); !slices.Equal(a, b) {
			e.t.Errorf("%s: list verdict=%s: %v, by walking the tickets %v", what, v, a, b)
		}
		var got, exp []string
		for _, tv := range page.Tickets {
			got = append(got, tv.Ticket.ID)
			if tv.Verdict != v {
				e.t.Errorf("%s: list verdict=%s returned %s whose derived verdict is %q", what, v, tv.Ticket.ID, tv.Verdict)
			}
		}
		for id, wv := range want {
			if wv == v {
				exp = append(exp, id)
			}
		}
		slices.Sort(got)
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			e.t.Errorf("%s: list verdict=%s: got %v, want %v", what, v, got, exp)
		}
		b := e.svc.Policy().Bounds(v, e.clock.Now())
		var n int64
		e.read(func(tx warp.Tx) error {
			var err error
			n, err = tx.CountHeld(e.ctx, b)
			return err
		})
		if n != int64(len(exp)) {
			e.t.Errorf("%s: count held with verdict %s: got %d, want %d", what, v, n, len(exp))
		}
		counts[v] = int64(len(exp))
	}
	// The gauges' counts (stored per recorded verdict, corrected by the
	// due leases) agree with counting every lease.
	got, err := e.svc.CountVerdicts(e.ctx)
	if err != nil {
		e.t.Fatalf("%s: count verdicts: %v", what, err)
	}
	for _, v := range allVerdicts() {
		if got.Counts[v] != counts[v] {
			e.t.Errorf("%s: CountVerdicts %s: got %d, want %d (all: %v)", what, v, got.Counts[v], counts[v], got.Counts)
		}
	}
	e.checkHosts(what, want)
}

// checkHosts checks that the hosts overview (read from the per-host counts
// and the due leases) counts each host's held leases by verdict and by
// hook health as the leases themselves say.
func (e *env) checkHosts(what string, want map[string]warp.Verdict) {
	e.t.Helper()
	type tally struct {
		leases   int
		verdicts map[warp.Verdict]int
		hooks    map[warp.HookSeen]int
	}
	exp := map[string]*tally{}
	for id, v := range want {
		l := e.view(id).Lease
		if l == nil || !l.Held() {
			continue
		}
		t := exp[l.Host]
		if t == nil {
			t = &tally{verdicts: map[warp.Verdict]int{}, hooks: map[warp.HookSeen]int{}}
			exp[l.Host] = t
		}
		t.leases++
		t.verdicts[v]++
		t.hooks[l.HookSeen]++
	}
	hosts, err := e.svc.Hosts(e.ctx, warp.DefaultAdoptionWindow)
	if err != nil {
		e.t.Fatalf("%s: hosts: %v", what, err)
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		seen[h.Host] = true
		t := exp[h.Host]
		if t == nil {
			t = &tally{verdicts: map[warp.Verdict]int{}, hooks: map[warp.HookSeen]int{}}
		}
		if h.Leases != t.leases {
			e.t.Errorf("%s: host %s: %d held leases, want %d", what, h.Host, h.Leases, t.leases)
		}
		for _, v := range allVerdicts() {
			if h.Verdicts[v] != t.verdicts[v] {
				e.t.Errorf("%s: host %s: %d %s, want %d (all: %v)", what, h.Host, h.Verdicts[v], v, t.verdicts[v], h.Verdicts)
			}
		}
		for _, k := range []warp.HookSeen{warp.HookUnknown, warp.HookNo, warp.HookYes} {
			if h.HookSeen[k] != t.hooks[k] {
				e.t.Errorf("%s: host %s: hook seen %q on %d leases, want %d (all: %v)", what, h.Host, k, h.HookSeen[k], t.hooks[k], h.HookSeen)
			}
		}
	}
	for h := range exp {
		if !seen[h] {
			e.t.Errorf("%s: host %s holds leases but is not in the hosts overview", what, h)
		}
	}
}

func testVerdicts(t *testing.T, open func(t *testing.T) warp.Store) {
	// Policy: stalled past 15m without activity, silent past 9m without a
	// heartbeat. Thresholds are exclusive: an age equal to one is still the
	// better verdict, one nanosecond more is not.
	t.Run("StallBoundary", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(20 * time.Minute)
		// Fresh heartbeat reporting activity exactly 15m old.
		e.v2("T-1", 1, secs(15*time.Minute))
		e.checkVerdicts("activity age == stall threshold", map[string]warp.Verdict{"T-1": warp.VerdictActive})
		e.clock.Advance(time.Nanosecond)
		e.checkVerdicts("activity age == stall threshold + 1ns", map[string]warp.Verdict{"T-1": warp.VerdictStalled})
	})

	t.Run("SilentBoundary", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(time.Minute)
		e.v2("T-1", 1, 0)
		e.clock.Advance(9 * time.Minute)
		e.checkVerdicts("heartbeat age == silent threshold", map[string]warp.Verdict{"T-1": warp.VerdictActive})
		e.clock.Advance(time.Nanosecond)
		e.checkVerdicts("heartbeat age == silent threshold + 1ns", map[string]warp.Verdict{"T-1": warp.VerdictSilent})
	})

	t.Run("SilentBeatsStalled", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(16 * time.Minute)
		e.checkVerdicts("no heartbeat and no activity for 16m", map[string]warp.Verdict{"T-1": warp.VerdictSilent})
	})

	t.Run("ExitedBeatsAll", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, ActivityAge: 0, Exit: warp.ExitParentExited}); err != nil {
			t.Fatal(err)
		}
		e.checkVerdicts("exit reported", map[string]warp.Verdict{"T-1": warp.VerdictExited})
		e.clock.Advance(20 * time.Minute)
		e.checkVerdicts("exit reported, long silent", map[string]warp.Verdict{"T-1": warp.VerdictExited})
	})

	t.Run("V1ProgressIsTheHeartbeat", func(t *testing.T) {
		// A v1 host cannot report activity: its heartbeat counts as progress.
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(20 * time.Minute)
		e.v1("T-1", "h1")
		e.checkVerdicts("v1 heartbeat just now, activity 20m old", map[string]warp.Verdict{"T-1": warp.VerdictActive})
		// Once its latest heartbeat is v2, activity alone counts.
		e.v2("T-1", 1, secs(16*time.Minute))
		e.checkVerdicts("v2 heartbeat with activity 16m old", map[string]warp.Verdict{"T-1": warp.VerdictStalled})
	})

	t.Run("UnwiredBoundary", func(t *testing.T) {
		// hook_seen false, claim older than the stall threshold: unwired,
		// although the loop reports fresh activity.
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(14 * time.Minute)
		e.v2hook("T-1", 1, 0, false, 0)
		e.clock.Advance(time.Minute)
		e.checkVerdicts("claim age == stall threshold, hook not seen", map[string]warp.Verdict{"T-1": warp.VerdictActive})
		e.clock.Advance(time.Nanosecond)
		e.checkVerdicts("claim age == stall threshold + 1ns, hook not seen", map[string]warp.Verdict{"T-1": warp.VerdictUnwired})
		// One hook event: the loop says so, and the lease is active again.
		e.v2hook("T-1", 1, 0, true, 1)
		e.checkVerdicts("hook seen", map[string]warp.Verdict{"T-1": warp.VerdictActive})
		if l := e.lease("T-1"); l.HookSeen != warp.HookYes || l.HookEvents != 1 {
			t.Errorf("lease hook health: got %q/%d, want yes/1", l.HookSeen, l.HookEvents)
		}
	})

	t.Run("UnwiredPrecedence", func(t *testing.T) {
		e := newEnv(t, open)
		for _, id := range []string{"stale-unwired", "stale-wired", "stale-unknown", "silent-unwired", "exited-unwired"} {
			e.createClaim(id, "h1")
		}
		e.clock.Advance(20 * time.Minute)
		e.v2hook("stale-unwired", 1, secs(20*time.Minute), false, 0)
		e.v2hook("stale-wired", 1, secs(20*time.Minute), true, 3)
		e.v2("stale-unknown", 1, secs(20*time.Minute)) // an older loop: no hook fields
		e.v2hook("exited-unwired", 1, 0, false, 0)
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "exited-unwired", Epoch: 1, Exit: warp.ExitParentExited}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		e.checkVerdicts("stale activity", map[string]warp.Verdict{
			"stale-unwired":  warp.VerdictUnwired, // unwired names the cause of the staleness
			"stale-wired":    warp.VerdictStalled,
			"stale-unknown":  warp.VerdictStalled, // fields absent: as from loops without hook health
			"silent-unwired": warp.VerdictSilent,  // never heartbeated: silent as before
			"exited-unwired": warp.VerdictExited,
		})
		e.clock.Advance(9 * time.Minute)
		e.checkVerdicts("heartbeats stopped", map[string]warp.Verdict{
			"stale-unwired": warp.VerdictSilent, "stale-wired": warp.VerdictSilent, "stale-unknown": warp.VerdictSilent,
			"silent-unwired": warp.VerdictSilent, "exited-unwired": warp.VerdictExited,
		})
	})

	t.Run("UnknownHookIsNeverUnwired", func(t *testing.T) {
		// A loop without hook health sends no hook fields: the verdicts are
		// exactly the old ones, and a later report of a newer loop on the
		// same lease (hook_seen absent again) does not reset a known state.
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		for range 5 {
			e.clock.Advance(4 * time.Minute)
			e.v2("T-1", 1, 0)
		}
		e.checkVerdicts("20m of v2 heartbeats without hook fields", map[string]warp.Verdict{"T-1": warp.VerdictActive})
		if l := e.lease("T-1"); l.HookSeen != warp.HookUnknown {
			t.Errorf("hook_seen: got %q, want unknown", l.HookSeen)
		}
		e.v2hook("T-1", 1, 0, false, 0)
		e.checkVerdicts("hook not seen", map[string]warp.Verdict{"T-1": warp.VerdictUnwired})
		e.v2("T-1", 1, 0)
		e.checkVerdicts("fields absent again: last report stands", map[string]warp.Verdict{"T-1": warp.VerdictUnwired})
	})

	t.Run("RecordUnwired", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("T-1", "h1")
		e.clock.Advance(10 * time.Minute)
		e.v2hook("T-1", 1, 0, false, 0)
		e.clock.Advance(6 * time.Minute)
		changes, err := e.svc.RecordVerdicts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		since := T0().Add(15 * time.Minute)
		if len(changes) != 1 || changes[0].To != warp.VerdictUnwired || !changes[0].Since.Equal(since) {
			t.Fatalf("verdict pass: got %+v, want active → unwired since claim + 15m", changes)
		}
		if ev := e.lastEvent("T-1", warp.EventVerdictChanged); ev.Data.(warp.VerdictChangedData).To != warp.VerdictUnwired {
			t.Errorf("verdict event: got %+v", ev)
		}
	})

	t.Run("RecordVerdicts", func(t *testing.T) {
		e := newEnv(t, open)
		e.createClaim("stalls", "h1")
		e.createClaim("stays", "h1")
		e.clock.Advance(16 * time.Minute)
		e.v2("stalls", 1, secs(16*time.Minute))
		e.v2("stays", 1, 0)
		changes, err := e.svc.RecordVerdicts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].Ticket != "stalls" || changes[0].From != warp.VerdictActive || changes[0].To != warp.VerdictStalled {
			t.Fatalf("verdict pass: got %+v, want stalls: active → stalled", changes)
		}
		if l := e.lease("stalls"); l.RecordedVerdict != warp.VerdictStalled {
			t.Errorf("recorded verdict: got %q, want stalled", l.RecordedVerdict)
		}
		if ev := e.lastEvent("stalls", warp.EventVerdictChanged); ev.ID != changes[0].EventID || ev.Data.(warp.VerdictChangedData).To != warp.VerdictStalled {
			t.Errorf("verdict event: got %+v, want id %d to stalled", ev, changes[0].EventID)
		}
		if changes, err := e.svc.RecordVerdicts(e.ctx); err != nil || len(changes) != 0 {
			t.Errorf("second pass: got %+v, %v, want no change", changes, err)
		}
		e.v2("stalls", 1, 0)
		changes, err = e.svc.RecordVerdicts(e.ctx)
		if err != nil || len(changes) != 1 || changes[0].To != warp.VerdictActive {
			t.Errorf("after fresh activity: got %+v, %v, want stalls back to active", changes, err)
		}
	})

	t.Run("ListRecordedVerdicts", func(t *testing.T) {
		// Verdicts the pass has recorded (no longer due) and verdicts that
		// changed since it ran (due), listed from the index of recorded
		// verdicts and the due leases, and paged through.
		e := newEnv(t, open)
		for _, id := range []string{"A-1", "S-1", "S-2", "S-3", "Q-1", "X-1"} {
			e.createClaim(id, "h1")
		}
		e.clock.Advance(16 * time.Minute)
		for _, id := range []string{"S-1", "S-2", "S-3"} {
			e.v2(id, 1, secs(16*time.Minute)) // stalled
		}
		e.v2("A-1", 1, 0)
		e.v2("Q-1", 1, 0)
		if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "X-1", Epoch: 1, Exit: warp.ExitParentExited}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.RecordVerdicts(e.ctx); err != nil {
			t.Fatal(err)
		}
		if l := e.lease("S-2"); l.RecordedVerdict != warp.VerdictStalled {
			t.Fatalf("the fixture: S-2 recorded %q, want stalled", l.RecordedVerdict)
		}
		want := map[string]warp.Verdict{"A-1": warp.VerdictActive, "S-1": warp.VerdictStalled, "S-2": warp.VerdictStalled,
			"S-3": warp.VerdictStalled, "Q-1": warp.VerdictActive, "X-1": warp.VerdictExited}
		e.checkVerdicts("recorded by the pass", want)
		// S-1 comes back to life and Q-1 falls silent, neither recorded yet.
		e.v2("S-1", 1, 0)
		e.clock.Advance(10 * time.Minute)
		for _, id := range []string{"A-1", "S-1", "S-2", "S-3", "X-1"} {
			e.v2(id, 1, secs(26*time.Minute))
		}
		e.v2("A-1", 1, 0)
		e.v2("S-1", 1, 0)
		want["Q-1"], want["S-1"] = warp.VerdictSilent, warp.VerdictActive
		e.checkVerdicts("changed since the pass", want)
		var pages [][]string
		after := ""
		for {
			p, err := e.svc.ListTickets(e.ctx, warp.ListOptions{Verdict: warp.VerdictStalled, Limit: 1, Cursor: after})
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, pageIDs(p))
			if after = p.NextCursor; after == "" {
				break
			}
		}
		if fmt.Sprint(pages) != "[[S-2] [S-3]]" {
			t.Errorf("stalled, a page of one at a time: %v, want [[S-2] [S-3]]", pages)
		}
	})

	t.Run("Partition", func(t *testing.T) {
		// Many leases at assorted ages: each claimed ticket is in exactly
		// the list of its derived verdict, at every step of the clock.
		e := newEnv(t, open)
		want := map[string]warp.Verdict{}
		for i := range 24 {
			id := fmt.Sprintf("T-%02d", i)
			e.createClaim(id, "h1")
			want[id] = ""
		}
		e.create("open-ticket")
		for i := range 24 {
			id := fmt.Sprintf("T-%02d", i)
			e.clock.Advance(time.Minute)
			switch i % 4 {
			case 0:
				e.v2hook(id, 1, float64(i)*60, true, 1)
			case 1:
				e.v1(id, "h1")
			case 2:
				if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, Exit: warp.ExitWorktreeGone}); err != nil {
					t.Fatal(err)
				}
			case 3:
				if i >= 16 { // the others never heartbeat: silent
					e.v2hook(id, 1, 0, false, 0)
				}
			}
		}
		// Issue 44: one lease reports a loop, one no progress for an hour.
		for _, id := range []string{"L-1", "P-1"} {
			e.createClaim(id, "h1")
			want[id] = ""
			hb := warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: 1, ProgressAge: ptr(3600.0)}
			if id == "L-1" {
				hb.ProgressAge, hb.Loop = ptr(0.0), &warp.Loop{Label: "Bash: npm test", Count: 4, Error: "exit 1"}
			}
			if _, err := e.svc.Heartbeat(e.ctx, hb); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[warp.Verdict]bool{}
		for step := range 8 {
			e.clock.Advance(150 * time.Second)
			for id := range want {
				want[id] = e.svc.Policy().Verdict(e.lease(id), e.clock.Now())
				seen[want[id]] = true
			}
			e.checkVerdicts(fmt.Sprintf("step %d", step), want)
		}
		for _, v := range allVerdicts() {
			if !seen[v] {
				t.Errorf("no lease was %s at any step: the test data does not cover every verdict", v)
			}
		}
	})
}

// The hosts overview reads hook health from the per-host counts: a claim
// counts unknown, a heartbeat that changes hook_seen moves the lease, and
// every end (release, release on exit report with a change in the same
// heartbeat, lapse) removes it under what it last was.
func testHostCounts(t *testing.T, open func(t *testing.T) warp.Store) {
	e := newEnv(t, open, func(c *warp.Config) { c.ReleaseOnExit = true })
	ids := []string{"T-1", "T-2", "T-3", "T-4"}
	for _, id := range ids {
		e.createClaim(id, "h1")
	}
	// The verdicts are the service's own (checkVerdicts cross-checks
	// them); what is checked here is each host's counts.
	check := func(what string) {
		t.Helper()
		want := map[string]warp.Verdict{}
		for _, id := range ids {
			if v := e.view(id); v.Lease != nil && v.Lease.Held() {
				want[id] = v.Verdict
			}
		}
		e.checkVerdicts(what, want)
	}
	check("four claims")
	e.clock.Advance(time.Second)
	e.v2hook("T-1", 1, 0, false, 0)
	e.v2hook("T-2", 1, 0, true, 3)
	e.v2hook("T-3", 1, 0, false, 0)
	check("hook seen no, yes, no")
	e.v2hook("T-1", 1, 0, true, 1) // no → yes
	e.v2hook("T-2", 1, 0, true, 1) // yes → yes: nothing moves
	check("T-1 wired")
	e.clock.Advance(e.svc.Policy().StallAfter + time.Second)
	e.v2hook("T-3", 1, 0, false, 0)
	check("T-3 unwired for a stall window")
	if _, err := e.svc.Release(e.ctx, "T-2", 1, "done"); err != nil {
		t.Fatal(err)
	}
	// An exit report that also reports the hook for the first time: the
	// lease ends in the heartbeat that changed it.
	yes := true
	if _, err := e.svc.Heartbeat(e.ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-4", Epoch: 1, Host: "h2", Agent: "a",
		HookSeen: &yes, Exit: warp.ExitParentExited}); err != nil {
		t.Fatal(err)
	}
	if v := e.view("T-4"); v.Lease.Held() {
		t.Fatalf("T-4 still held after its exit report: %+v", v.Lease)
	}
	check("one released, one released on exit")
	e.clock.Advance(e.svc.Policy().LeaseWindow + time.Hour)
	if got := e.sweptTickets(); len(got) != 2 {
		t.Fatalf("sweep: got %v, want T-1 and T-3", got)
	}
	check("all lapsed")
}

// VerdictCountsPruned checks that a sweep drops the verdict and hook count
// rows that reached 0 — a host whose leases all ended — and only those:
// with hostnames that come and go (containers), the rows would otherwise
// grow with every host ever seen, and every scrape reads them. rows counts
// the store's count rows, those at 0 included (each store's test knows
// how).
func VerdictCountsPruned(t *testing.T, open func(t *testing.T) warp.Store, rows func(warp.Store) int) {
	e := newEnv(t, open)
	e.createClaim("T-1", "gone")
	e.createClaim("T-2", "live")
	if n := rows(e.store); n != 4 {
		t.Fatalf("count rows after two claims: %d, want 4 (active and hook-seen:unknown of each host)", n)
	}
	if _, err := e.svc.Complete(e.ctx, "T-1", 1, ""); err != nil {
		t.Fatal(err)
	}
	if n := rows(e.store); n != 4 {
		t.Fatalf("count rows after the completion: %d, want 4 (gone's two at 0, not yet pruned)", n)
	}
	e.update(func(tx warp.Tx) error { return tx.PruneVerdictCounts(e.ctx, 1) })
	if n := rows(e.store); n != 3 {
		t.Errorf("count rows after a prune of at most 1: %d, want 3", n)
	}
	e.sweep()
	if n := rows(e.store); n != 2 {
		t.Errorf("count rows after a sweep: %d, want 2 (live's)", n)
	}
	e.checkHosts("after the prune", map[string]warp.Verdict{"T-2": warp.VerdictActive})
	// A host that comes back is counted again from no row.
	e.createClaim("T-3", "gone")
	e.sweep()
	if n := rows(e.store); n != 4 {
		t.Errorf("count rows after gone claimed again and a sweep: %d, want 4", n)
	}
	e.checkHosts("gone back", map[string]warp.Verdict{"T-2": warp.VerdictActive, "T-3": warp.VerdictActive})
}

func ptr[T any](v T) *T { return &v }
