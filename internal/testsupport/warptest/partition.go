package warptest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Partition is a TCP forwarder on 127.0.0.1:0 in front of a server, that a
// test cuts as a firewall rule that drops packets would: while cut, a
// connection is accepted (the kernel's backlog answers the handshake) but
// nothing it sends arrives and nothing comes back, so a client waits for
// its own timeout, not for a refusal. Connections open at the cut hang the
// same way. Heal forwards new connections again and closes the hung ones.
type Partition struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool // the hung connections
	wg    sync.WaitGroup
}

// StartPartition forwards 127.0.0.1:0 to target (host:port) until the end
// of the test.
func StartPartition(t testing.TB, target string) *Partition {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Partition{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the forwarder's host:port; URL its http:// address.
func (p *Partition) Addr() string { return p.ln.Addr().String() }

// URL is the forwarder's http:// address.
func (p *Partition) URL() string { return "http://" + p.Addr() }

// Cut drops all traffic, on open connections and new ones.
func (p *Partition) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Heal forwards new connections again; the connections that hung are
// closed (their clients see a reset, as after a real partition's
// retransmissions give up).
func (p *Partition) Heal() {
	p.mu.Lock()
	p.cut = false
	hung := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	for c := range hung {
		c.Close()
	}
}

func (p *Partition) close() {
	p.ln.Close()
	p.Heal()
	p.wg.Wait()
}

func (p *Partition) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(c)
		}()
	}
}

// hang parks c until Heal or close; it reports false when the partition
// is not cut.
func (p *Partition) hang(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Partition) forward(c net.Conn) {
	if p.hang(c) {
		// Read and drop until Heal closes it: the client's bytes vanish.
		_, _ = io.Copy(io.Discard, c)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.hang(c) {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
}
