//go:build linux && (amd64 || arm64)

package quiet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/quiet"
)

// echo listens on addr and copies each connection back to itself.
func echo(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := quiet.Dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRoundTrip sends 4 MiB through an echo server on IPv4, IPv6 and a
// host name: far more than socket buffers hold, so writes meet EAGAIN and
// wait for room, and reads wait for data.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct{ network, listen, dial string }{
		{"tcp4", "127.0.0.1:0", ""},
		{"tcp6", "[::1]:0", ""},
		{"tcp4", "127.0.0.1:0", "localhost"},
	} {
		t.Run(tc.listen+tc.dial, func(t *testing.T) {
			ln := echo(t, tc.network, tc.listen)
			addr := ln.Addr().String()
			if tc.dial != "" {
				addr = net.JoinHostPort(tc.dial, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
			}
			c := dial(t, addr)
			if c.RemoteAddr().(*net.TCPAddr).Port != ln.Addr().(*net.TCPAddr).Port {
				t.Fatalf("RemoteAddr %v, listening on %v", c.RemoteAddr(), ln.Addr())
			}
			if la, ok := c.LocalAddr().(*net.TCPAddr); !ok || la.Port == 0 {
				t.Fatalf("LocalAddr %v", c.LocalAddr())
			}
			msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<18)
			werr := make(chan error, 1)
			go func() {
				n, err := c.Write(msg)
				if err == nil && n != len(msg) {
					err = io.ErrShortWrite
				}
				werr <- err
			}()
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatal(err)
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatal("echoed bytes differ")
			}
		})
	}
}

// TestEOF: the peer's close is io.EOF, as net.Conn reports it.
func TestEOF(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("bye"))
			c.Close()
		}
	}()
	c := dial(t, ln.Addr().String())
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "bye" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}

func TestRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = quiet.Dial(context.Background(), "tcp", addr)
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial of a closed port = %v, want a dial *net.OpError of ECONNREFUSED", err)
	}
	if want := "dial tcp " + addr + ": connect: connection refused"; err.Error() != want {
		t.Fatalf("message %q, want net's %q", err, want)
	}
	for _, bad := range []struct{ network, addr string }{{"udp", addr}, {"tcp", "no-port"}, {"tcp", "[::1%nosuchzone]:80"}} {
		if _, err := quiet.Dial(context.Background(), bad.network, bad.addr); err == nil {
			t.Errorf("Dial(%s, %s) succeeded", bad.network, bad.addr)
		}
	}
}

// fullBacklog returns the address of a listener whose accept queue is
// full: a connect to it is never answered (the kernel drops the SYN).
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	// Fill the queue (a backlog of 0 holds one or two) without accepting.
	for range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		c, err := quiet.Dial(ctx, "tcp", addr)
		cancel()
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("could not fill a listener's accept queue here")
	return ""
}

// TestDialDeadlineAndCancel: a connect that is never answered ends at the
// context's deadline (context.DeadlineExceeded) or when the context is
// cancelled (context.Canceled), past the quiet slice in both cases.
func TestDialDeadlineAndCancel(t *testing.T) {
	addr := fullBacklog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*quiet.Slice)
	_, err := quiet.Dial(ctx, "tcp", addr)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial past its deadline = %v, want context.DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(3*quiet.Slice, cancel)
	_, err = quiet.Dial(ctx, "tcp", addr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("dial cancelled = %v, want context.Canceled", err)
	}
}

// TestReadDeadline: a read with nothing to read ends at the deadline with
// os.ErrDeadlineExceeded, also one far past the quiet slice; a later
// deadline lets the next read wait again.
func TestReadDeadline(t *testing.T) {
	ln := echo(t, "tcp", "127.0.0.1:0")
	c := dial(t, ln.Addr().String())
	c.SetReadDeadline(time.Now().Add(3 * quiet.Slice))
	b := make([]byte, 8)
	if _, err := c.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(c, b[:4]); err != nil || string(b[:n]) != "ping" {
		t.Fatalf("Read after a new deadline = %q, %v", b[:n], err)
	}
	c.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := c.Write(bytes.Repeat([]byte("x"), 64<<20)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write of 64 MiB past its deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}

// TestCloseWakesRead: Close from another goroutine ends a Read that
// waits (rawhttp closes the connection when its context ends), with
// net.ErrClosed; the descriptor is freed by the reader on its way out.
func TestCloseWakesRead(t *testing.T) {
	ln := echo(t, "tcp", "127.0.0.1:0")
	c := dial(t, ln.Addr().String())
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(3 * quiet.Slice) // the reader is past its quiet slice, blocked
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read after Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the Read")
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close = %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	if c.LocalAddr() != nil {
		t.Fatalf("LocalAddr after Close = %v", c.LocalAddr())
	}
	if !strings.Contains(c.RemoteAddr().String(), "127.0.0.1") {
		t.Fatalf("RemoteAddr after Close = %v", c.RemoteAddr())
	}
}
