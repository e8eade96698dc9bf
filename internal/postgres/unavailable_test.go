package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// proxy is a TCP forwarder between the store and PostgreSQL that the test
// can cut, as a network outage or a database going away would: open
// connections are closed and new ones are dropped at once (setDown). Or it
// can blackhole the path, as a partition that drops packets does: open
// connections stay open and new ones are accepted, but nothing passes
// either way and nothing is answered (setBlackhole).
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	hole  bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setDown(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		switch {
		case p.down:
			p.mu.Unlock()
			c.Close()
			continue
		case p.hole: // accepted, never answered
			p.conns[c] = true
			p.wg.Add(1)
			p.mu.Unlock()
			go p.pipe(io.Discard, c)
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, dropping what it reads while the path is
// blackholed, until either end closes.
func (p *proxy) pipe(dst io.Writer, src net.Conn) {
	defer p.wg.Done()
	defer src.Close()
	if c, ok := dst.(net.Conn); ok {
		defer c.Close()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		hole := p.hole
		p.mu.Unlock()
		if n > 0 && !hole {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// setDown cuts (true) or restores (false) the path to the database.
func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		p.closeAllLocked()
	}
}

// setBlackhole blackholes (true) or restores (false) the path to the
// database. Restoring closes the connections the hole held: bytes were
// lost on them.
func (p *proxy) setBlackhole(hole bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hole = hole
	if !hole {
		p.closeAllLocked()
	}
}

func (p *proxy) closeAllLocked() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// via returns u with its host replaced by the proxy's address.
func (p *proxy) via(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.Host = p.ln.Addr().String()
	return pu.String()
}

func pgHostPort(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if pu.Port() == "" {
		return pu.Hostname() + ":5432"
	}
	return pu.Host
}

// While the database cannot be reached every call fails with
// ErrUnavailable (503 on the wire) and a message that says so; once it is
// back the same store serves again without being reopened, and what was
// acknowledged before is still there.
func TestUnavailableThenRecovers(t *testing.T) {
	_, u := newSchema(t)
	p := startProxy(t, pgHostPort(t, u))
	ctx := context.Background()
	db, err := postgres.Open(ctx, p.via(t, u), postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1"}); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Claim(ctx, "T-1", warp.ClaimRequest{Agent: "a", Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.TrySweepLock(ctx, 0); err != nil {
		t.Fatal(err)
	}

	p.setDown(true)
	checks := map[string]func() error{
		"ping": func() error { return db.Ping(ctx) },
		"heartbeat": func() error {
			_, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 1, Ticket: "T-1"})
			return err
		},
		"create": func() error { _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-2"}); return err },
		"view":   func() error { _, err := svc.Ticket(ctx, "T-1"); return err },
		"sweep":  func() error { _, err := svc.Sweep(ctx); return err },
		"sweep lock": func() error {
			_, _, err := db.TrySweepLock(ctx, 0)
			return err
		},
	}
	for name, f := range checks {
		err := f()
		if !errors.Is(err, warp.ErrUnavailable) {
			t.Errorf("%s while the database is down: got %v, want ErrUnavailable", name, err)
			continue
		}
		t.Logf("%s: %s", name, warp.ErrorMessage(err))
		if code, status := httpkit.ErrorStatus(err); status != http.StatusServiceUnavailable || code != httpkit.CodeUnavailable {
			t.Errorf("%s: HTTP answer %d %s, want 503 unavailable", name, status, code)
		}
		if msg := warp.ErrorMessage(err); !strings.Contains(msg, "database (PostgreSQL) is unavailable") {
			t.Errorf("%s: message %q does not say the database is unavailable", name, msg)
		}
	}

	p.setDown(false)
	if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: v.Lease.Epoch}); err != nil {
		t.Fatalf("heartbeat after the database came back: %v", err)
	}
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-2"}); err != nil {
		t.Fatalf("create after the database came back: %v", err)
	}
	if _, ok, err := db.TrySweepLock(ctx, 0); err != nil || !ok {
		t.Fatalf("sweep lock after the database came back: ok %v err %v", ok, err)
	}
	got, err := svc.Ticket(ctx, "T-1")
	if err != nil || got.Lease == nil || got.Lease.State != warp.LeaseHeld {
		t.Fatalf("claimed ticket after the outage: %+v, %v", got, err)
	}
}
