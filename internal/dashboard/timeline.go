package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// The lease timeline: a ticket's leases drawn on one time axis as
// server-side SVG (no script needed to see it; timeline.js only re-fetches
// the fragment when the stream says the ticket changed). One lane per
// lease: a bar from the claim to the end (or to now while held), coloured
// by the verdict in force, with marks for what the lease stores — the
// claim, the first v2 and the latest heartbeat, the latest credited
// activity, the stale reports since the last extension, the exit report,
// the verdict pass's recordings, the expiry deadline and the end with its
// reason. The stores keep no per-heartbeat history, and the legend says so.

// Geometry of the picture, in SVG user units (the SVG scales to the width
// of the page).
const (
	tlWidth     = 1000.0
	tlPadX      = 14.0
	tlTop       = 8
	tlLaneH     = 66
	tlBarY      = 22 // bar top within a lane
	tlBarH      = 16
	tlAxisH     = 34
	tlMaxTicks  = 8
	tlMinSpan   = time.Minute
	tlEndMargin = 0.03 // share of the span left blank at each side
)

// timelineLeases is how many of a ticket's latest leases the picture draws.
const timelineLeases = 20

// timelineView is what the lease-timeline template draws.
type timelineView struct {
	Ticket    string
	Src       string // the fragment's URL, for timeline.js
	AtMS      int64  // service time of the read, for timeline.js to keep the newest
	Held      bool   // the current lease is held: "now" moves
	Empty     bool   // never claimed
	Width     string
	Height    int
	AxisY     int
	AxisLabel string // the axis's first and last time
	Ticks     []tlTick
	Now       *tlMark
	Lanes     []tlLane
	Earlier   int64 // older leases left out
	Truncated bool
	HookTotal int64
}

type tlTick struct {
	X     string
	Label string
	Title string
}

type tlLane struct {
	Epoch    int64
	State    warp.LeaseState
	Y        int // lane top
	LabelY   int
	BarY     int
	BarH     int
	MarkTop  int
	MarkBot  int
	MarkMid  int
	LineTop  int // the deadline's and the end's lines
	LineBot  int
	NoteY    int // the baseline of the deadline's and the end's labels
	Label    string
	Bar      tlSpan
	Segments []tlSeg
	Stale    *tlSpan
	Marks    []tlMark
	Deadline *tlMark
	End      *tlMark
	Verdicts string // the verdicts of the segments, comma separated, for tests and the curious
}

type tlSpan struct {
	X, W  string
	Title string
}

type tlSeg struct {
	tlSpan
	Verdict warp.Verdict
}

// tlMark is one mark at a time: Kind picks its shape and class (claim,
// heartbeat, activity, stale, exit, verdict, deadline, now, and for the
// end released, completed or lapsed).
type tlMark struct {
	Kind   string
	X      string
	Title  string
	Label  string
	Anchor string // text-anchor of the label
	LabelX string
	Points string // the polygon of a triangle or diamond mark
}

// timeScale maps times to x.
type timeScale struct{ t0, t1 time.Time }

func (s timeScale) x(t time.Time) float64 {
	span := s.t1.Sub(s.t0)
	f := float64(t.Sub(s.t0)) / float64(span)
	f = min(max(f, 0), 1)
	return tlPadX + f*(tlWidth-2*tlPadX)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func tlTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") }

// timeline serves GET /tickets/{id}/timeline: the lease-timeline fragment.
func (d *Dashboard) timeline(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	tv, err := d.timelineView(r, id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.renderTemplate(w, http.StatusOK, "ticket.html", "lease-timeline", tv)
}

func (d *Dashboard) timelineView(r *http.Request, id string) (timelineView, error) {
	h, err := d.svc.LeaseHistory(r.Context(), id, timelineLeases)
	if err != nil {
		return timelineView{}, err
	}
	return buildTimeline(h, d.svc.Policy()), nil
}

// buildTimeline lays out h.
func buildTimeline(h warp.History, p warp.Policy) timelineView {
	now := h.Now
	tv := timelineView{Ticket: h.Ticket.ID, Src: "/tickets/" + url.PathEscape(h.Ticket.ID) + "/timeline",
		AtMS: now.UnixMilli(), Width: num(tlWidth), Earlier: h.Earlier, Truncated: h.Truncated}
	if len(h.Leases) == 0 {
		tv.Empty = true
		return tv
	}
	// The span: from the first claim to the last end, or to now and the
	// held lease's deadline; a lapsed lease's missed deadline is inside.
	t0, t1 := h.Leases[0].ClaimedAt, h.Leases[0].ClaimedAt
	for _, l := range h.Leases {
		end := l.EndedAt
		if l.Held() {
			end = now
			tv.Held = true
			if l.ExpiresAt.After(t1) {
				t1 = l.ExpiresAt
			}
		}
		if end.After(t1) {
			t1 = end
		}
		tv.HookTotal += l.HookEvents
	}
	if span := t1.Sub(t0); span < tlMinSpan {
		t1 = t0.Add(tlMinSpan)
	}
	pad := time.Duration(float64(t1.Sub(t0)) * tlEndMargin)
	sc := timeScale{t0: t0.Add(-pad), t1: t1.Add(pad)}

	byEpoch := map[int64][]warp.Event{}
	for _, e := range h.Events {
		if e.Kind == warp.EventVerdictChanged {
			byEpoch[e.Epoch] = append(byEpoch[e.Epoch], e)
		}
	}
	for i, l := range h.Leases {
		tv.Lanes = append(tv.Lanes, buildLane(l, byEpoch[l.Epoch], p, sc, now, tlTop+i*tlLaneH))
	}
	tv.AxisY = tlTop + len(h.Leases)*tlLaneH + 4
	tv.Height = tv.AxisY + tlAxisH
	tv.Ticks = ticks(sc)
	tv.AxisLabel = "from " + tlTime(t0) + " to " + tlTime(t1) + " (UTC)"
	if tv.Held {
		x := sc.x(now)
		tv.Now = &tlMark{Kind: "now", X: num(x), Title: "now: " + tlTime(now), Label: "now", LabelX: num(x), Anchor: "middle"}
	}
	return tv
}

// buildLane draws lease l's lane at y: its bar, the verdicts in force
// along it (from the recorded changes and the lease's columns), its marks
// and its deadline and end.
func buildLane(l warp.Lease, changes []warp.Event, p warp.Policy, sc timeScale, now time.Time, y int) tlLane {
	ln := tlLane{Epoch: l.Epoch, State: l.State, Y: y, LabelY: y + 14, BarY: y + tlBarY, BarH: tlBarH,
		MarkTop: y + tlBarY - 5, MarkBot: y + tlBarY + tlBarH + 5, MarkMid: y + tlBarY + tlBarH/2,
		LineTop: y + tlBarY - 6, LineBot: y + tlBarY + tlBarH + 12, NoteY: y + tlBarY + tlBarH + 22}
	end := l.EndedAt
	if l.Held() {
		end = now
	}
	who := orDashStr(l.Agent) + " on " + orDashStr(l.Host)
	schema := "no heartbeat yet"
	if l.SchemaVersion > 0 {
		schema = "v" + strconv.Itoa(l.SchemaVersion)
	}
	ln.Label = fmt.Sprintf("lease %d · %s · %s · %s", l.Epoch, who, schema, l.State)
	x0, x1 := sc.x(l.ClaimedAt), sc.x(end)
	ln.Bar = tlSpan{X: num(x0), W: num(max(x1-x0, 1)),
		Title: fmt.Sprintf("lease %d: claimed %s, %s %s (%s)", l.Epoch, tlTime(l.ClaimedAt), endWord(l), tlTime(end), FormatAge(end.Sub(l.ClaimedAt)))}

	laneVerdicts(&ln, l, changes, p, sc, end)
	laneMarks(&ln, l, sc, x0, who)
	laneEnd(&ln, l, sc, now)
	return ln
}

// laneVerdicts adds to ln the verdict segments of l until end, and a mark
// for each change the verdict pass recorded.
func laneVerdicts(ln *tlLane, l warp.Lease, changes []warp.Event, p warp.Policy, sc timeScale, end time.Time) {
	// The verdict in force: active from the claim, then each recorded
	// change from when the lease's columns say it happened (since), then
	// what the columns alone decide after the latest heartbeat — nothing
	// but the end changes them after it, so the verdict from there on is
	// exact even where the pass did not record it (the lease went silent
	// before the sweep lapsed it, or exited just before it completed).
	type seg struct {
		v        warp.Verdict
		from     time.Time
		recorded time.Time
	}
	segs := []seg{{v: warp.VerdictActive, from: l.ClaimedAt}}
	for _, e := range changes {
		d, _ := e.Data.(warp.VerdictChangedData)
		to, at := d.To, e.At
		if !d.Since.IsZero() {
			at = d.Since
		}
		at = clampTime(at, segs[len(segs)-1].from, end)
		segs = append(segs, seg{v: to, from: at, recorded: e.At})
		x := sc.x(e.At)
		ln.Marks = append(ln.Marks, tlMark{Kind: "verdict", X: num(x),
			Points: diamond(x, float64(ln.MarkBot)+3, 3.5),
			Title:  fmt.Sprintf("verdict pass recorded %s → %s at %s (since %s)", d.From, to, tlTime(e.At), tlTime(at))})
	}
	for _, d := range tailVerdicts(l, p, segs[len(segs)-1].from, end) {
		if d.v == segs[len(segs)-1].v {
			continue
		}
		segs = append(segs, seg{v: d.v, from: clampTime(d.from, segs[len(segs)-1].from, end)})
	}
	var vs []string
	for i, s := range segs {
		to := end
		if i+1 < len(segs) {
			to = segs[i+1].from
		}
		if !to.After(s.from) && i+1 < len(segs) {
			continue // replaced at once
		}
		a, b := sc.x(s.from), sc.x(to)
		note := "recorded by the verdict pass at " + tlTime(s.recorded)
		switch {
		case i == 0:
			note = "a claim starts active"
		case s.recorded.IsZero():
			note = "from the lease's columns; the verdict pass did not record it"
		}
		ln.Segments = append(ln.Segments, tlSeg{Verdict: s.v, tlSpan: tlSpan{X: num(a), W: num(max(b-a, 0.5)),
			Title: fmt.Sprintf("%s from %s to %s (%s; %s)", s.v, tlTime(s.from), tlTime(to), FormatAge(to.Sub(s.from)), note)}})
		vs = append(vs, string(s.v))
	}
	ln.Verdicts = joinComma(vs)

}

// laneMarks adds to ln the marks of l's claim (at x0, by who), first v2
// heartbeat, stale reports, latest heartbeat and activity, and exit
// report.
func laneMarks(ln *tlLane, l warp.Lease, sc timeScale, x0 float64, who string) {
	// Marks, in the order they are drawn (later ones on top).
	mid := float64(ln.MarkMid)
	ln.Marks = append(ln.Marks, tlMark{Kind: "claim", X: num(x0),
		Title: fmt.Sprintf("claimed at %s by %s (a claim counts as heartbeat and activity)", tlTime(l.ClaimedAt), who)})
	if !l.FirstV2At.IsZero() && !l.FirstV2At.Equal(l.LastHeartbeatAt) {
		ln.Marks = append(ln.Marks, tlMark{Kind: "heartbeat", X: num(sc.x(l.FirstV2At)),
			Title: "first v2 heartbeat at " + tlTime(l.FirstV2At)})
	}
	// Stale reports: v2 heartbeats that did not extend the lease leave
	// last_heartbeat_at after refreshed_at (the last extension).
	if l.SchemaVersion > 0 && l.LastHeartbeatAt.After(l.RefreshedAt) && !l.RefreshedAt.IsZero() {
		a, b := sc.x(l.RefreshedAt), sc.x(l.LastHeartbeatAt)
		what := "stale reports: the loop lives but says the agent shows no activity; they do not extend the lease"
		if l.SchemaVersion == 1 {
			what = "v1 heartbeats in activity mode: recorded, not extending the lease"
		}
		ln.Stale = &tlSpan{X: num(a), W: num(max(b-a, 1)),
			Title: fmt.Sprintf("%s — after the last extension at %s, until the latest at %s", what, tlTime(l.RefreshedAt), tlTime(l.LastHeartbeatAt))}
		x := sc.x(l.LastHeartbeatAt)
		ln.Marks = append(ln.Marks, tlMark{Kind: "stale", X: num(x), Points: triangle(x, float64(ln.MarkTop)-1, 4.5),
			Title: "latest heartbeat at " + tlTime(l.LastHeartbeatAt) + " was not an extension (" + staleWord(l) + ")"})
	}
	if l.SchemaVersion > 0 && !l.LastHeartbeatAt.Equal(l.ClaimedAt) {
		ln.Marks = append(ln.Marks, tlMark{Kind: "heartbeat", X: num(sc.x(l.LastHeartbeatAt)),
			Title: fmt.Sprintf("latest heartbeat at %s (v%d)", tlTime(l.LastHeartbeatAt), l.SchemaVersion)})
	}
	if l.SchemaVersion == 2 && l.LastActivityAt.After(l.ClaimedAt) {
		x := sc.x(l.LastActivityAt)
		title := fmt.Sprintf("latest activity at %s, as the loop reported it", tlTime(l.LastActivityAt))
		if l.HookSeen != warp.HookUnknown {
			title += fmt.Sprintf(" (hook seen: %s; %d hook events over the lease)", l.HookSeen, l.HookEvents)
		}
		if l.InFlight != "" {
			title += "; in flight: " + l.InFlight
		}
		ln.Marks = append(ln.Marks, tlMark{Kind: "activity", X: num(x), Points: diamond(x, mid, 5), Title: title})
	}
	if !l.ExitedAt.IsZero() {
		x := sc.x(l.ExitedAt)
		ln.Marks = append(ln.Marks, tlMark{Kind: "exit", X: num(x), Points: triangle(x, float64(ln.MarkBot)+1, -4.5),
			Title: fmt.Sprintf("exit report %s at %s", l.Exit, tlTime(l.ExitedAt))})
	}
}

// laneEnd adds to ln the deadline of a held or lapsed lease and the end
// of an ended one.
func laneEnd(ln *tlLane, l warp.Lease, sc timeScale, now time.Time) {
	// The deadline: where a held lease expires if nothing extends it, and
	// the one a lapsed lease missed.
	if l.Held() || l.State == warp.LeaseLapsed {
		x := sc.x(l.ExpiresAt)
		title := "expires at " + tlTime(l.ExpiresAt) + " (" + FormatUntil(l.ExpiresAt.Sub(now)) + ") unless extended"
		ln.Deadline = &tlMark{Kind: "deadline", X: num(x), Title: title, Label: "expires " + l.ExpiresAt.UTC().Format("15:04:05")}
		placeLabel(ln.Deadline, x, -1)
		if !l.Held() {
			// The end's label says it: the two are close together.
			ln.Deadline.Title = fmt.Sprintf("deadline %s; the sweep ended the lease at %s", tlTime(l.ExpiresAt), tlTime(l.EndedAt))
			ln.Deadline.Label = ""
		}
	}
	if !l.Held() {
		x := sc.x(l.EndedAt)
		m := &tlMark{Kind: string(l.State), X: num(x), Label: endLabel(l)}
		m.Title = fmt.Sprintf("%s at %s", m.Label, tlTime(l.EndedAt))
		if l.State == warp.LeaseLapsed {
			m.Title += fmt.Sprintf(" (deadline %s; last heartbeat %s, last activity %s)", tlTime(l.ExpiresAt), tlTime(l.LastHeartbeatAt), tlTime(l.LastActivityAt))
			m.Label += " · deadline " + l.ExpiresAt.UTC().Format("15:04:05") + " passed"
		}
		placeLabel(m, x, 1)
		ln.End = m
	}
}

type verdictAt struct {
	v    warp.Verdict
	from time.Time
}

// tailVerdicts returns the verdicts lease l's columns give it from its
// latest heartbeat (or from, when later) to end, each from when it began
// (Policy.VerdictSince), as if it were held: the rule of Policy.Verdict
// applied to columns that no longer change.
func tailVerdicts(l warp.Lease, p warp.Policy, from, end time.Time) []verdictAt {
	l.State = warp.LeaseHeld
	t := from
	if l.LastHeartbeatAt.After(t) {
		t = l.LastHeartbeatAt
	}
	// Thresholds are exclusive: at the very instant a recorded change
	// began (its since) the columns still give the verdict before it, and
	// the tail would draw the lease back in it to the end (a silent lease
	// drawn stalled, issue 46). The verdict from there on is the one just
	// after it (or the one at the end, when that is sooner).
	if t = t.Add(time.Nanosecond); t.After(end) {
		t = end
	}
	var out []verdictAt
	for i := 0; i < 6 && !t.After(end); i++ {
		v := p.Verdict(l, t)
		at := p.VerdictSince(l, v)
		if at.Before(l.ClaimedAt) || v == warp.VerdictActive && len(out) == 0 {
			at = t
		}
		out = append(out, verdictAt{v: v, from: at})
		next := p.NextVerdictChange(l, t)
		if next.IsZero() || !next.After(t) {
			break
		}
		t = next.Add(time.Nanosecond)
	}
	return out
}

// placeLabel puts m's label beside x: after it when dir > 0 and there is
// room, else before it.
func placeLabel(m *tlMark, x float64, dir int) {
	after := dir > 0
	if x > tlWidth*0.75 {
		after = false
	} else if x < tlWidth*0.25 {
		after = true
	}
	if after {
		m.LabelX, m.Anchor = num(x+4), "start"
	} else {
		m.LabelX, m.Anchor = num(x-4), "end"
	}
}

func endWord(l warp.Lease) string {
	if l.Held() {
		return "held until now"
	}
	return string(l.State)
}

func endLabel(l warp.Lease) string {
	switch l.State {
	case warp.LeaseLapsed:
		s := "lapsed: " + orDashStr(l.EndReason)
		if l.FallbackExtended {
			s += " (v1 fallback extended it)"
		}
		return s
	case warp.LeaseReleased:
		if l.EndReason == "" {
			return "released"
		}
		return "released: " + l.EndReason
	}
	return string(l.State)
}

func staleWord(l warp.Lease) string {
	if l.SchemaVersion == 1 {
		return "v1 in activity mode"
	}
	return "a stale report"
}

func orDashStr(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// diamond and triangle return polygon points around (x, y); a negative
// size points the triangle down.
func diamond(x, y, r float64) string {
	return num(x) + "," + num(y-r) + " " + num(x+r) + "," + num(y) + " " + num(x) + "," + num(y+r) + " " + num(x-r) + "," + num(y)
}

func triangle(x, y, r float64) string {
	// Apex at (x, y + r): pointing down for r > 0 (a mark above the bar).
	return num(x-r) + "," + num(y-r) + " " + num(x+r) + "," + num(y-r) + " " + num(x) + "," + num(y+r*0.4)
}

// tickSteps are the axis steps the picture may use.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// ticks returns the axis ticks: the smallest step giving at most
// tlMaxTicks, on multiples of the step (UTC).
func ticks(sc timeScale) []tlTick {
	span := sc.t1.Sub(sc.t0)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= tlMaxTicks {
			step = s
			break
		}
	}
	layout := "15:04"
	switch {
	case step < time.Minute:
		layout = "15:04:05"
	case step >= 24*time.Hour:
		layout = "Jan 2"
	case span > 24*time.Hour:
		layout = "Jan 2 15:04"
	}
	var out []tlTick
	first := sc.t0.UTC().Truncate(step)
	if first.Before(sc.t0) {
		first = first.Add(step)
	}
	for t := first; !t.After(sc.t1); t = t.Add(step) {
		out = append(out, tlTick{X: num(sc.x(t)), Label: t.UTC().Format(layout), Title: tlTime(t)})
		if len(out) > tlMaxTicks+2 {
			break
		}
	}
	return out
}
