package httpapi

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Connection limits of a server (warp serve --max-conns,
// --max-conns-per-client).
const (
	DefaultMaxConns          = 4096
	DefaultMaxConnsPerClient = 256
)

// LimitListener returns ln accepting at most total connections at once,
// and at most perClient from one client address (IP). A connection beyond
// a limit is answered at once — 503 past the total, 429 past the client's
// share, in the JSON error format, with Retry-After — and closed, so slow
// clients holding connections cannot exhaust the server's descriptors and
// starve every other agent's heartbeat. Zero disables a limit.
func LimitListener(ln net.Listener, total, perClient int) net.Listener {
	return &limitListener{Listener: ln, total: total, perClient: perClient, byClient: map[string]int{}}
}

type limitListener struct {
	net.Listener
	total, perClient int

	mu       sync.Mutex
	open     int
	byClient map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientIP(c.RemoteAddr())
		l.mu.Lock()
		switch {
		case l.total > 0 && l.open >= l.total:
			l.mu.Unlock()
			go refuse(c, 503, "unavailable", fmt.Sprintf("the server holds its maximum of %d connections; retry later", l.total))
			continue
		case l.perClient > 0 && l.byClient[client] >= l.perClient:
			l.mu.Unlock()
			go refuse(c, 429, "too_many_connections", fmt.Sprintf("%s holds its maximum of %d connections to this server: reuse connections (keep-alive) or close idle ones", client, l.perClient))
			continue
		}
		l.open++
		l.byClient[client]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(client) }}, nil
	}
}

func (l *limitListener) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
}

// clientIP is the address a limit counts by: the IP without the port.
func clientIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// refuse answers a connection the limits turned away and closes it; one
// second at most, so a client that does not read cannot hold it either.
func refuse(c net.Conn, status int, code, msg string) {
	defer c.Close()
	body := fmt.Sprintf(`{"error":{"code":%q,"message":%q}}`+"\n", code, msg)
	text := "Service Unavailable"
	if status == 429 {
		text = "Too Many Requests"
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, text, len(body), body)
}

type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
