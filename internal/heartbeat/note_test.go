package heartbeat_test

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// The agent's note (gyrum note) goes out once with the next heartbeat
// after it changes, and warp keeps it as the attempt's last note; a new
// note goes out again (issue 45).
func TestNoteIsSentOnceWithTheNextHeartbeat(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-note", ws.Claim("T-note", "A"), parent)
	at := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	if err := d.WriteNote(gyrumdir.Note{Text: "tried A; next B", At: at}); err != nil {
		t.Fatal(err)
	}
	startLoop(t, d, nil)
	waitFor(t, "three heartbeats", func() bool { return len(ws.Answered()) >= 3 })
	noted := func() (n int, last string) {
		for _, b := range ws.Answered() {
			if b.Body.Note != nil {
				n++
				last = *b.Body.Note
			}
		}
		return n, last
	}
	if n, last := noted(); n != 1 || last != "tried A; next B" {
		t.Fatalf("heartbeats with the note: %d (last %q), want 1", n, last)
	}
	if v := ws.Ticket("T-note"); len(v.Attempts) != 1 || v.Attempts[0].Record.Note != "tried A; next B" || !v.Attempts[0].Record.NoteAt.Equal(at) {
		t.Fatalf("warp's attempt: %+v", v.Attempts)
	}
	if err := d.WriteNote(gyrumdir.Note{Text: "B failed too", At: at.Add(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second note", func() bool { n, _ := noted(); return n == 2 })
	if v := ws.Ticket("T-note"); v.Attempts[0].Record.Note != "B failed too" {
		t.Fatalf("warp's note after the second: %q", v.Attempts[0].Record.Note)
	}
}
