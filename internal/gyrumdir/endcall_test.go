package gyrumdir_test

import (
	"os"
	"testing"
	"time"
)

// EndCall turns a call's marker into its tombstone, which InFlight does
// not list; a second EndCall of the same call reports a duplicate, as
// does one that races it for a call without a marker; PruneEnded removes
// tombstones older than its bound only.
func TestEndCallTombstones(t *testing.T) {
	d := mustCreate(t)
	old := time.Now().Add(-time.Hour)
	if err := d.StartInFlight("call-1", "Shell", old); err != nil {
		t.Fatal(err)
	}
	if started, ended := d.CallSeen("call-1"); !started || ended {
		t.Fatalf("running call: started %v ended %v", started, ended)
	}
	if dup, err := d.EndCall("call-1"); dup || err != nil {
		t.Fatalf("first end: dup %v, %v", dup, err)
	}
	if ms, err := d.InFlight(); err != nil || len(ms) != 0 {
		t.Fatalf("after the end InFlight lists %+v, %v", ms, err)
	}
	if started, ended := d.CallSeen("call-1"); started || !ended {
		t.Fatalf("ended call: started %v ended %v", started, ended)
	}
	if dup, err := d.EndCall("call-1"); !dup || err != nil {
		t.Fatalf("second end: dup %v, %v; want a duplicate", dup, err)
	}
	// A call whose start was never seen (its Pre hook not wired) ends
	// once, and is a duplicate the second time.
	if dup, err := d.EndCall("call-2"); dup || err != nil {
		t.Fatalf("end without a start: dup %v, %v", dup, err)
	}
	if dup, _ := d.EndCall("call-2"); !dup {
		t.Fatal("second end without a start is not a duplicate")
	}
	// call-1's tombstone keeps its marker's time (an hour ago); call-2's
	// is new: pruning what ended before a minute ago removes call-1's.
	if err := d.PruneEnded(time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ended := d.CallSeen("call-1"); ended {
		t.Error("the old tombstone survived the prune")
	}
	if _, ended := d.CallSeen("call-2"); !ended {
		t.Error("the new tombstone was pruned")
	}
	// A missing in-flight/ is no error.
	if err := os.RemoveAll(d.File("in-flight")); err != nil {
		t.Fatal(err)
	}
	if err := d.PruneEnded(time.Now()); err != nil {
		t.Fatal(err)
	}
	if dup, err := d.EndCall("call-3"); dup || err != nil {
		t.Fatalf("end with no in-flight/: dup %v, %v", dup, err)
	}
}
