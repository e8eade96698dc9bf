package gyrumdir

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"
)

// A LeaseWatch decodes lease.json again only when the file changed —
// replaced (a new inode), edited in place (size or times), removed,
// corrupt — and answers from what it read otherwise.
func TestLeaseWatchRereadsOnlyAChangedFile(t *testing.T) {
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := d.WatchLease()
	reads := 0
	w.read = func() (Lease, error) { reads++; return d.ReadLease() }
	read := func(want Lease, wantReads int) {
		t.Helper()
		got, err := w.Read()
		if err != nil || got != want {
			t.Fatalf("Read: %+v, %v; want %+v", got, err, want)
		}
		if reads != wantReads {
			t.Fatalf("%d reads of the file, want %d", reads, wantReads)
		}
	}
	if _, err := w.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no lease.json: %v, want fs.ErrNotExist", err)
	}
	l1 := Lease{Ticket: "T-1", Epoch: 1, WarpURL: "http://127.0.0.1:7077", Agent: "a", Host: "h"}
	if err := d.WriteLease(l1); err != nil {
		t.Fatal(err)
	}
	read(l1, 2)
	read(l1, 2) // unchanged: not read again
	read(l1, 2)

	// Replaced by rename, same size: a new inode.
	l2 := l1
	l2.Epoch = 2
	if err := d.WriteLease(l2); err != nil {
		t.Fatal(err)
	}
	read(l2, 3)
	read(l2, 3)

	// Edited in place, same size and inode: its times moved (set here, so
	// the test does not hang on the file system's clock granularity).
	p := d.File(LeaseFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Replace(data, []byte(`"epoch": 2`), []byte(`"epoch": 3`), 1)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	l3 := l2
	l3.Epoch = 3
	read(l3, 4)
	read(l3, 4)

	// Edited in place to something that is not a lease: an error every
	// time, each a read; then mended.
	if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 5; i <= 6; i++ {
		if _, err := w.Read(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("corrupt lease.json: %v, want ErrCorrupt", err)
		}
		if reads != i {
			t.Fatalf("corrupt lease.json: %d reads, want %d", reads, i)
		}
	}
	if err := d.WriteLease(l1); err != nil {
		t.Fatal(err)
	}
	read(l1, 7)
	read(l1, 7)

	// Removed: gone at once, whatever was read before.
	if err := d.RemoveLease(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed lease.json: %v, want fs.ErrNotExist", err)
	}
	if err := d.WriteLease(l2); err != nil {
		t.Fatal(err)
	}
	read(l2, 9)
}
