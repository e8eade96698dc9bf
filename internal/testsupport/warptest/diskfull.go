package warptest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size (as mount's size=, "8m") on a new
// directory and unmounts it at the end of the test; without root (or where
// the mount is refused) the test is skipped, saying why. CI runs as root.
func SmallFS(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// FillDisk writes a file into dir until its file system is full and
// returns the function that frees the space again.
func FillDisk(t testing.TB, dir string) (free func()) {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	// The last pages: a 64 KiB write fails while a small one still fits.
	for _, err := f.Write(buf[:512]); err == nil; _, err = f.Write(buf[:512]) {
	}
	return func() {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}
