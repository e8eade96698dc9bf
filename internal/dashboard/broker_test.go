package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// The tests of this file run a broker alone in a synctest bubble, where
// time only moves when every goroutine waits: its timers, its pings and,
// unless a test injects another, its clock are the bubble's. A client is a
// ResponseWriter that hands every write of the stream to the test.

// leases is what the broker's Load reads: each ticket claimed, its lease's
// latest heartbeat set by the test.
type leases struct {
	mu sync.Mutex
	hb map[string]time.Time
}

func newLeases() *leases { return &leases{hb: map[string]time.Time{}} }

func (ls *leases) beat(id string, at time.Time) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.hb[id] = at
}

func (ls *leases) load(_ context.Context, id string) (warp.TicketView, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	at, ok := ls.hb[id]
	if !ok {
		return warp.TicketView{}, warp.Errorf(warp.ErrNotFound, "no ticket %s", id)
	}
	return warp.TicketView{Ticket: warp.Ticket{ID: id, State: warp.TicketClaimed, Epoch: 1},
		Lease:   &warp.Lease{Ticket: id, Epoch: 1, State: warp.LeaseHeld, SchemaVersion: 2, LastHeartbeatAt: at},
		Verdict: warp.VerdictActive}, nil
}

// startBroker starts a broker in the current bubble; stop closes it.
func startBroker(t *testing.T, cfg dashboard.BrokerConfig) (b *dashboard.Broker, stop func()) {
	t.Helper()
	b, err := dashboard.NewBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, func() { b.Close() }
}

// streamClient is one GET /v1/events/stream served by a broker.
type streamClient struct {
	header http.Header
	frames chan string
}

func (c *streamClient) Header() http.Header { return c.header }
func (c *streamClient) WriteHeader(int)     {}
func (c *streamClient) Flush()              {}

func (c *streamClient) Write(p []byte) (int, error) {
	c.frames <- string(p)
	return len(p), nil
}

// connect opens b's event stream and returns once the client is
// subscribed; hangUp ends the request and waits for the handler.
func connect(b *dashboard.Broker) (c *streamClient, hangUp func()) {
	c = &streamClient{header: http.Header{}, frames: make(chan string, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, dashboard.StreamPath, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.ServeHTTP(c, req)
	}()
	synctest.Wait()
	return c, func() { cancel(); <-done }
}

// received waits until the bubble is idle and returns the frames written
// since the last call.
func (c *streamClient) received() []string {
	synctest.Wait()
	var out []string
	for {
		select {
		case f := <-c.frames:
			out = append(out, f)
		default:
			return out
		}
	}
}

// decode returns the message of an event frame of the given event.
func decode(t *testing.T, frame, event string) dashboard.Message {
	t.Helper()
	_, rest, ok := strings.Cut(frame, "event: "+event+"\ndata: ")
	if !ok {
		t.Fatalf("frame %q is not a %s event", frame, event)
	}
	var m dashboard.Message
	if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &m); err != nil {
		t.Fatalf("frame %q: %v", frame, err)
	}
	return m
}

// updates returns the messages of update frames, failing on any other frame.
func updates(t *testing.T, frames []string) []dashboard.Message {
	t.Helper()
	out := make([]dashboard.Message, len(frames))
	for i, f := range frames {
		out[i] = decode(t, f, "update")
	}
	return out
}

func heartbeat(id string) dashboard.Notice {
	return dashboard.Notice{Kind: dashboard.KindHeartbeat, Ticket: id, Epoch: 1}
}

// A burst of heartbeats of one ticket makes two messages: the first at
// once, one carrying the latest state a coalescing window later. Anything
// else about the ticket supersedes a heartbeat waiting for its slot.
func TestBrokerCoalescesHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = time.Second
		ls := newLeases()
		b, stop := startBroker(t, dashboard.BrokerConfig{Load: ls.load, Coalesce: window, Ping: time.Hour})
		defer stop()
		c, hangUp := connect(b)
		defer hangUp()
		if f := c.received(); len(f) != 1 {
			t.Fatalf("stream start: got %q, want the hello event", f)
		} else if hello := decode(t, f[0], "hello"); hello.Now != time.Now().UnixMilli() {
			t.Errorf("hello at %d, want the broker's clock %d", hello.Now, time.Now().UnixMilli())
		}

		start := time.Now()
		var last time.Time
		for i := range 10 { // 100 ms apart: all within one window
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			last = time.Now()
			ls.beat("T", last)
			b.Notify(heartbeat("T"))
		}
		got := updates(t, c.received())
		if len(got) != 1 || got[0].Kind != dashboard.KindHeartbeat || got[0].Ticket.HeartbeatAt != start.UnixMilli() {
			t.Fatalf("within the window: got %+v, want the first heartbeat only", got)
		}
		time.Sleep(start.Add(window + window/2).Sub(time.Now()))
		got = updates(t, c.received())
		if len(got) != 1 || got[0].Kind != dashboard.KindHeartbeat || got[0].Ticket.HeartbeatAt != last.UnixMilli() ||
			got[0].Now != start.Add(window).UnixMilli() {
			t.Fatalf("after the window: got %+v, want one heartbeat at %d carrying heartbeat_at %d",
				got, start.Add(window).UnixMilli(), last.UnixMilli())
		}

		// The slot is taken again: this heartbeat waits, and the release
		// supersedes it.
		b.Notify(heartbeat("T"))
		b.Notify(dashboard.Notice{Kind: dashboard.KindReleased, Ticket: "T", Epoch: 1, Reason: "done"})
		time.Sleep(3 * window)
		got = updates(t, c.received())
		if len(got) != 1 || got[0].Kind != dashboard.KindReleased || got[0].Reason != "done" {
			t.Errorf("heartbeat then release: got %+v, want the release only", got)
		}
		if s := b.Stats(); s.Sent != 3 || s.DroppedNotices != 0 || s.DroppedClients != 0 {
			t.Errorf("stats %+v, want 3 messages sent and nothing dropped", s)
		}
	})
}

// The broker runs on the clock it is given: messages carry its time, and
// a heartbeat waits for its slot until that clock (not the machine's)
// has moved a window past the previous message.
func TestBrokerRunsOnItsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = time.Second
		clk := storetest.NewClock(t0)
		ls := newLeases()
		b, stop := startBroker(t, dashboard.BrokerConfig{Load: ls.load, Now: clk.Now, Coalesce: window, Ping: time.Hour})
		defer stop()
		c, hangUp := connect(b)
		defer hangUp()
		if f := c.received(); len(f) != 1 || decode(t, f[0], "hello").Now != t0.UnixMilli() {
			t.Fatalf("stream start: got %q, want hello at the injected clock's %d", f, t0.UnixMilli())
		}
		ls.beat("T", clk.Now())
		b.Notify(heartbeat("T"))
		if got := updates(t, c.received()); len(got) != 1 || got[0].Now != t0.UnixMilli() {
			t.Fatalf("first heartbeat: got %+v, want one message at %d", got, t0.UnixMilli())
		}
		b.Notify(heartbeat("T"))
		time.Sleep(10*window + window/2)
		if got := c.received(); len(got) != 0 {
			t.Fatalf("the injected clock stood still, yet the waiting heartbeat went out: %q", got)
		}
		clk.Advance(window)
		time.Sleep(window)
		if got := updates(t, c.received()); len(got) != 1 || got[0].Now != t0.Add(window).UnixMilli() {
			t.Errorf("after the injected clock moved a window: got %+v, want one message at %d", got, t0.Add(window).UnixMilli())
		}
	})
}

// An idle stream gets a ": ping" comment every ping period (15 s by
// default), and nothing before.
func TestBrokerPingsWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, stop := startBroker(t, dashboard.BrokerConfig{Load: newLeases().load})
		defer stop()
		c, hangUp := connect(b)
		defer hangUp()
		c.received() // hello
		time.Sleep(15*time.Second - time.Millisecond)
		if f := c.received(); len(f) != 0 {
			t.Fatalf("before the ping period: got %q, want nothing", f)
		}
		time.Sleep(2 * time.Millisecond)
		if f := c.received(); len(f) != 1 || f[0] != ": ping\n\n" {
			t.Fatalf("after the ping period: got %q, want one ping", f)
		}
		time.Sleep(15 * time.Second)
		if f := c.received(); len(f) != 1 || f[0] != ": ping\n\n" {
			t.Fatalf("a period later: got %q, want one ping", f)
		}
	})
}

// The coalescing slots of tickets that beat once (every loop, at minutes
// apart) are forgotten once their window passed: the broker's memory
// follows the tickets heartbeating within a window, not every ticket it
// ever saw while a dashboard was open.
func TestBrokerForgetsExpiredHeartbeatSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = time.Second
		clk := storetest.NewClock(t0)
		b, stop := startBroker(t, dashboard.BrokerConfig{Load: newLeases().load, Now: clk.Now, Coalesce: window, Ping: time.Hour})
		defer stop()
		c, hangUp := connect(b) // a dashboard is open: notices flow
		defer hangUp()
		most := 0
		for i := range 6 * dashboard.TrackFloor {
			b.Notify(heartbeat(fmt.Sprintf("T-%d", i)))
			if i%64 == 63 {
				c.received()
				most = max(most, b.Tracked())
				clk.Advance(window)
			}
		}
		c.received()
		if n := b.Stats().DroppedNotices; n != 0 {
			t.Fatalf("%d notices dropped: the test must feed the broker slower", n)
		}
		if most > dashboard.TrackFloor || most < 64 {
			t.Fatalf("the broker remembered up to %d tickets' slots, want at most %d (and the last window's 64)", most, dashboard.TrackFloor)
		}
	})
}
