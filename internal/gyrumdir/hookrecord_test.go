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
	mixes, whole := 0, 0
	for range 40000 {
		rec, ok, _, err := d.ReadActivity()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue // not at all: allowed, when writes kept racing the reads
		}
		whole++
		if rec != recs[0] && rec != recs[1] {
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
	if whole < 20000 {
		t.Errorf("%d of 40000 reads found a record; want most of them", whole)
	}
}

// BenchmarkWriteActivity is the record write the hook makes on every tool
// call (docs/BENCHMARKS.md).
func BenchmarkWriteActivity(b *testing.B) {
	d := mustCreate(b)
	rec := gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, Event: "PostToolUse", Tool: "Bash", At: time.Now()}
	for b.Loop() {
		if err := d.WriteActivity(rec); err != nil {
			b.Fatal(err)
		}
	}
}
