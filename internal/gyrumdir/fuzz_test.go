package gyrumdir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// FuzzFiles writes fuzzed content into every file gyrum reads back —
// lease.json, the pid files, wait.json, the lease-ended notice,
// last-activity and a registry entry — and reads it: no panic, and either
// an error that says corrupt (or unsafe) or a value that passes its checks.
func FuzzFiles(f *testing.F) {
	for _, s := range []string{`{"ticket":"T-1","epoch":1,"warp_url":"http://127.0.0.1:7077"}`, "123 456\n", `{"reason":"x","declared_at":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z"}`,
		`{"ticket":"T-1","epoch":1,"how":"lapsed","at":"2026-01-01T00:00:00Z"}`, `{"pid":1,"start_time":2,"dir":"/x","ticket":"T-1"}`, "", "{", "\x00\xff", "-1 5"} {
		f.Add([]byte(s))
	}
	d, err := gyrumdir.Create(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	reg := gyrumdir.NewRegistry(f.TempDir())
	if err := os.MkdirAll(reg.Dir(), 0o700); err != nil {
		f.Fatal(err)
	}
	ok := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, gyrumdir.ErrCorrupt) && !errors.Is(err, gyrumdir.ErrUnsafe) && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: error %v is neither corrupt nor unsafe", what, err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{gyrumdir.LeaseFile, gyrumdir.LoopPIDFile, gyrumdir.WaitFile, gyrumdir.NoticeFile, gyrumdir.ActivityFile} {
			if err := os.WriteFile(d.File(name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		l, err := d.ReadLease()
		ok(t, "lease", err)
		if err == nil {
			if verr := l.Validate(); verr != nil {
				t.Fatalf("ReadLease returned an invalid lease %+v: %v", l, verr)
			}
		}
		_, err = d.ReadPID(gyrumdir.LoopPIDFile)
		ok(t, "pid", err)
		w, err := d.ReadWait()
		ok(t, "wait", err)
		if err == nil && !w.Until.After(w.DeclaredAt) {
			t.Fatalf("ReadWait returned %+v", w)
		}
		if n, got := d.TakeNotice(); got && n.Ticket == "" {
			t.Fatalf("a notice without a ticket: %+v", n)
		}
		_, _, _, err = d.ReadActivity()
		ok(t, "activity", err)
		if err := os.WriteFile(filepath.Join(reg.Dir(), "42.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, bad, err := reg.List()
		if err != nil || len(entries)+len(bad) != 1 {
			t.Fatalf("registry List: %v %v %v", entries, bad, err)
		}
	})
}
