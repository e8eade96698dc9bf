package quiet_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gyrum-labs/warp/internal/quiet"
)

func TestRawOnLinux(t *testing.T) {
	want := runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64")
	if quiet.Raw != want {
		t.Fatalf("Raw = %v on %s/%s, want %v", quiet.Raw, runtime.GOOS, runtime.GOARCH, want)
	}
	if (quiet.Dialer() != nil) != want {
		t.Fatalf("Dialer() set = %v, want %v", quiet.Dialer() != nil, want)
	}
}

// TestFileCalls drives every file call on a real file: what one writes,
// the others read back, and their errors are the kernel's errno.
func TestFileCalls(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	fd, err := quiet.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close(fd)
	if n, err := quiet.Write(fd, []byte("hello, world")); n != 12 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := quiet.Pwrite(fd, []byte("J"), 7); n != 1 || err != nil {
		t.Fatalf("Pwrite = %d, %v", n, err)
	}
	b := make([]byte, 64)
	if n, err := quiet.Pread(fd, b, 0); err != nil || string(b[:n]) != "hello, Jorld" {
		t.Fatalf("Pread = %q, %v", b[:n], err)
	}
	if err := quiet.Ftruncate(fd, 5); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Fchmod(fd, 0o600); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := quiet.Fstat(fd, &st); err != nil || st.Size != 5 || st.Mode&0o777 != 0o600 {
		t.Fatalf("Fstat: size %d mode %o, %v", st.Size, st.Mode&0o777, err)
	}
	// Read goes on from the descriptor's offset (12, past the end now).
	if n, err := quiet.Read(fd, b); n != 0 || err != nil {
		t.Fatalf("Read at the end = %d, %v", n, err)
	}
	rd, err := quiet.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := quiet.Read(rd, b); string(b[:n]) != "hello" || err != nil {
		t.Fatalf("Read = %q, %v", b[:n], err)
	}
	// A second descriptor cannot take the lock another holds.
	if err := quiet.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Flock(rd, unix.LOCK_SH|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("Flock of a locked file = %v, want EWOULDBLOCK", err)
	}
	if err := quiet.Close(rd); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Close(rd); !errors.Is(err, unix.EBADF) {
		t.Fatalf("second Close = %v, want EBADF", err)
	}
	if n, err := quiet.Read(rd, b); n != 0 || !errors.Is(err, unix.EBADF) {
		t.Fatalf("Read of a closed descriptor = %d, %v", n, err)
	}

	// Lstat sees a symbolic link itself; Open with O_NOFOLLOW refuses it.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Lstat(link, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Fatalf("Lstat of a symlink: mode %o, %v", st.Mode, err)
	}
	if _, err := quiet.Open(link, unix.O_RDONLY|unix.O_NOFOLLOW, 0); !errors.Is(err, unix.ELOOP) {
		t.Fatalf("Open O_NOFOLLOW of a symlink = %v, want ELOOP", err)
	}
	if _, err := quiet.Open(filepath.Join(dir, "missing"), unix.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file = %v, want ErrNotExist", err)
	}
	if err := quiet.Lstat(filepath.Join(dir, "missing"), &st); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lstat of a missing file = %v", err)
	}
	if _, err := quiet.Open("a\x00b", unix.O_RDONLY, 0); err == nil {
		t.Fatal("Open of a path with a NUL byte succeeded")
	}
}

func TestRenameExchange(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("renameat2 is Linux's")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for p, s := range map[string]string{a: "A", b: "B"} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := quiet.Renameat2(a, b, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if x, _ := os.ReadFile(a); string(x) != "B" {
		t.Fatalf("a holds %q after the exchange", x)
	}
	if err := quiet.Renameat2(a, filepath.Join(dir, "none"), unix.RENAME_EXCHANGE); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("exchange with a missing file = %v, want ErrNotExist", err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	var want []string
	// Enough names to take several getdents calls of 4 KiB.
	for i := range 300 {
		name := "marker-" + string(rune('a'+i%26)) + "-" + filepath.Base(t.Name()) + "-" + itoa(i)
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	want = append(want, "sub")
	ents, err := quiet.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name)
		if e.Name == "sub" && e.Type != unix.DT_DIR && e.Type != unix.DT_UNKNOWN {
			t.Errorf("sub has type %d", e.Type)
		}
		if e.Name != "sub" && e.Type != unix.DT_REG && e.Type != unix.DT_UNKNOWN {
			t.Errorf("%s has type %d", e.Name, e.Type)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ReadDir: %d names, want %d (first %v)", len(got), len(want), got[:min(3, len(got))])
	}
	// Never through a symbolic link, never a file.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, filepath.Join(dir, want[0]), filepath.Join(dir, "missing")} {
		if _, err := quiet.ReadDir(p); err == nil {
			t.Errorf("ReadDir(%s) succeeded", p)
		} else if pe := (*fs.PathError)(nil); !errors.As(err, &pe) {
			t.Errorf("ReadDir(%s) = %v, not a *fs.PathError", p, err)
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
