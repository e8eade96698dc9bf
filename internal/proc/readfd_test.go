package proc_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/proc"
)

func TestReadFD(t *testing.T) {
	dir := t.TempDir()
	read := func(size int, limit int64) ([]byte, []byte, error) {
		t.Helper()
		want := bytes.Repeat([]byte("0123456789"), size/10+1)[:size]
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		got, err := proc.ReadFD(fd, p, limit)
		return want, got, err
	}
	for _, c := range []struct {
		size    int
		limit   int64
		tooLong bool
	}{
		{0, 10, false}, {10, 10, false}, {11, 10, true},
		{4096, 4096, false}, {4097, 4096, true}, {70000, 65536, true},
		{20000, -1, false}, // no bound: grows past the first buffer
	} {
		want, got, err := read(c.size, c.limit)
		if c.tooLong {
			if !errors.Is(err, proc.ErrTooLarge) {
				t.Errorf("%d bytes, limit %d: %v, want ErrTooLarge", c.size, c.limit, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%d bytes, limit %d: %d bytes, %v; want them all", c.size, c.limit, len(got), err)
		}
	}
}
