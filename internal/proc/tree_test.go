package proc_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/proc"
)

// A real tree: sh → (sleep, busy sh loop). The snapshot finds both below
// sh, places their start after the test began, and the busy one's CPU
// time advances while the sleeping one's does not.
func TestSnapshotDescendantsAndCPU(t *testing.T) {
	before := time.Now().Add(-time.Second) // start times are rounded to a clock tick
	cmd := startProcess(t, "sh", "-c", "sleep 100 & i=0; while :; do i=$((i+1)); done")
	root := cmd.Process.Pid
	var kids []proc.Sample
	waitFor(t, "sleep below sh", func() bool {
		s, err := proc.TakeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		kids = s.Descendants(root)
		// The child is sh's fork until it has exec'd sleep: a snapshot
		// between the two sees it named sh.
		return len(kids) == 1 && kids[0].Name == "sleep"
	})
	if kids[0].Name != "sleep" || kids[0].PPID != root {
		t.Fatalf("descendant: got %+v, want sleep with parent %d", kids[0], root)
	}
	if kids[0].Started.Before(before) || kids[0].Started.After(time.Now().Add(time.Second)) {
		t.Errorf("sleep started at %v: want between %v and now", kids[0].Started, before)
	}
	if got := (proc.Snapshot{Procs: []proc.Sample{kids[0]}}).Descendants(root, "sle"); len(got) != 0 {
		t.Errorf("a skipped name is still listed: %+v", got)
	}
	cpu := func(pid int) time.Duration {
		s, err := proc.TakeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(s.Procs, func(p proc.Sample) bool { return p.PID == pid })
		if i < 0 {
			t.Fatalf("pid %d missing from the snapshot", pid)
		}
		return s.Procs[i].CPU
	}
	first, sleepFirst := cpu(root), cpu(kids[0].PID)
	waitFor(t, "the busy shell's CPU time to advance", func() bool { return cpu(root) >= first+50*time.Millisecond })
	if got := cpu(kids[0].PID); got != sleepFirst {
		t.Errorf("sleep's CPU time moved from %v to %v", sleepFirst, got)
	}
}

// Descendants walks the whole subtree and leaves out skipped names with
// everything below them.
func TestDescendantsWalk(t *testing.T) {
	s := proc.Snapshot{Procs: []proc.Sample{
		{Identity: proc.Identity{PID: 1}, PPID: 0, Name: "init"},
		{Identity: proc.Identity{PID: 10}, PPID: 1, Name: "claude"},
		{Identity: proc.Identity{PID: 11}, PPID: 10, Name: "bash"},
		{Identity: proc.Identity{PID: 12}, PPID: 11, Name: "go"},
		{Identity: proc.Identity{PID: 13}, PPID: 12, Name: "compile"},
		{Identity: proc.Identity{PID: 14}, PPID: 10, Name: "gyrum"},
		{Identity: proc.Identity{PID: 15}, PPID: 14, Name: "sh"},
		{Identity: proc.Identity{PID: 20}, PPID: 1, Name: "other"},
	}}
	var got []int
	for _, p := range s.Descendants(10, "gyrum") {
		got = append(got, p.PID)
	}
	slices.Sort(got)
	if want := []int{11, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("descendants of 10: got %v, want %v", got, want)
	}
}
