package watchdog

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// A stale entry the sweep judged is removed only while it is still that
// entry: a new loop that took the pid and registered between the sweep's
// read and its removal keeps its entry.
func TestRemoveEntryLeavesARewrittenEntry(t *testing.T) {
	reg := gyrumdir.NewRegistry(t.TempDir())
	fresh := gyrumdir.Entry{PID: 4242, StartTime: 900, Dir: "/w/new", Ticket: "T-2"}
	if err := reg.Add(fresh); err != nil {
		t.Fatal(err)
	}
	judged := Loop{PID: 4242, StartTime: 100, Dir: "/w/old", Ticket: "T-1", Source: SourceRegistry}
	l := removeEntry(Options{Registry: reg}, judged, reasonDead)
	if l.Action != ActionSkipped {
		t.Errorf("action %q (%s), want %q", l.Action, l.Reason, ActionSkipped)
	}
	if e, err := reg.Read(4242); err != nil || e != fresh {
		t.Fatalf("the new loop's entry: %+v, %v", e, err)
	}
	// The judged entry itself goes.
	old := gyrumdir.Entry{PID: 4243, StartTime: 100, Dir: "/w/old", Ticket: "T-1"}
	if err := reg.Add(old); err != nil {
		t.Fatal(err)
	}
	if l := removeEntry(Options{Registry: reg}, Loop{PID: 4243, StartTime: 100}, reasonDead); l.Action != ActionRemoved {
		t.Errorf("the judged entry: action %q, want %q", l.Action, ActionRemoved)
	}
	if _, err := reg.Read(4243); err == nil {
		t.Error("the judged entry is still there")
	}
}
