package dashboard

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

var tlT0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func tlPolicy() warp.Policy {
	return warp.Policy{LeaseWindow: 30 * time.Minute, StallAfter: 15 * time.Minute, SilentAfter: 9 * time.Minute}
}

func heldLease(epoch int64, claimed, now time.Time) warp.Lease {
	return warp.Lease{Ticket: "T", Epoch: epoch, Agent: "a", Host: "h", State: warp.LeaseHeld, ClaimedAt: claimed,
		LastHeartbeatAt: now, LastActivityAt: now, RefreshedAt: now, SchemaVersion: 2, ExpiresAt: now.Add(30 * time.Minute)}
}

func xs(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("coordinate %q: %v", s, err)
	}
	return f
}

func TestTimelineTicks(t *testing.T) {
	for _, c := range []struct {
		name   string
		span   time.Duration
		layout string
	}{
		{"seconds", 10 * time.Second, "15:04:05"}, // the minimum span, a minute
		{"hours", 3 * time.Hour, "15:04"},
		{"days", 3 * 24 * time.Hour, "Jan 2 15:04"},
		{"weeks", 40 * 24 * time.Hour, "Jan 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A released lease: the axis runs from its claim to its end.
			end := tlT0.Add(c.span)
			l := heldLease(1, tlT0, end)
			l.State, l.EndedAt = warp.LeaseReleased, end
			tv := buildTimeline(warp.History{Ticket: warp.Ticket{ID: "T", Epoch: 1}, Leases: []warp.Lease{l}, Now: end.Add(time.Hour)}, tlPolicy())
			if len(tv.Ticks) < 2 || len(tv.Ticks) > tlMaxTicks+1 {
				t.Fatalf("%d ticks: %+v", len(tv.Ticks), tv.Ticks)
			}
			prev := -1.0
			for _, tk := range tv.Ticks {
				if _, err := time.Parse(c.layout, tk.Label); err != nil {
					t.Errorf("tick label %q is not %q", tk.Label, c.layout)
				}
				x := xs(t, tk.X)
				if x <= prev || x < tlPadX || x > tlWidth-tlPadX {
					t.Errorf("tick x %v after %v: out of order or off the axis", x, prev)
				}
				prev = x
			}
		})
	}
}

func TestTimelineSegmentsStayInTheBar(t *testing.T) {
	now := tlT0.Add(40 * time.Minute)
	l := heldLease(1, tlT0, now)
	l.LastActivityAt = tlT0.Add(10 * time.Minute) // stalled since 12:25
	ev := func(id int64, to warp.Verdict, at time.Time, since time.Time) warp.Event {
		e := warp.NewEvent("T", 1, at, warp.VerdictChangedData{From: "x", To: to, Since: since})
		e.ID = id
		return e
	}
	h := warp.History{Ticket: warp.Ticket{ID: "T", Epoch: 1}, Leases: []warp.Lease{l}, Now: now, Events: []warp.Event{
		ev(1, warp.VerdictSilent, tlT0.Add(5*time.Minute), tlT0.Add(-time.Hour)), // since before the claim
		ev(2, warp.VerdictActive, tlT0.Add(8*time.Minute), time.Time{}),          // no since: its time
	}}
	tv := buildTimeline(h, tlPolicy())
	ln := tv.Lanes[0]
	// The claim's active lasts no time (silent since before the claim
	// starts at it); after the latest heartbeat the columns decide:
	// stalled since 12:25 (activity at 12:10 + 15 min).
	if ln.Verdicts != "silent,active,stalled" {
		t.Errorf("segments: got %s, want silent,active,stalled", ln.Verdicts)
	}
	barA, barB := xs(t, ln.Bar.X), xs(t, ln.Bar.X)+xs(t, ln.Bar.W)
	for _, s := range ln.Segments {
		a, b := xs(t, s.X), xs(t, s.X)+xs(t, s.W)
		if a < barA-0.01 || b > barB+0.6 {
			t.Errorf("segment %s [%v, %v] outside the bar [%v, %v]", s.Verdict, a, b, barA, barB)
		}
	}
	last := ln.Segments[len(ln.Segments)-1]
	if last.Verdict != warp.VerdictStalled || !strings.Contains(last.Title, "from 2026-05-06 12:25:00.000Z") || !strings.Contains(last.Title, "did not record it") {
		t.Errorf("last segment: %s %q, want stalled from 12:25, not recorded", last.Verdict, last.Title)
	}
	if !strings.Contains(ln.Segments[0].Title, "silent from 2026-05-06 12:00:00.000Z") {
		t.Errorf("silent since before the claim starts at the claim: %q", ln.Segments[0].Title)
	}

	// A since after the end is clamped to the end.
	l.State, l.EndedAt = warp.LeaseReleased, now
	h.Leases, h.Now = []warp.Lease{l}, now.Add(time.Hour)
	h.Events = []warp.Event{ev(4, warp.VerdictExited, now, now.Add(time.Hour))}
	ln = buildTimeline(h, tlPolicy()).Lanes[0]
	barB = xs(t, ln.Bar.X) + xs(t, ln.Bar.W)
	for _, s := range ln.Segments {
		if b := xs(t, s.X) + xs(t, s.W); b > barB+0.6 {
			t.Errorf("segment %s ends at %v, after the bar's end %v", s.Verdict, b, barB)
		}
	}
}

func TestTimelineEscapesAgentValues(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	now := tlT0.Add(time.Minute)
	l := heldLease(1, tlT0, now)
	l.Agent, l.Host, l.InFlight = `</title><script>alert(1)</script>`, `<img src=x onerror=alert(2)>`, `"quoted" & <tool>`
	tv := buildTimeline(warp.History{Ticket: warp.Ticket{ID: "T", Epoch: 1}, Leases: []warp.Lease{l}, Now: now}, tlPolicy())
	var buf bytes.Buffer
	if err := pages["ticket.html"].ExecuteTemplate(&buf, "lease-timeline", tv); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<img", "<tool>"} {
		if strings.Contains(out, bad) {
			t.Errorf("agent value reached the picture unescaped (%s):\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "&lt;/title&gt;&lt;script&gt;") {
		t.Errorf("the agent's name is not shown escaped:\n%s", out)
	}
}

// A lapsed lease that went stalled, then silent (both recorded by the
// verdict pass), is drawn silent to its end: the columns' verdict at the
// instant silence began is still stalled (thresholds are exclusive), and
// the picture drew the last span stalled, "not recorded", against its own
// marker and the events (issue 46).
func TestTimelineSilentLeaseIsNotDrawnStalled(t *testing.T) {
	p := tlPolicy()
	l := heldLease(1, tlT0, tlT0.Add(5*time.Minute))
	l.LastActivityAt = tlT0.Add(2 * time.Minute)    // the last activity at 12:02
	stalled := warp.ProgressAt(l).Add(p.StallAfter) // 12:17
	// Stale reports kept the loop visible past the stall, then it went quiet.
	l.LastHeartbeatAt = tlT0.Add(25 * time.Minute)
	silent := l.LastHeartbeatAt.Add(p.SilentAfter) // 12:34
	end := tlT0.Add(60 * time.Minute)
	l.State, l.EndedAt, l.EndReason = warp.LeaseLapsed, end, warp.LapseNoActivity
	ev := func(id int64, from, to warp.Verdict, at, since time.Time) warp.Event {
		e := warp.NewEvent("T", 1, at, warp.VerdictChangedData{From: from, To: to, Since: since})
		e.ID = id
		return e
	}
	h := warp.History{Ticket: warp.Ticket{ID: "T", Epoch: 1}, Leases: []warp.Lease{l}, Now: end.Add(time.Minute), Events: []warp.Event{
		ev(1, warp.VerdictActive, warp.VerdictStalled, stalled.Add(time.Second), stalled),
		ev(2, warp.VerdictStalled, warp.VerdictSilent, silent.Add(time.Second), silent),
	}}
	ln := buildTimeline(h, p).Lanes[0]
	if ln.Verdicts != "active,stalled,silent" {
		t.Fatalf("segments %s, want active,stalled,silent", ln.Verdicts)
	}
	last := ln.Segments[len(ln.Segments)-1]
	if !strings.Contains(last.Title, "recorded by the verdict pass") {
		t.Errorf("the silent span should be the recorded one: %q", last.Title)
	}
	if b := xs(t, last.X) + xs(t, last.W); b < xs(t, ln.Bar.X)+xs(t, ln.Bar.W)-0.6 {
		t.Errorf("the silent span ends at %v, before the lease's end", b)
	}
}
