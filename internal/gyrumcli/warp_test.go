package gyrumcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// beat is one heartbeat request as the server received it.
type beat struct {
	At     time.Time
	Body   httpapi.HeartbeatRequest
	Status int
}

// warpServer is a real warp (SQLite file, service, HTTP API) on
// 127.0.0.1:0. A thin wrapper records every heartbeat with its arrival
// time and answer, and may run a hook before the real server answers.
type warpServer struct {
	t    testing.TB
	svc  *warp.Service
	api  http.Handler
	addr string

	mu     sync.Mutex
	srv    *http.Server
	beats  []beat
	before func(n int, b httpapi.HeartbeatRequest) // called with the 1-based count before answering
	answer func(b httpapi.HeartbeatRequest, w http.ResponseWriter) bool
}

func newWarp(t testing.TB) *warpServer {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := warp.NewService(db, warp.Config{Policy: warp.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.NewServer(svc, httpapi.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := &warpServer{t: t, svc: svc, api: api}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.down)
	return s
}

func (s *warpServer) URL() string { return "http://" + s.addr }

func (s *warpServer) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle)}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go srv.Serve(ln)
}

func (s *warpServer) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/heartbeat" && r.URL.Path != "/heartbeat" {
		s.api.ServeHTTP(w, r)
		return
	}
	data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b httpapi.HeartbeatRequest
	_ = json.Unmarshal(data, &b)
	s.mu.Lock()
	n := len(s.beats) + 1
	s.beats = append(s.beats, beat{At: time.Now(), Body: b})
	before, answer := s.before, s.answer
	s.mu.Unlock()
	if before != nil {
		before(n, b)
	}
	// The status is recorded before the answer leaves, so a client that has
	// its answer always finds it recorded.
	rec := &statusWriter{ResponseWriter: w, record: func(code int) {
		s.mu.Lock()
		s.beats[n-1].Status = code
		s.mu.Unlock()
	}}
	if answer == nil || !answer(b, rec) {
		r.Body = io.NopCloser(bytes.NewReader(data))
		s.api.ServeHTTP(rec, r)
	}
	rec.WriteHeader(http.StatusOK) // no-op when already written
}

type statusWriter struct {
	http.ResponseWriter
	record  func(int)
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.written {
		return
	}
	w.written = true
	w.record(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// down stops the server: the port refuses connections.
func (s *warpServer) down() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// up serves again on the same address.
func (s *warpServer) up() {
	s.t.Helper()
	var ln net.Listener
	var err error
	for range 250 {
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.serve(ln)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("listen again on %s: %v", s.addr, err)
}

func (s *warpServer) setBefore(f func(n int, b httpapi.HeartbeatRequest)) {
	s.mu.Lock()
	s.before = f
	s.mu.Unlock()
}

func (s *warpServer) setAnswer(f func(b httpapi.HeartbeatRequest, w http.ResponseWriter) bool) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

func (s *warpServer) Beats() []beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]beat(nil), s.beats...)
}

// answered returns the heartbeats the server has answered, in arrival order
// up to the first one still being handled.
func (s *warpServer) answered() []beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []beat
	for _, b := range s.beats {
		if b.Status == 0 {
			break
		}
		out = append(out, b)
	}
	return out
}

func (s *warpServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.beats)
}

// claim creates ticket id and claims it; it returns the lease's epoch.
func (s *warpServer) claim(id, agent string) int64 {
	s.t.Helper()
	ctx := context.Background()
	if _, err := s.svc.CreateTicket(ctx, warp.NewTicket{ID: id, Title: id}); err != nil && !errors.Is(err, warp.ErrConflict) {
		s.t.Fatal(err)
	}
	v, err := s.svc.Claim(ctx, id, warp.ClaimRequest{Agent: agent, Host: "test-host"})
	if err != nil {
		s.t.Fatal(err)
	}
	return v.Lease.Epoch
}

func (s *warpServer) lease(id string) warp.Lease {
	s.t.Helper()
	v, err := s.svc.Ticket(context.Background(), id)
	if err != nil || v.Lease == nil {
		s.t.Fatalf("ticket %s: %v", id, err)
	}
	return *v.Lease
}

// create creates an open ticket.
func (s *warpServer) create(id string, labels ...string) {
	s.t.Helper()
	if _, err := s.svc.CreateTicket(context.Background(), warp.NewTicket{ID: id, Title: id, Labels: labels}); err != nil {
		s.t.Fatal(err)
	}
}

// ticket returns ticket id with its latest lease.
func (s *warpServer) ticket(id string) warp.TicketView {
	s.t.Helper()
	v, err := s.svc.Ticket(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}
