package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/expiry"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Received is one heartbeat as the embedded server saw it, counted by a
// wrapper around the real handler.
type Received struct {
	At            time.Time
	Ticket        string
	SchemaVersion int // 1 when the body had none (the v1 contract)
	Exit          string
	// Stale marks a stale report: the loop lives, the agent has shown no
	// activity within the staleness limit; it never extends the lease.
	Stale bool
	// InFlight is what the loop said runs now: a tool, "wait: REASON" or
	// "background: NAME" (the agent's processes keep it busy).
	InFlight string
	Status   int
	// Took is how long the embedded warp took to answer: what it credits
	// (its clock minus the activity age) is that much later than what the
	// loop measured.
	Took time.Duration
}

// Progress reports whether the heartbeat claims the agent progresses: not
// an exit report, not a stale report.
func (h Received) Progress() bool { return h.Exit == "" && !h.Stale }

// Ended reports whether the answer said the lease is over: 404, 409, 410.
func (h Received) Ended() bool {
	return h.Status == http.StatusNotFound || h.Status == http.StatusConflict || h.Status == http.StatusGone
}

// counter records every heartbeat request the embedded server answers. It
// lives outside the server so a restart keeps the count.
type counter struct {
	mu  sync.Mutex
	all []Received
}

// wrap returns h with heartbeat requests recorded: the body is read (within
// the API's limit), decoded loosely for ticket, schema and exit, and handed
// on unchanged; the answer's status is recorded too.
func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != "/heartbeat" && r.URL.Path != "/v1/heartbeat") {
			h.ServeHTTP(w, r)
			return
		}
		at := time.Now()
		body, err := io.ReadAll(io.LimitReader(r.Body, httpapi.MaxBodyBytes+1))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var hb struct {
			SchemaVersion *int   `json:"schema_version"`
			Ticket        string `json:"ticket"`
			Exit          string `json:"exit"`
			Stale         bool   `json:"stale"`
			InFlight      string `json:"in_flight"`
		}
		_ = json.Unmarshal(body, &hb) // a bad body is the handler's to answer
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		rec := Received{At: at, Ticket: hb.Ticket, SchemaVersion: 1, Exit: hb.Exit, Stale: hb.Stale,
			InFlight: hb.InFlight, Status: sw.status, Took: time.Since(at)}
		if hb.SchemaVersion != nil {
			rec.SchemaVersion = *hb.SchemaVersion
		}
		c.mu.Lock()
		c.all = append(c.all, rec)
		c.mu.Unlock()
	})
}

// byTicket returns the recorded heartbeats grouped by ticket, in arrival order.
func (c *counter) byTicket() map[string][]Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]Received{}
	for _, r := range c.all {
		out[r.Ticket] = append(out[r.Ticket], r)
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// serverConfig is what every start of the embedded warp shares.
type serverConfig struct {
	DBPath string
	Policy warp.Policy
	Mode   warp.Mode
	Sweep  time.Duration
	Count  *counter
	Logger *slog.Logger
}

// embedded is one start of the in-process warp: SQLite store, service,
// HTTP API behind the counter, and the expiry job, with scaled durations.
type embedded struct {
	db      *sqlite.DB
	svc     *warp.Service
	job     *expiry.Job
	srv     *http.Server
	ln      net.Listener
	served  chan struct{}
	started time.Time
	once    sync.Once
}

// startEmbedded starts warp on addr ("127.0.0.1:0" for a free port; the
// address of a previous start to come back on the same port).
func startEmbedded(ctx context.Context, cfg serverConfig, addr string) (e *embedded, err error) {
	e = &embedded{served: make(chan struct{})}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if e.db, err = sqlite.Open(ctx, cfg.DBPath); err != nil {
		return e, fmt.Errorf("open simulation database: %w", err)
	}
	e.svc, err = warp.NewService(e.db, warp.Config{Policy: cfg.Policy, InitialMode: cfg.Mode, Logger: cfg.Logger})
	if err != nil {
		return e, fmt.Errorf("embedded warp: %w", err)
	}
	if err := e.svc.Init(ctx); err != nil {
		return e, fmt.Errorf("embedded warp: initialise database: %w", err)
	}
	api, err := httpapi.NewServer(e.svc, httpapi.ServerConfig{Logger: cfg.Logger})
	if err != nil {
		return e, fmt.Errorf("embedded warp: %w", err)
	}
	if e.job, err = expiry.New(e.svc, expiry.Config{Interval: cfg.Sweep, Logger: cfg.Logger}); err != nil {
		return e, fmt.Errorf("embedded warp: %w", err)
	}
	if e.ln, err = listen(ctx, addr); err != nil {
		return e, err
	}
	e.srv = &http.Server{Handler: cfg.Count.wrap(api), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(e.served)
		_ = e.srv.Serve(e.ln) // ends with ErrServerClosed on stop
	}()
	if err := e.job.Start(context.WithoutCancel(ctx)); err != nil {
		return e, fmt.Errorf("embedded warp: %w", err)
	}
	e.started = time.Now()
	return e, nil
}

// listen binds addr, retrying for a moment when the port of the previous
// start is not free yet.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("embedded warp: listen on %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("embedded warp: listen on %s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the base URL agents use.
func (e *embedded) URL() string { return "http://" + e.ln.Addr().String() }

// Addr is the bound address, for the restart.
func (e *embedded) Addr() string { return e.ln.Addr().String() }

// stop ends the HTTP server (open connections are dropped, as a crash
// would), the expiry job and the database. Safe on a partial start and
// safe to call twice.
func (e *embedded) stop() { e.once.Do(e.doStop) }

func (e *embedded) doStop() {
	if e.srv != nil {
		e.srv.Close()
		<-e.served
	} else if e.ln != nil {
		e.ln.Close()
	}
	if e.job != nil {
		e.job.Close()
	}
	if e.svc != nil {
		e.svc.Close()
	}
	if e.db != nil {
		e.db.Close()
	}
}
