//go:build linux && (amd64 || arm64)

package quiet

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestSelfConnectedIsSeen builds what a dial to a free local port can
// end in — a socket bound to 127.0.0.1:P connected to 127.0.0.1:P, which
// TCP's simultaneous open connects to itself — and holds self to telling
// it from a real connection.
func TestSelfConnectedIsSeen(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	p := sa.(*syscall.SockaddrInet4).Port
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: p}); err != nil {
		syscall.Close(fd)
		t.Skipf("this kernel does not connect a socket to itself: %v", err)
	}
	c := &conn{fd: fd, raddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p}}
	defer c.Close()
	if !c.self() {
		t.Fatalf("a socket connected to itself (port %d) is not seen: local %v", p, c.LocalAddr())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := Dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if rc.(*conn).self() {
		t.Fatalf("a connection to a listener is taken for a self-connection: local %v remote %v", rc.LocalAddr(), rc.RemoteAddr())
	}
	if la := rc.LocalAddr().(*net.TCPAddr); !la.IP.Equal(net.IPv4(127, 0, 0, 1)) || la.Port == 0 || la.Port == ln.Addr().(*net.TCPAddr).Port {
		t.Fatalf("LocalAddr %v", la)
	}
}
