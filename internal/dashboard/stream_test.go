package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/dashboard"
)

// sse is one event or comment read from the stream.
type sse struct {
	event   string
	data    string
	comment string
	msg     dashboard.Message
}

// stream is an open GET /v1/events/stream, read by a goroutine.
type stream struct {
	items chan sse
	resp  *http.Response
}

func openStream(tb testing.TB, baseURL string) *stream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+dashboard.StreamPath, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("open stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		tb.Fatalf("stream: got %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{items: make(chan sse, 100000), resp: resp}
	done := make(chan struct{})
	tb.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(s.items)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" || cur.data != "" {
					_ = json.Unmarshal([]byte(cur.data), &cur.msg)
					s.items <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, ":"):
				s.items <- sse{comment: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "event: "):
				cur.event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[len("data: "):]
			}
		}
	}()
	return s
}

// next returns the next event (comments skipped unless wantComment), or
// fails after 10 s.
func (s *stream) next(tb testing.TB) sse {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case it, ok := <-s.items:
			if !ok {
				tb.Fatalf("stream ended")
			}
			if it.comment != "" {
				continue
			}
			return it
		case <-deadline:
			tb.Fatalf("no event within 10 s")
		}
	}
}

// until reads events until one satisfies ok and returns it with the
// events read before it.
func (s *stream) until(tb testing.TB, what string, ok func(dashboard.Message) bool) (dashboard.Message, []dashboard.Message) {
	tb.Helper()
	var before []dashboard.Message
	deadline := time.After(10 * time.Second)
	for {
		select {
		case it, open := <-s.items:
			if !open {
				tb.Fatalf("stream ended waiting for %s", what)
			}
			if it.event != "update" {
				continue
			}
			if ok(it.msg) {
				return it.msg, before
			}
			before = append(before, it.msg)
		case <-deadline:
			tb.Fatalf("no %s within 10 s (got %+v)", what, before)
		}
	}
}

func kind(k, id string) func(dashboard.Message) bool {
	return func(m dashboard.Message) bool { return m.Kind == k && m.ID == id }
}

func TestStreamCarriesEveryWrite(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	st := openStream(t, s.url)
	hello := st.next(t)
	if hello.event != "hello" || hello.msg.Now != t0.UnixMilli() {
		t.Fatalf("first event: got %+v, want hello with the server clock %d", hello, t0.UnixMilli())
	}

	s.create(t, "T1", "first <b>task</b>")
	m, _ := st.until(t, "created T1", kind(dashboard.KindCreated, "T1"))
	if m.Ticket == nil || m.Ticket.State != "open" || m.Ticket.Title != "first <b>task</b>" {
		t.Errorf("created: got %+v", m.Ticket)
	}
	s.claim(t, "T1", "O", "h1")
	m, _ = st.until(t, "claimed T1", kind(dashboard.KindClaimed, "T1"))
	if r := m.Ticket; r == nil || r.State != "claimed" || r.Agent != "O" || r.Host != "h1" || r.Epoch != 1 ||
		r.Verdict != "active" || r.ExpiresAt != t0.Add(30*time.Minute).UnixMilli() {
		t.Errorf("claimed: got %+v", m.Ticket)
	}
	s.clk.Advance(time.Minute)
	s.heartbeat2(t, "T1", 1, "h1", 30, "")
	m, _ = st.until(t, "heartbeat T1", kind(dashboard.KindHeartbeat, "T1"))
	if r := m.Ticket; r == nil || r.SchemaVersion != 2 || r.HeartbeatAt != t0.Add(time.Minute).UnixMilli() ||
		r.ActivityAt != t0.Add(30*time.Second).UnixMilli() || m.Now != t0.Add(time.Minute).UnixMilli() {
		t.Errorf("heartbeat: got %+v now %d", m.Ticket, m.Now)
	}

	s.create(t, "T2", "second")
	s.claim(t, "T2", "P", "h2")
	s.heartbeat2(t, "T2", 1, "h2", 0, "worktree-gone")
	m, _ = st.until(t, "exit report T2", kind(dashboard.KindExit, "T2"))
	if m.Reason != "worktree-gone" || m.Ticket.Verdict != "exited" {
		t.Errorf("exit report: got %+v", m)
	}
	// The failed heartbeat is not news.
	if _, err := s.client.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "T1", Epoch: 7, ActivityAgeS: ptr(0.0)}); err == nil {
		t.Fatal("stale epoch accepted")
	}
	if _, err := s.client.Release(ctx, "T1", client.ReleaseRequest{Epoch: 1, Reason: "later"}); err != nil {
		t.Fatal(err)
	}
	m, before := st.until(t, "released T1", kind(dashboard.KindReleased, "T1"))
	if m.Reason != "later" || m.Ticket.State != "open" {
		t.Errorf("released: got %+v", m)
	}
	for _, b := range before {
		if b.Kind == dashboard.KindHeartbeat {
			t.Errorf("a failed heartbeat made a message: %+v", b)
		}
	}
	s.claim(t, "T1", "Q", "h1")
	if _, err := s.client.Complete(ctx, "T1", client.CompleteRequest{Epoch: 2, PRURL: "https://example.com/1"}); err != nil {
		t.Fatal(err)
	}
	m, _ = st.until(t, "completed T1", kind(dashboard.KindCompleted, "T1"))
	if m.Ticket.State != "completed" || m.Ticket.Epoch != 2 {
		t.Errorf("completed: got %+v", m.Ticket)
	}
	if _, err := s.client.SetMode(ctx, "legacy", false); err != nil {
		t.Fatal(err)
	}
	m, _ = st.until(t, "mode change", func(m dashboard.Message) bool { return m.Kind == dashboard.KindMode })
	if m.To != "legacy" || m.Ticket != nil {
		t.Errorf("mode change: got %+v", m)
	}

	// Time passes: T2 (exited) lapses; T3 goes silent on the verdict pass.
	s.create(t, "T3", "third")
	s.clk.Advance(20 * time.Minute)
	s.claim(t, "T3", "R", "h3")
	s.clk.Advance(11 * time.Minute)
	s.Sweep(t)
	m, _ = st.until(t, "lapse of T2", kind(dashboard.KindLapsed, "T2"))
	if m.Reason != "agent-exited" || m.Ticket.State != "open" {
		t.Errorf("lapse: got %+v", m)
	}
	m, _ = st.until(t, "verdict change of T3", kind(dashboard.KindVerdict, "T3"))
	if m.From != "active" || m.To != "silent" || m.Ticket.Verdict != "silent" {
		t.Errorf("verdict change: got %+v", m)
	}
}

// dialSlow opens a TCP connection with a tiny receive buffer that never
// reads after sending its request: a client that stopped reading.
func dialSlow(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = setRecvBuffer(fd, 1024) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", dashboard.StreamPath, addr); err != nil {
		tb.Fatalf("send request: %v", err)
	}
	return conn
}

// connectStuckClient opens a stream client that never reads, reaching s's
// broker through a listener of its own whose connections have a 4 KiB
// send buffer (a slow link), with a 1 KiB receive buffer of its own.
func connectStuckClient(t *testing.T, s *server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	slowSrv := &http.Server{Handler: s.Ops.Dashboard.Handler(), ConnState: func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && st == http.StateNew {
			_ = tc.SetWriteBuffer(4096)
		}
	}}
	go slowSrv.Serve(ln)
	t.Cleanup(func() { slowSrv.Close() })
	dialSlow(t, ln.Addr().String())
}

func TestSlowClientIsDroppedWritersNeverWait(t *testing.T) {
	s := startServer(t, withDashboard(dashboard.Config{ClientBuffer: 256, WriteTimeout: 500 * time.Millisecond}))
	broker := s.Ops.Dashboard.Broker()
	fast := openStream(t, s.url)
	fast.next(t) // hello

	connectStuckClient(t, s)
	waitFor(t, "two stream clients", func() bool { return broker.Clients() == 2 })

	// 300 tickets with 1 KiB titles, created and claimed: 600 messages,
	// far more than the slow client's buffers hold.
	title := strings.Repeat("x", 1000)
	const n = 300
	start := time.Now()
	for i := range n {
		id := fmt.Sprintf("S-%03d", i)
		s.create(t, id, title)
		s.claim(t, id, "O", "h")
	}
	t.Logf("%d writes in %s with a stuck client; broker %+v", 2*n, time.Since(start), broker.Stats())
	for i := range n {
		st, _ := fast.until(t, "claims in order", func(m dashboard.Message) bool { return m.Kind == dashboard.KindClaimed })
		if want := fmt.Sprintf("S-%03d", i); st.ID != want {
			t.Fatalf("claim message %d: got %s, want %s", i, st.ID, want)
		}
	}
	waitFor(t, "the slow client dropped", func() bool { return broker.Clients() == 1 })
	if stats := broker.Stats(); stats.DroppedClients != 1 || stats.DroppedNotices != 0 {
		t.Errorf("stats %+v: want exactly the slow client dropped and no notice lost", stats)
	}
}

// A stuck client whose buffer never fills — a large one, few messages —
// is dropped by the write timeout instead, and counts as dropped all the
// same: on a slow host that is the way the test above ends.
func TestClientStuckPastTheWriteTimeoutCountsAsDropped(t *testing.T) {
	s := startServer(t, withDashboard(dashboard.Config{ClientBuffer: 1 << 16, WriteTimeout: 200 * time.Millisecond}))
	broker := s.Ops.Dashboard.Broker()
	connectStuckClient(t, s)
	waitFor(t, "the stream client", func() bool { return broker.Clients() == 1 })
	title := strings.Repeat("x", 1000)
	for i := 0; broker.Clients() == 1; i++ {
		if i == 400 {
			t.Fatalf("the stuck client is still connected after %d messages: %+v", 2*i, broker.Stats())
		}
		id := fmt.Sprintf("W-%03d", i)
		s.create(t, id, title)
		s.claim(t, id, "O", "h")
	}
	if stats := broker.Stats(); stats.DroppedClients != 1 || stats.DroppedNotices != 0 {
		t.Errorf("stats %+v: want the stuck client counted as dropped, no notice lost", stats)
	}
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func setRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
