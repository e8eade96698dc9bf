package gyrumdir_test

import (
	"os"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// A loop is silent when its pid file is gone or names a dead process, or
// when its state stopped moving more than a minute past its next tick (its
// writes fail: a full disk); a loop between two long ticks is not.
func TestLoopSilent(t *testing.T) {
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if !d.LoopSilent(now) {
		t.Fatal("no heartbeat.pid: want silent")
	}
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WritePID(gyrumdir.LoopPIDFile, self); err != nil {
		t.Fatal(err)
	}
	state := func(next time.Time, written time.Time) {
		t.Helper()
		if err := d.WriteState(gyrumdir.LoopState{PID: self.PID, StartTime: self.StartTime, NextTickAt: next}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d.File(gyrumdir.StateFile), written, written); err != nil {
			t.Fatal(err)
		}
	}
	state(now.Add(4*time.Minute), now)
	if d.LoopSilent(now) {
		t.Fatal("a live loop that just wrote its state: want not silent")
	}
	state(now.Add(time.Minute), now.Add(-3*time.Minute))
	if d.LoopSilent(now) {
		t.Fatal("a live loop between two long ticks: want not silent")
	}
	state(now.Add(-2*time.Minute), now.Add(-6*time.Minute))
	if !d.LoopSilent(now) {
		t.Fatal("a live loop whose state is 2 min past its next tick: want silent")
	}
	dead := self
	dead.StartTime++ // this pid, another process: not the loop
	if err := d.WritePID(gyrumdir.LoopPIDFile, dead); err != nil {
		t.Fatal(err)
	}
	state(now.Add(4*time.Minute), now.Add(-2*time.Minute))
	if !d.LoopSilent(now) {
		t.Fatal("heartbeat.pid naming another process: want silent")
	}
}

// ShouldAsk: once a minute at most, never again once the agent was told
// of this lease's end, and again for a newer lease.json.
func TestShouldAsk(t *testing.T) {
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if d.ShouldAsk(now) {
		t.Fatal("no lease.json: nothing to ask about")
	}
	if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: "http://127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	if !d.ShouldAsk(now) {
		t.Fatal("first question: want ask")
	}
	if d.ShouldAsk(now.Add(30 * time.Second)) {
		t.Fatal("30 s after the last question: want no ask")
	}
	if !d.ShouldAsk(now.Add(61 * time.Second)) {
		t.Fatal("61 s after the last question: want ask")
	}
	if err := d.MarkTold(now.Add(62 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if d.ShouldAsk(now.Add(10 * time.Minute)) {
		t.Fatal("told: want no more questions about this lease")
	}
	later := now.Add(11 * time.Minute)
	if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-2", Epoch: 1, WarpURL: "http://127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(d.File(gyrumdir.LeaseFile), later, later); err != nil {
		t.Fatal(err)
	}
	if !d.ShouldAsk(later.Add(time.Minute)) {
		t.Fatal("a newer lease.json: want ask")
	}
	// A symbolic link in the marker's place is not followed.
	victim := d.File("victim")
	if err := os.WriteFile(victim, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-time.Hour)
	os.Chtimes(victim, old, old)
	os.Remove(d.File(gyrumdir.ToldFile))
	if err := os.Symlink(victim, d.File(gyrumdir.ToldFile)); err != nil {
		t.Fatal(err)
	}
	_ = d.MarkTold(now)
	if fi, _ := os.Stat(victim); !fi.ModTime().Equal(old) {
		t.Fatalf("MarkTold followed a symbolic link: the target's mtime is %v", fi.ModTime())
	}
}
