//go:build linux && (amd64 || arm64)

package quiet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Slice is how long a connection's wait (connect, read, write) polls its
// socket without the scheduler before it blocks the usual way: long enough for a server on this host or network
// to answer, short enough that the signal handler's goroutine (which
// needs the P) is not kept waiting for long.
const Slice = 10 * time.Millisecond

// Dialer returns the dial function of rawhttp.Client: TCP over quiet
// calls. Nil where the calls are not raw (the client then dials with a
// net.Dialer).
func Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) { return Dial }

// Dial connects to addr ("host:port", network "tcp", "tcp4" or "tcp6")
// on a non-blocking socket driven by quiet calls: the connect, the writes
// and the reads, each wait first polled for a Slice without the scheduler.
// A host name is resolved with net.DefaultResolver; its addresses are
// tried in order, each with a share of the time left. An IPv6 address
// with a zone goes through a net.Dialer. ctx bounds the connect.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		var d net.Dialer
		return d.DialContext(ctx, network, addr) // a service name
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		ips = []netip.Addr{ip.Unmap()}
	} else {
		want := "ip"
		switch network {
		case "tcp4":
			want = "ip4"
		case "tcp6":
			want = "ip6"
		}
		if ips, err = net.DefaultResolver.LookupNetIP(ctx, want, host); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
	}
	var first error
	for i, ip := range ips {
		if (network == "tcp4" && !ip.Is4()) || (network == "tcp6" && ip.Is4()) {
			continue
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if d, ok := ctx.Deadline(); ok && len(ips)-i > 1 {
			// Like net.Dialer: each address gets a share of the time left,
			// so one that never answers does not take it all.
			share := time.Until(d) / time.Duration(len(ips)-i)
			actx, cancel = context.WithTimeout(ctx, max(share, 2*time.Second))
		}
		c, err := dialSelfless(actx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
		cancel()
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = &net.OpError{Op: "dial", Net: network, Err: &net.AddrError{Err: "no suitable address found", Addr: host}}
	}
	return nil, first
}

// dialSelfless is dialOne, tried again (twice at most) when the kernel
// connected the socket to itself: a dial to a local port where nothing
// listens can be given that port as its own, and TCP's simultaneous open
// then connects the socket to itself (net.Dialer guards the same way).
// Such a socket would hold the port its server wants back.
func dialSelfless(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	for i := 0; ; i++ {
		c, err := dialOne(ctx, network, ap)
		if err != nil || i == 2 || !c.(*conn).self() {
			return c, err
		}
		c.Close()
	}
}

// self reports whether c is connected to itself: its local address is its
// remote one.
func (c *conn) self() bool {
	la, ok := c.LocalAddr().(*net.TCPAddr)
	return ok && la.Port == c.raddr.Port && la.IP.Equal(c.raddr.IP)
}

// dialOne connects to ap.
func dialOne(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	raddr := net.TCPAddrFromAddrPort(ap)
	fail := func(err error) error { return &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: err} }
	family := unix.AF_INET6
	if ap.Addr().Is4() {
		family = unix.AF_INET
	}
	r, err := call(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fail(os.NewSyscallError("socket", err))
	}
	c := &conn{fd: int(r), raddr: raddr}
	var sa unsafe.Pointer
	var salen uintptr
	if family == unix.AF_INET {
		s4 := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().As4()}
		putPort(&s4.Port, ap.Port())
		sa, salen = unsafe.Pointer(s4), unsafe.Sizeof(*s4)
	} else {
		s6 := &unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16()}
		putPort(&s6.Port, ap.Port())
		sa, salen = unsafe.Pointer(s6), unsafe.Sizeof(*s6)
	}
	fd, _ := c.acquire() // a Close from ctx's AfterFunc then shuts down, never frees fd
	_, err = ret(syscall.RawSyscall6(unix.SYS_CONNECT, uintptr(fd), uintptr(sa), salen, 0, 0, 0))
	if err == unix.EINPROGRESS || err == unix.EINTR {
		// Connecting: wait until the socket is writable, then ask how it
		// went. A cancelled ctx shuts the socket down under the wait.
		stop := context.AfterFunc(ctx, func() { c.Close() })
		deadline, _ := ctx.Deadline()
		if err = c.wait(fd, unix.POLLOUT, deadline); err == nil {
			err = soError(fd)
		}
		if !stop() && err == nil {
			// ctx ended as the connect succeeded: the AfterFunc has
			// started and closes c, if it has not yet.
			err = net.ErrClosed
		}
	}
	c.release()
	if err == nil && c.isClosed() {
		err = net.ErrClosed // ctx ended as the connect succeeded
	}
	if err != nil {
		c.Close()
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded):
			err = context.DeadlineExceeded
		default:
			if _, ok := err.(unix.Errno); ok {
				err = os.NewSyscallError("connect", err)
			}
		}
		return nil, fail(err)
	}
	return c, nil
}

// putPort stores port in network byte order in a sockaddr's port field.
func putPort(dst *uint16, port uint16) {
	b := (*[2]byte)(unsafe.Pointer(dst))
	b[0], b[1] = byte(port>>8), byte(port)
}

// conn is a TCP connection on a non-blocking socket, read and written
// with quiet calls. Close may come from another goroutine while a Read or
// Write waits (rawhttp closes on a cancelled context): it shuts the socket
// down, which ends the wait, and the last user closes the descriptor.
type conn struct {
	raddr *net.TCPAddr

	mu     sync.Mutex
	fd     int
	users  int
	closed bool
	rdl    time.Time
	wdl    time.Time
}

func (c *conn) acquire() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return -1, net.ErrClosed
	}
	c.users++
	return c.fd, nil
}

func (c *conn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users--
	if c.closed && c.users == 0 && c.fd >= 0 {
		Close(c.fd)
		c.fd = -1
	}
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close shuts the connection down; a Read or Write waiting on it returns.
func (c *conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &net.OpError{Op: "close", Net: "tcp", Addr: c.raddr, Err: net.ErrClosed}
	}
	c.closed = true
	if c.users > 0 {
		_, _ = call(unix.SYS_SHUTDOWN, uintptr(c.fd), unix.SHUT_RDWR, 0)
		return nil
	}
	err := Close(c.fd)
	c.fd = -1
	if err != nil {
		return &net.OpError{Op: "close", Net: "tcp", Addr: c.raddr, Err: os.NewSyscallError("close", err)}
	}
	return nil
}

// soError is the socket's pending error (SO_ERROR): how a connect went.
func soError(fd int) error {
	var v int32
	l := uint32(unsafe.Sizeof(v))
	if _, err := ret(syscall.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)); err != nil {
		return err
	}
	if v != 0 {
		return unix.Errno(v)
	}
	return nil
}

// wait waits until fd is ready for events (or hung up, or in error), until
// deadline (zero: none) or until the connection is closed: first polled
// for a Slice without the scheduler, then blocking through it.
func (c *conn) wait(fd int, events int16, deadline time.Time) error {
	quietly := true
	for {
		if c.isClosed() {
			return net.ErrClosed
		}
		timeout := time.Duration(-1)
		if !deadline.IsZero() {
			if timeout = time.Until(deadline); timeout <= 0 {
				return os.ErrDeadlineExceeded
			}
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		var n int
		var err error
		if quietly {
			quietly = false
			if timeout < 0 || timeout > Slice {
				timeout = Slice
			}
			ts := unix.NsecToTimespec(int64(timeout))
			var r uintptr
			r, err = ret(syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0))
			n = int(r)
		} else {
			var tsp *unix.Timespec
			if timeout >= 0 {
				ts := unix.NsecToTimespec(int64(timeout))
				tsp = &ts
			}
			n, err = unix.Ppoll(pfd, tsp, nil)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("ppoll", err)
		}
		if n > 0 {
			return nil
		}
	}
}

// Read reads what has arrived, waiting until something does.
func (c *conn) Read(b []byte) (int, error) {
	fd, err := c.acquire()
	if err != nil {
		return 0, c.opError("read", err)
	}
	defer c.release()
	for {
		n, err := Read(fd, b)
		switch {
		case err == nil && n == 0 && len(b) > 0:
			if c.isClosed() {
				return 0, c.opError("read", net.ErrClosed)
			}
			return 0, io.EOF
		case err == nil:
			return n, nil
		case err != unix.EAGAIN:
			return 0, c.opError("read", os.NewSyscallError("read", err))
		}
		c.mu.Lock()
		dl := c.rdl
		c.mu.Unlock()
		if err := c.wait(fd, unix.POLLIN, dl); err != nil {
			return 0, c.opError("read", err)
		}
	}
}

// Write writes all of b, waiting for room as needed.
func (c *conn) Write(b []byte) (int, error) {
	fd, err := c.acquire()
	if err != nil {
		return 0, c.opError("write", err)
	}
	defer c.release()
	done := 0
	for done < len(b) {
		n, err := Write(fd, b[done:])
		done += n
		if err == nil {
			continue
		}
		if err != unix.EAGAIN {
			return done, c.opError("write", os.NewSyscallError("write", err))
		}
		c.mu.Lock()
		dl := c.wdl
		c.mu.Unlock()
		if err := c.wait(fd, unix.POLLOUT, dl); err != nil {
			return done, c.opError("write", err)
		}
	}
	return done, nil
}

func (c *conn) opError(op string, err error) error {
	if c.isClosed() && !errors.Is(err, net.ErrClosed) {
		err = net.ErrClosed
	}
	return &net.OpError{Op: op, Net: "tcp", Addr: c.raddr, Err: err}
}

func (c *conn) LocalAddr() net.Addr {
	fd, err := c.acquire()
	if err != nil {
		return nil
	}
	defer c.release()
	var sa unix.RawSockaddrAny
	l := uint32(unsafe.Sizeof(sa))
	if _, err := ret(syscall.RawSyscall6(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l)), 0, 0, 0)); err != nil {
		return nil
	}
	switch sa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa))
		return &net.TCPAddr{IP: net.IP(p.Addr[:]).To16(), Port: port(p.Port)}
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(&sa))
		return &net.TCPAddr{IP: net.IP(p.Addr[:]), Port: port(p.Port)}
	}
	return nil
}

// port reads a sockaddr's port field (network byte order).
func port(field uint16) int {
	b := (*[2]byte)(unsafe.Pointer(&field))
	return int(b[0])<<8 | int(b[1])
}

func (c *conn) RemoteAddr() net.Addr { return c.raddr }

func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rdl, c.wdl = t, t
	return nil
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rdl = t
	return nil
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wdl = t
	return nil
}
