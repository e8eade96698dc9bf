package gyrumdir_test

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

func TestActivityRecordRoundTrip(t *testing.T) {
	d := mustCreate(t)
	at := time.Date(2026, 5, 6, 12, 0, 0, 123456789, time.UTC)
	rec := gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, Event: "PostToolUse", Tool: "Bash", At: at}
	if err := d.WriteActivity(rec); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(d.File(gyrumdir.ActivityFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != gyrumdir.RecordSize || data[len(data)-1] != '\n' || bytes.Count(data, []byte{'\n'}) != 1 {
		t.Fatalf("record is %d bytes %q, want one line of %d", len(data), data, gyrumdir.RecordSize)
	}
	if perm(t, d.File(gyrumdir.ActivityFile)) != gyrumdir.FilePerm {
		t.Errorf("last-activity mode: got %v, want 0600", perm(t, d.File(gyrumdir.ActivityFile)))
	}
	got, ok, mtime, err := d.ReadActivity()
	if err != nil || !ok {
		t.Fatalf("ReadActivity: %v %v", ok, err)
	}
	if got.Source != rec.Source || got.Event != rec.Event || got.Tool != rec.Tool || !got.At.Equal(at) {
		t.Errorf("record: got %+v, want %+v", got, rec)
	}
	if !mtime.Equal(at) {
		t.Errorf("mtime: got %v, want %v (the activity signal)", mtime, at)
	}
	// A shorter record over a longer one: no tail of the old one survives
	// into the first line.
	at2 := at.Add(time.Second)
	if err := d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, At: at2}); err != nil {
		t.Fatal(err)
	}
	got, ok, _, _ = d.ReadActivity()
	if !ok || got.Tool != "" || got.Event != "" || !got.At.Equal(at2) {
		t.Errorf("after a shorter record: got %+v %v", got, ok)
	}
	if last, err := d.LastActivity(); err != nil || !last.Equal(at2) {
		t.Errorf("LastActivity: got %v %v, want %v", last, err, at2)
	}
}

func TestActivityRecordCutsLongFields(t *testing.T) {
	d := mustCreate(t)
	at := time.Now()
	for name, rec := range map[string]gyrumdir.ActivityRecord{
		"long tool":          {Source: gyrumdir.SourceHook, Event: "PostToolUse", Tool: strings.Repeat("t", 5000), At: at},
		"escapes":            {Source: gyrumdir.SourceHook, Event: strings.Repeat("\x01", 64), Tool: strings.Repeat("\x02", 120), At: at},
		"multibyte":          {Source: gyrumdir.SourceHook, Tool: strings.Repeat("é", 300), At: at},
		"newline in a field": {Source: gyrumdir.SourceHook, Tool: "a\nb", At: at},
	} {
		if err := d.WriteActivity(rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, ok, _, err := d.ReadActivity()
		if err != nil || !ok || got.Source != gyrumdir.SourceHook || !got.At.Equal(at) {
			t.Errorf("%s: got %+v %v %v", name, got, ok, err)
		}
		if len(got.Tool) > 120 {
			t.Errorf("%s: tool kept %d bytes", name, len(got.Tool))
		}
		if st, _ := os.Stat(d.File(gyrumdir.ActivityFile)); st.Size() != gyrumdir.RecordSize {
			t.Errorf("%s: file is %d bytes, want %d", name, st.Size(), gyrumdir.RecordSize)
		}
	}
}

func TestReadActivityOldFormat(t *testing.T) {
	d := mustCreate(t)
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	if err := d.TouchActivity(at); err != nil { // empty file, as an older gyrum leaves it
		t.Fatal(err)
	}
	_, ok, mtime, err := d.ReadActivity()
	if err != nil || ok || !mtime.Equal(at) {
		t.Errorf("empty file: ok %v mtime %v err %v, want no record and mtime %v", ok, mtime, err, at)
	}
	os.WriteFile(d.File(gyrumdir.ActivityFile), []byte("{not json"), 0o600)
	if _, ok, _, err := d.ReadActivity(); err != nil || ok {
		t.Errorf("garbage: ok %v err %v, want no record, no error", ok, err)
	}
	os.Remove(d.File(gyrumdir.ActivityFile))
	if _, _, _, err := d.ReadActivity(); err == nil {
		t.Error("missing file: want an error")
	}
}

func TestConcurrentRecordsStayWhole(t *testing.T) {
	d := mustCreate(t)
	if err := d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceStartWork, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				tool := strings.Repeat("x", (i*37+j)%100)
				if err := d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, Tool: tool, At: time.Now()}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 200 {
		if _, ok, _, err := d.ReadActivity(); err != nil || !ok {
			t.Errorf("a reader saw no whole record: ok %v err %v", ok, err)
			break
		}
	}
	wg.Wait()
	if _, ok, _, err := d.ReadActivity(); err != nil || !ok {
		t.Errorf("after the writers: ok %v err %v", ok, err)
	}
}

// A read that races a rewrite can see the start of one record and the
// end of the other, and such a mix can parse (the src of one, the time of
// the other). Two records of the same length are rewritten in turn while
// the test reads: every record read must be one of the two.
func TestRecordReadDuringRewritesIsNeverAMix(t *testing.T) {
	d := mustCreate(t)
	recs := []gyrumdir.ActivityRecord{
		{Source: gyrumdir.SourceHook, Event: "PostToolUse", Tool: "Bash", At: time.Date(2026, 12, 4, 12, 0, 59, 999999999, time.UTC)},
		{Source: gyrumdir.SourceWait, Event: "PostToolUse", Tool: "Read", At: time.Date(2026, 12, 4, 12, 1, 11, 111111111, time.UTC)},
	}
	if err := d.WriteActivity(recs[0]); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := d.WriteActivity(recs[i%2]); err != nil {
				done <- err
				return
			}
		}
	}()
	mixes := 0
	for range 40000 {
		rec, ok, _, err := d.ReadActivity()
		if err != nil {
			t.Fatal(err)
		}
		if ok && rec != recs[0] && rec != recs[1] {
			if mixes++; mixes <= 3 {
				t.Errorf("read a record that was never written: %+v", rec)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if mixes > 0 {
		t.Errorf("%d mixed records in 40000 reads", mixes)
	}
}

func TestHookFiredSince(t *testing.T) {
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	before, after := start.Add(-time.Minute), start.Add(time.Minute)
	cases := []struct {
		name  string
		setup func(d gyrumdir.Dir)
		want  bool
	}{
		{"missing", func(gyrumdir.Dir) {}, false},
		{"hook record after start", func(d gyrumdir.Dir) {
			d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, Event: "PostToolUse", At: after})
		}, true},
		{"hook record before start", func(d gyrumdir.Dir) {
			d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, At: before})
		}, false},
		{"start-work record after start", func(d gyrumdir.Dir) {
			d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceStartWork, At: after})
		}, false},
		{"wait record after start", func(d gyrumdir.Dir) {
			d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceWait, At: after})
		}, false},
		{"start-work record then an old hook's touch", func(d gyrumdir.Dir) {
			d.WriteActivity(gyrumdir.ActivityRecord{Source: gyrumdir.SourceStartWork, At: before})
			d.TouchActivity(after)
		}, true},
		{"old format touched after start", func(d gyrumdir.Dir) { d.TouchActivity(after) }, true},
		{"old format touched before start", func(d gyrumdir.Dir) { d.TouchActivity(before) }, false},
	}
	for _, c := range cases {
		d := mustCreate(t)
		c.setup(d)
		got, err := d.HookFiredSince(start)
		if err != nil || got != c.want {
			t.Errorf("%s: got %v, %v, want %v", c.name, got, err, c.want)
		}
	}
}

func TestHookCounterExactUnderConcurrency(t *testing.T) {
	d := mustCreate(t)
	for range 5 { // events before the counter exists are not counted
		d.CountHookEvent()
	}
	c, err := d.NewHookCounter()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Take(); n != 0 || err != nil {
		t.Fatalf("fresh counter: got %d %v, want 0", n, err)
	}
	const writers, each = 8, 1000 // 8000 > HookEventsRotate: rotations happen meanwhile
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var total int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := c.Take()
			if err != nil {
				t.Error(err)
				return
			}
			total += n
			time.Sleep(time.Millisecond)
		}
	}()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := d.CountHookEvent(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	for range 2 { // the second Take collects what landed in the rotated file
		n, err := c.Take()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != writers*each {
		t.Errorf("counted %d hook events, want %d", total, writers*each)
	}
	if st, err := os.Stat(d.File(gyrumdir.HookEventsFile)); err == nil && st.Size() >= 2*gyrumdir.HookEventsRotate {
		t.Errorf("hook-events grew to %d bytes: not rotated", st.Size())
	}
}

func TestHookCounterLateWriterAfterRotation(t *testing.T) {
	d := mustCreate(t)
	c, err := d.NewHookCounter()
	if err != nil {
		t.Fatal(err)
	}
	for range gyrumdir.HookEventsRotate {
		d.CountHookEvent()
	}
	// Hooks that opened the file before the rotation write after it.
	f, err := os.OpenFile(d.File(gyrumdir.HookEventsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := os.OpenFile(d.File(gyrumdir.HookEventsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Take(); n != gyrumdir.HookEventsRotate {
		t.Fatalf("first take: got %d, want %d", n, gyrumdir.HookEventsRotate)
	}
	if _, err := os.Stat(d.File(gyrumdir.HookEventsOld)); err != nil {
		t.Fatalf("not rotated: %v", err)
	}
	f.Write([]byte{'.'})
	f.Close()
	d.CountHookEvent() // a new hook: the fresh file
	if n, _ := c.Take(); n != 2 {
		t.Errorf("second take: got %d, want 2 (one late, one new)", n)
	}
	// The rotated file stays until the next rotation, so an even slower
	// hook is still counted, once.
	slow.Write([]byte{'.'})
	slow.Close()
	if n, _ := c.Take(); n != 1 {
		t.Errorf("third take: got %d, want 1 (the slow hook)", n)
	}
	if n, _ := c.Take(); n != 0 {
		t.Errorf("fourth take: got %d, want 0", n)
	}
	// Clear removes the counter files with the rest.
	d.CountHookEvent()
	if err := d.Clear(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.File(gyrumdir.HookEventsFile)); err == nil {
		t.Error("Clear left hook-events")
	}
}
