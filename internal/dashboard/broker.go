package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	wire "github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Kinds of Notice and of the messages of the event stream.
const (
	KindCreated   = wire.StreamCreated
	KindClaimed   = wire.StreamClaimed
	KindHeartbeat = wire.StreamHeartbeat
	KindExit      = wire.StreamExitReport
	KindReleased  = wire.StreamReleased
	KindCompleted = wire.StreamCompleted
	KindLapsed    = wire.StreamLapsed
	KindVerdict   = wire.StreamVerdictChanged
	KindMode      = wire.StreamModeChanged
	// KindHostAlarm: a host alarm was raised or cleared (To is the host,
	// Reason "raised" or the clearing reason).
	KindHostAlarm = wire.StreamHostAlarm
)

// Notice is what a writer tells the broker: something about a ticket (or
// the mode) changed. The broker reads the ticket's current state itself
// when it sends the message, so a notice is cheap to make.
type Notice struct {
	Kind   string
	Ticket string // empty for mode changes
	Epoch  int64
	// From and To are the verdicts of a verdict change, the modes of a mode change.
	From, To string
	// Reason is a lapse's or release's reason, an exit report's exit.
	Reason           string
	FallbackExtended bool
}

// Message is one event of the stream, as JSON in the data field: the
// public client's type, so the server encodes the very type clients decode.
type Message = wire.StreamMessage

// Row is a ticket as the page's script (and a client) sees it. Times are
// unix ms, 0 when unset.
type Row = wire.StreamTicket

// unixMS is the stream's time of t.
var unixMS = wire.UnixMS

// RowOf converts a ticket view to a Row.
func RowOf(v warp.TicketView) Row {
	r := Row{ID: v.Ticket.ID, Title: v.Ticket.Title, State: string(v.Ticket.State), Epoch: v.Ticket.Epoch,
		Verdict: string(v.Verdict)}
	if l := v.Lease; l != nil {
		r.Agent, r.Host, r.SchemaVersion, r.InFlight = l.Agent, l.Host, l.SchemaVersion, l.InFlight
		r.HeartbeatAt, r.ActivityAt = unixMS(l.LastHeartbeatAt), unixMS(warp.ProgressAt(*l))
		if l.Held() {
			r.ExpiresAt = unixMS(l.ExpiresAt)
		}
	}
	return r
}

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	// Load reads a ticket's current state for a message; required.
	Load func(ctx context.Context, id string) (warp.TicketView, error)
	// Now is the server clock the broker runs on: messages are stamped
	// with it and heartbeats are coalesced by it. time.Now when nil.
	Now func() time.Time
	// Coalesce is the least time, on the Now clock, between two heartbeat
	// messages of one ticket; heartbeats in between are folded into the
	// next message. A folded heartbeat goes out once the clock has moved
	// Coalesce past the previous message; the broker looks again at least
	// every Coalesce of waiting. 1 s when zero.
	Coalesce time.Duration
	// Ping is how often an idle stream gets a ": ping" comment; 15 s when zero.
	Ping time.Duration
	// ClientBuffer is how many messages a client may lag behind before it
	// is dropped; 64 when zero.
	ClientBuffer int
	// QueueSize bounds the notices waiting for the broker; a writer never
	// waits, a notice that finds the queue full is dropped. 4096 when zero.
	QueueSize int
	// WriteTimeout bounds one write to a client; 10 s when zero.
	WriteTimeout time.Duration
	// Logger; discarded when nil.
	Logger *slog.Logger
}

// Broker fans the server's writes out to the event-stream clients
// (GET /v1/events/stream). Writers call Notify, which never blocks; one
// goroutine (Start/Close) reads the notices, coalesces heartbeats per
// ticket, loads each ticket once per message and hands the message to
// every client without waiting: a client whose buffer is full is dropped
// (its browser reconnects and reloads what it missed).
type Broker struct {
	cfg   BrokerConfig
	log   *slog.Logger
	queue chan Notice

	mu      sync.Mutex
	clients map[*client]struct{}
	closed  bool

	cancel context.CancelFunc
	wg     sync.WaitGroup

	droppedNotices atomic.Int64
	droppedClients atomic.Int64
	sent           atomic.Int64
	// tracked is how many tickets the run loop remembers a heartbeat
	// message of (its coalescing slots), for tests.
	tracked atomic.Int64
}

// trackFloor is the number of remembered heartbeat slots under which the
// run loop does not look for expired ones: above it, it drops them each
// time the count doubles, so memory follows the tickets heartbeating
// within one coalescing window, not every ticket ever seen.
const trackFloor = 1024

type client struct {
	ch   chan []byte
	gone chan struct{} // closed when the broker drops the client or closes
	once sync.Once
}

func (c *client) drop() { c.once.Do(func() { close(c.gone) }) }

// NewBroker returns a broker; Start it before use.
func NewBroker(cfg BrokerConfig) (*Broker, error) {
	if cfg.Load == nil {
		return nil, errors.New("dashboard: broker needs a Load function")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Coalesce <= 0 {
		cfg.Coalesce = time.Second
	}
	if cfg.Ping <= 0 {
		cfg.Ping = 15 * time.Second
	}
	if cfg.ClientBuffer <= 0 {
		cfg.ClientBuffer = 64
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 4096
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, queue: make(chan Notice, cfg.QueueSize), clients: map[*client]struct{}{}}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// Start runs the broker's goroutine until ctx is done or Close is called.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil || b.closed {
		return errors.New("dashboard: broker already started or closed")
	}
	ctx, b.cancel = context.WithCancel(ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.run(ctx)
	}()
	return nil
}

// Close stops the goroutine and ends every client's stream. It is safe to
// call more than once, and before Start.
func (b *Broker) Close() error {
	b.mu.Lock()
	b.closed = true
	cancel := b.cancel
	for c := range b.clients {
		c.drop()
		delete(b.clients, c)
	}
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	b.wg.Wait()
	return nil
}

// Notify hands n to the broker without blocking. Without clients it costs
// almost nothing; with a full queue the notice is dropped and counted.
func (b *Broker) Notify(n Notice) {
	if b.Clients() == 0 {
		return
	}
	select {
	case b.queue <- n:
	default:
		b.droppedNotices.Add(1)
	}
}

// BrokerStats are the broker's counters.
type BrokerStats struct {
	Clients        int
	Sent           int64 // messages handed to clients
	DroppedClients int64 // clients dropped for lagging
	DroppedNotices int64 // notices dropped on a full queue
}

// Stats returns the broker's counters.
func (b *Broker) Stats() BrokerStats {
	return BrokerStats{Clients: b.Clients(), Sent: b.sent.Load(),
		DroppedClients: b.droppedClients.Load(), DroppedNotices: b.droppedNotices.Load()}
}

// Clients returns the number of connected clients.
func (b *Broker) Clients() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

func (b *Broker) run(ctx context.Context) {
	c := &coalescer{b: b, last: map[string]time.Time{}, pending: map[string]Notice{}, timer: time.NewTimer(time.Hour), pruneAt: trackFloor}
	c.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			c.timer.Stop()
			return
		case n := <-b.queue:
			c.notice(ctx, n)
		case <-c.timer.C:
			c.due(ctx)
		}
	}
}

// coalescer is run's state: a ticket's heartbeat messages go out at most
// once per Coalesce, the latest one waiting for its slot.
type coalescer struct {
	b       *Broker
	last    map[string]time.Time // ticket → when (Now) its latest heartbeat message went out
	pending map[string]Notice    // ticket → heartbeat waiting for its slot
	timer   *time.Timer
	armed   bool
	pruneAt int
}

// wait is how long the heartbeat message of a ticket sent at t must wait
// at now; 0 when its slot is free. A clock that went back behind t frees
// the slot.
func (c *coalescer) wait(t, now time.Time) time.Duration {
	if d := now.Sub(t); d >= 0 && d < c.b.cfg.Coalesce {
		return c.b.cfg.Coalesce - d
	}
	return 0
}

// forget drops the slots that have expired and are not waited on.
func (c *coalescer) forget(now time.Time) {
	for id, t := range c.last {
		if _, waiting := c.pending[id]; !waiting && c.wait(t, now) == 0 {
			delete(c.last, id)
		}
	}
}

// arm sets the timer for the first waiting heartbeat whose slot frees.
func (c *coalescer) arm(now time.Time) {
	if c.armed || len(c.pending) == 0 {
		return
	}
	next := c.b.cfg.Coalesce
	for id := range c.pending {
		next = min(next, c.wait(c.last[id], now))
	}
	c.timer.Reset(max(next, time.Millisecond))
	c.armed = true
}

// notice sends n, unless it is a heartbeat whose ticket's slot is taken:
// that one waits for it.
func (c *coalescer) notice(ctx context.Context, n Notice) {
	now := c.b.cfg.Now()
	switch {
	case n.Kind == KindHeartbeat:
		if t, ok := c.last[n.Ticket]; ok && c.wait(t, now) > 0 {
			c.pending[n.Ticket] = n
			c.arm(now)
			return
		}
		c.last[n.Ticket] = now
		// A slot is pruned below only when a ticket sends twice in a
		// window; loops that beat every few minutes never do.
		if len(c.last) >= c.pruneAt {
			c.forget(now)
			c.pruneAt = max(trackFloor, 2*len(c.last))
		}
		c.b.tracked.Store(int64(len(c.last)))
	case n.Ticket != "":
		// Anything else supersedes a heartbeat still waiting: the
		// message carries the ticket's state as of now anyway.
		delete(c.pending, n.Ticket)
	}
	c.b.send(ctx, n)
}

// due sends the waiting heartbeats whose slots have freed.
func (c *coalescer) due(ctx context.Context) {
	c.armed = false
	now := c.b.cfg.Now()
	for id, n := range c.pending {
		if c.wait(c.last[id], now) == 0 {
			delete(c.pending, id)
			c.last[id] = now
			c.b.send(ctx, n)
		}
	}
	c.forget(now)
	c.b.tracked.Store(int64(len(c.last)))
	c.arm(now)
}

// send builds n's message and hands it to every client.
func (b *Broker) send(ctx context.Context, n Notice) {
	if b.Clients() == 0 {
		return
	}
	m := Message{Kind: n.Kind, ID: n.Ticket, From: n.From, To: n.To, Reason: n.Reason,
		FallbackExtended: n.FallbackExtended}
	if n.Ticket != "" {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := b.cfg.Load(lctx, n.Ticket)
		cancel()
		if err == nil {
			r := RowOf(v)
			m.Ticket = &r
		} else if !errors.Is(err, warp.ErrNotFound) {
			b.log.Warn("event stream: read ticket", "ticket", n.Ticket, "err", err)
		}
	}
	m.Now = b.cfg.Now().UnixMilli()
	data, err := json.Marshal(m)
	if err != nil {
		b.log.Error("event stream: encode message", "err", err)
		return
	}
	frame := fmt.Appendf(nil, "event: %s\ndata: %s\n\n", "update", data)
	b.broadcast(frame)
}

func (b *Broker) broadcast(frame []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.clients {
		select {
		case c.ch <- frame:
			b.sent.Add(1)
		default:
			c.drop()
			delete(b.clients, c)
			b.droppedClients.Add(1)
		}
	}
}

func (b *Broker) subscribe() (*client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("event stream closed")
	}
	c := &client{ch: make(chan []byte, b.cfg.ClientBuffer), gone: make(chan struct{})}
	b.clients[c] = struct{}{}
	return c, nil
}

// unsubscribe removes c; lagging reports that its stream ended because a
// write to it timed out, which counts it as dropped for lagging — as a
// full buffer does (broadcast) — unless broadcast dropped it first.
func (b *Broker) unsubscribe(c *client, lagging bool) {
	b.mu.Lock()
	if _, ok := b.clients[c]; ok && lagging {
		b.droppedClients.Add(1)
	}
	delete(b.clients, c)
	b.mu.Unlock()
	c.drop()
}

// ServeHTTP is GET /v1/events/stream: a text/event-stream of "update"
// events whose data is a Message in JSON, with ": ping" comments while
// idle. The stream starts with a "hello" event carrying the server time.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := b.subscribe()
	if err != nil {
		http.Error(w, "event stream closed: the server is stopping", http.StatusServiceUnavailable)
		return
	}
	lagging := false
	defer func() { b.unsubscribe(c, lagging) }()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	write := func(p []byte) bool {
		// A connection's deadline is on the machine's clock, whatever
		// clock the broker runs on.
		_ = rc.SetWriteDeadline(time.Now().Add(b.cfg.WriteTimeout))
		_, err := w.Write(p)
		if err == nil {
			err = rc.Flush()
		}
		lagging = errors.Is(err, os.ErrDeadlineExceeded)
		return err == nil
	}
	hello, _ := json.Marshal(Message{Kind: wire.StreamHello, Now: b.cfg.Now().UnixMilli()})
	if !write(fmt.Appendf(nil, "retry: 2000\nevent: hello\ndata: %s\n\n", hello)) {
		return
	}
	ping := time.NewTicker(b.cfg.Ping)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.gone:
			// Dropped for lagging, or the server is stopping: end the
			// stream; the browser reconnects and reloads what it missed.
			return
		case f := <-c.ch:
			if !write(f) {
				return
			}
		case <-ping.C:
			if !write([]byte(": ping\n\n")) {
				return
			}
		}
	}
}
