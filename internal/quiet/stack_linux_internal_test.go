//go:build linux && (amd64 || arm64)

package quiet

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// atDepth runs f at the bottom of n frames of a fresh goroutine. A new
// goroutine's stack is small and doubles when a call needs more: some n
// puts the stack's end right where a system call's wrapper starts, so its
// prologue copies the stack to a new place.
//
//go:noinline
func atDepth(n int, f func() string) string {
	if n > 0 {
		return atDepth(n-1, f)
	}
	return f()
}

// TestPointerArgumentsSurviveStackGrowth makes each call that hands the
// kernel a pointer — to a result it fills in or a buffer it reads into —
// at every stack depth up to a few stack doublings, with the result on the
// caller's stack. A pointer converted to uintptr before a Go function that
// can grow the stack outlives the copy: the kernel wrote the old stack, the
// caller's result stayed empty (a zero file mode, which gyrumdir reported
// as "a special file is not a regular file", a flaky failure of the loop's
// tests), and the memory written may by then be another goroutine's.
func TestPointerArgumentsSurviveStackGrowth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	content := []byte("the activity record")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}

	calls := []struct {
		name string
		f    func() string // "" when the result is right
	}{
		{"fstat", func() string {
			var st unix.Stat_t
			if err := Fstat(fd, &st); err != nil {
				return err.Error()
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(content)) {
				return "wrong stat"
			}
			return ""
		}},
		{"fstatat", func() string {
			var st unix.Stat_t
			if err := Lstat(path, &st); err != nil {
				return err.Error()
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				return "wrong stat"
			}
			return ""
		}},
		{"pread", func() string {
			var b [64]byte
			n, err := Pread(fd, b[:], 0)
			if err != nil {
				return err.Error()
			}
			if !bytes.Equal(b[:n], content) {
				return "wrong bytes"
			}
			return ""
		}},
		{"ppoll", func() string {
			ev, err := PollNow(fd, unix.POLLIN)
			if err != nil {
				return err.Error()
			}
			if ev&unix.POLLIN == 0 {
				return "a regular file not readable"
			}
			return ""
		}},
		{"getsockname", func() string {
			if a, ok := c.LocalAddr().(*net.TCPAddr); !ok || a.Port == 0 {
				return "no local address"
			}
			return ""
		}},
	}
	for _, call := range calls {
		bad := 0
		for depth := range 3000 {
			ch := make(chan string)
			go func() { ch <- atDepth(depth, call.f) }()
			if msg := <-ch; msg != "" {
				if bad++; bad <= 3 {
					t.Errorf("%s at depth %d: %s", call.name, depth, msg)
				}
			}
		}
		if bad > 3 {
			t.Errorf("%s: %d depths in all", call.name, bad)
		}
	}
}
