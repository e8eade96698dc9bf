package watch

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/age"
	"github.com/gyrum-labs/warp/internal/clikit"
)

// The terminal renderer on a buffer, with the terminal's height and the
// pacing clock in the test's hands: the screen is cleared once, frames
// overwrite each other from the top, a frame equal to the last is not
// sent, changes within the pace wait for the next tick, the table stops at
// the height, and close restores the terminal.
func TestScreenView(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	wall := now
	var buf bytes.Buffer
	rows := []client.StreamTicket{{ID: "T-1", State: "open", Title: "first"}}
	height := 24
	v := &screenView{w: &buf, now: func() time.Time { return now }, rows: func() []client.StreamTicket { return rows }, table: testTable,
		height: func() int { return height }, title: "warp ticket list --watch   http://w", wall: func() time.Time { return wall }}

	if err := v.snapshot(Start, rows); err != nil {
		t.Fatal(err)
	}
	first := buf.String()
	if !strings.HasPrefix(first, escHideCursor+escWrapOff+escHome+escClear) || !strings.HasSuffix(first, escEraseLine+escEraseBelow) {
		t.Fatalf("first frame %q", first)
	}
	lines := strings.Split(strings.TrimPrefix(strings.TrimSuffix(first, escEraseBelow), escHideCursor+escWrapOff+escHome+escClear), "\n")
	if len(lines) != 4 || lines[0] != "warp ticket list --watch   http://w   "+clikit.Stamp(now)+"   1 ticket, live"+escEraseLine ||
		!strings.HasPrefix(lines[3], "T-1 ") || !strings.HasSuffix(lines[3], "first"+escEraseLine) {
		t.Fatalf("first frame's lines %q", lines)
	}

	// A change within the pace waits for the tick; then one frame, from
	// the top, without clearing.
	buf.Reset()
	rows = append(rows, client.StreamTicket{ID: "T-2", State: "claimed", Epoch: 1, Verdict: "active", Agent: "a", Host: "h",
		SchemaVersion: 2, HeartbeatAt: now.Add(-time.Minute).UnixMilli(), ActivityAt: now.Add(-2 * time.Minute).UnixMilli(),
		ExpiresAt: now.Add(28 * time.Minute).UnixMilli()})
	wall = wall.Add(screenPace / 2)
	if err := v.update(client.StreamMessage{Kind: client.StreamClaimed}, change{}); err != nil || buf.Len() != 0 {
		t.Fatalf("a change within the pace drew %q (%v)", buf.String(), err)
	}
	wall = wall.Add(screenPace)
	if err := v.tick(); err != nil {
		t.Fatal(err)
	}
	second := buf.String()
	if !strings.HasPrefix(second, escHome) || strings.Contains(second, escClear) || !strings.Contains(second, "2 tickets, live") ||
		!strings.Contains(second, "T-2   claimed") {
		t.Fatalf("second frame %q", second)
	}

	// Nothing changed: a tick a second later sends nothing.
	buf.Reset()
	wall = wall.Add(screenAging)
	if err := v.tick(); err != nil || buf.Len() != 0 {
		t.Fatalf("an unchanged frame was sent again: %q (%v)", buf.String(), err)
	}
	// The ages moved: it does.
	now = now.Add(time.Second)
	wall = wall.Add(screenAging)
	if err := v.tick(); err != nil || !strings.Contains(buf.String(), "2m01s ago") {
		t.Fatalf("ages did not move: %q (%v)", buf.String(), err)
	}

	// The connection's state, and a terminal lower than the table.
	buf.Reset()
	height = 4
	wall = wall.Add(screenAging)
	if err := v.connection("reconnecting in 2s (connect: connection refused)"); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSuffix(strings.TrimPrefix(buf.String(), escHome), escEraseBelow), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], "2 tickets, reconnecting in 2s (connect: connection refused)"+escEraseLine) ||
		lines[3] != "… 2 more tickets: narrow the list with --state, --verdict or --host"+escEraseLine {
		t.Fatalf("a frame of 4 rows: %q", lines)
	}

	buf.Reset()
	if err := v.close(); err != nil || buf.String() != "\n"+escWrapOn+escShowCursor {
		t.Fatalf("close wrote %q (%v)", buf.String(), err)
	}
}

// A screen that never drew leaves the terminal alone.
func TestScreenViewCloseBeforeDrawing(t *testing.T) {
	var buf bytes.Buffer
	v := &screenView{w: &buf}
	if err := v.close(); err != nil || buf.Len() != 0 {
		t.Errorf("close wrote %q (%v)", buf.String(), err)
	}
}

func TestChangeLine(t *testing.T) {
	at := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	claimed := client.StreamTicket{ID: "T-1", State: "claimed", Epoch: 2, Verdict: "stalled", Agent: "claude-code:jane@vm", Host: "h1"}
	for _, c := range []struct {
		m        client.StreamMessage
		ch       change
		filtered bool
		want     string
	}{
		{client.StreamMessage{Kind: "verdict-changed", ID: "T-1", Ticket: &claimed, From: "active", To: "stalled"}, change{known: true, inList: true}, true,
			"verdict-changed T-1 state=claimed verdict=stalled epoch=2 agent=claude-code:jane@vm host=h1 from=active to=stalled"},
		{client.StreamMessage{Kind: "lapsed", ID: "T-1", Ticket: &client.StreamTicket{ID: "T-1", State: "open", Epoch: 2, Host: "h1"},
			Reason: "no-heartbeat", FallbackExtended: true}, change{known: true}, true,
			"lapsed T-1 state=open epoch=2 host=h1 reason=no-heartbeat fallback_extended=true (leaves the list)"},
		{client.StreamMessage{Kind: "released", ID: "T-1", Ticket: &client.StreamTicket{ID: "T-1", State: "open", Epoch: 2}, Reason: `said "stop"`},
			change{known: true, inList: true}, true, `released T-1 state=open epoch=2 reason="said \"stop\""`},
		{client.StreamMessage{Kind: "created", ID: "T-2", Ticket: &client.StreamTicket{ID: "T-2", State: "open", Title: "a\x1b[2Jb"}},
			change{inList: true}, false, `created T-2 state=open epoch=0 title=a\x1b[2Jb`},
		{client.StreamMessage{Kind: "claimed", ID: "T-2", Ticket: &claimed}, change{inList: true}, true,
			"claimed T-2 state=claimed verdict=stalled epoch=2 agent=claude-code:jane@vm host=h1 (joins the list)"},
		{client.StreamMessage{Kind: "host-alarm", To: "h1", Reason: "raised"}, change{}, true, "host-alarm host=h1 reason=raised"},
		{client.StreamMessage{Kind: "mode-changed", To: "activity"}, change{}, false, "mode-changed to=activity"},
		{client.StreamMessage{Kind: "claimed", ID: "T-3"}, change{}, false, "claimed T-3 (the server could not read it: reading the list again)"},
	} {
		c.m.Now = at.UnixMilli()
		if got, want := changeLine(c.m, c.ch, c.filtered), clikit.Stamp(at)+" "+c.want; got != want {
			t.Errorf("changeLine:\n got %q\nwant %q", got, want)
		}
	}
}

// Rows join and leave the list as the filter says, keep their place, and
// a row older than the one in the list (sent before the list was read) is
// not applied. (A ticket outside the list has no row to judge by: the
// stream's next message about it, which follows every change, corrects
// what an older one showed.)
func TestWatchSet(t *testing.T) {
	s := watchSet{filter: watchFilter{state: "claimed", host: "h1"}}
	held := func(id string, epoch int64, host string, hb int64) client.StreamTicket {
		return client.StreamTicket{ID: id, State: "claimed", Epoch: epoch, Host: host, HeartbeatAt: hb}
	}
	s.reset([]client.StreamTicket{held("T-1", 1, "h1", 10), held("T-2", 3, "h1", 10)})
	ids := func() string {
		var out []string
		for _, r := range s.list() {
			out = append(out, fmt.Sprintf("%s/%d", r.ID, r.HeartbeatAt))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		row        client.StreamTicket
		want       change
		wantListed string
	}{
		{held("T-1", 1, "h1", 20), change{known: true, inList: true}, "T-1/20 T-2/10"},
		{held("T-1", 1, "h1", 15), change{known: true, inList: true, stale: true}, "T-1/20 T-2/10"}, // an older heartbeat
		{held("T-3", 1, "h2", 20), change{}, "T-1/20 T-2/10"},                                       // another host
		{held("T-3", 1, "h1", 20), change{inList: true}, "T-1/20 T-2/10 T-3/20"},                    // joins last
		{client.StreamTicket{ID: "T-2", State: "open", Epoch: 3, Host: "h1"}, change{known: true}, "T-1/20 T-3/20"},
		{held("T-2", 4, "h2", 30), change{}, "T-1/20 T-3/20"},                                                // claimed again elsewhere
		{held("T-2", 5, "h1", 40), change{inList: true}, "T-1/20 T-3/20 T-2/40"},                             // and here
		{held("T-1", 0, "h1", 90), change{known: true, inList: true, stale: true}, "T-1/20 T-3/20 T-2/40"},   // an older epoch
		{client.StreamTicket{ID: "T-1", State: "completed", Epoch: 1}, change{known: true}, "T-3/20 T-2/40"}, // completed: leaves
		{held("T-3", 1, "h1", 20), change{known: true, inList: true}, "T-3/20 T-2/40"},
	} {
		ch := s.apply(c.row)
		ch.prev = client.StreamTicket{}
		if ch != c.want || ids() != c.wantListed {
			t.Errorf("apply %+v: %+v, list %q; want %+v, list %q", c.row, ch, ids(), c.want, c.wantListed)
		}
	}
	// An ended lease's ticket does not come back as claimed at the same epoch.
	s = watchSet{filter: watchFilter{}}
	s.reset([]client.StreamTicket{{ID: "T-1", State: "open", Epoch: 2}})
	if ch := s.apply(held("T-1", 2, "h1", 5)); !ch.stale {
		t.Errorf("a claimed row of an ended lease was applied: %+v", ch)
	}
	if ch := s.apply(held("T-1", 3, "h1", 5)); ch.stale || !ch.inList {
		t.Errorf("the next claim was not applied: %+v", ch)
	}
}

func TestWatchFilterFlags(t *testing.T) {
	if got := (watchFilter{state: "claimed", verdict: "stalled", host: "h1"}).flags(); got != "--state claimed --verdict stalled --host h1" {
		t.Errorf("flags %q", got)
	}
	// A verdict or a host selects held leases only, as the server's list.
	open := client.StreamTicket{ID: "T-1", State: "open", Host: "h1", Verdict: ""}
	if (watchFilter{host: "h1"}).match(open) || !(watchFilter{}).match(open) {
		t.Error("--host matched an ended lease's host")
	}
}

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		attempt  int
		retry    time.Duration
		from, to time.Duration
	}{
		{1, 0, 2 * time.Second, 2500 * time.Millisecond}, // no retry: yet 2 s
		{1, 2 * time.Second, 2 * time.Second, 2500 * time.Millisecond},
		{3, 2 * time.Second, 8 * time.Second, 10 * time.Second},
		{50, 2 * time.Second, 30 * time.Second, 37500 * time.Millisecond},
		{2, time.Minute, time.Minute, 75 * time.Second}, // a longer retry is the bound
	} {
		for range 20 {
			if d := Backoff(c.attempt, c.retry); d < c.from || d > c.to {
				t.Errorf("Backoff(%d, %s) = %s, want %s to %s", c.attempt, c.retry, d, c.from, c.to)
			}
		}
	}
}

// testTable draws rows as `warp ticket list` would, in short: the
// columns' names, then a line a ticket (the CLI's own table is tested
// through the command, in internal/warpcli).
func testTable(w io.Writer, now time.Time, rows []client.StreamTicket) error {
	if _, err := fmt.Fprintln(w, "ID    STATE  TITLE"); err != nil {
		return err
	}
	for _, r := range rows {
		line := fmt.Sprintf("%-5s %-6s %s", r.ID, r.State, r.Title)
		if r.ActivityAt != 0 {
			line += age.Ago(now, client.MSTime(r.ActivityAt))
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
