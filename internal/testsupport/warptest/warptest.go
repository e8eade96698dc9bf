// Package warptest runs a real warp (SQLite file, service, HTTP API) on
// 127.0.0.1:0 for the agent side's tests, recording every heartbeat it
// receives with its arrival time and answer. Nothing is mocked: the
// recording wraps the real handler.
package warptest

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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/groupcommit"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Beat is one heartbeat request as the server received it.
type Beat struct {
	At     time.Time
	Body   client.HeartbeatRequest
	Status int
}

// Server is a real warp (SQLite file, service, HTTP API) on
// 127.0.0.1:0. A thin wrapper records every heartbeat with its arrival
// time and answer, and may run a hook before the real server answers.
type Server struct {
	// Svc is the server's service, for setting up and checking state directly.
	Svc  *warp.Service
	t    testing.TB
	api  http.Handler
	addr string

	mu     sync.Mutex
	srv    *http.Server
	beats  []Beat
	before func(n int, b client.HeartbeatRequest) // called with the 1-based count before answering
	answer func(b client.HeartbeatRequest, w http.ResponseWriter) bool
}

// Start starts a warp with the default policy on a fresh SQLite file in
// t.TempDir(), listening on 127.0.0.1:0, stopped at the end of the test.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithPolicy(t, warp.DefaultPolicy())
}

// StartWithPolicy is Start with policy p: scaled-down stall and silent
// thresholds let a test see verdicts change in seconds.
func StartWithPolicy(t testing.TB, p warp.Policy) *Server {
	t.Helper()
	return StartWithTokens(t, p, nil)
}

// StartWithTokens is StartWithPolicy with bearer tokens required (none:
// an open server, as on loopback without --token-file).
func StartWithTokens(t testing.TB, p warp.Policy, tokens []httpapi.Token) *Server {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := warp.NewService(db, warp.Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	gc := groupcommit.Start(svc, groupcommit.Config{})
	svc.UseGroupCommit(gc)
	t.Cleanup(func() { gc.Close() })
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	// 5xx answers are logged into a buffer that a failed test shows: a
	// 500 in a test then says what broke.
	var errs lockedBuffer
	t.Cleanup(func() {
		if t.Failed() && errs.Len() > 0 {
			t.Logf("warp's 5xx answers:\n%s", errs.String())
		}
	})
	api, err := httpapi.NewServer(svc, httpapi.ServerConfig{Tokens: tokens, Logger: slog.New(slog.NewTextHandler(&errs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, Svc: svc, api: api}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.Down)
	return s
}

// URL is the server's base address.
func (s *Server) URL() string { return "http://" + s.addr }

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle)}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go srv.Serve(ln)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/heartbeat" && r.URL.Path != "/heartbeat" {
		s.api.ServeHTTP(w, r)
		return
	}
	data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b client.HeartbeatRequest
	_ = json.Unmarshal(data, &b)
	s.mu.Lock()
	n := len(s.beats) + 1
	s.beats = append(s.beats, Beat{At: time.Now(), Body: b})
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

// Down stops the server: the port refuses connections.
func (s *Server) Down() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Up serves again on the same address.
func (s *Server) Up() {
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

// SetBefore sets a hook run with the 1-based count of each heartbeat before the server answers it.
func (s *Server) SetBefore(f func(n int, b client.HeartbeatRequest)) {
	s.mu.Lock()
	s.before = f
	s.mu.Unlock()
}

// SetAnswer sets a hook that may answer a heartbeat itself (returning true) instead of the real server.
func (s *Server) SetAnswer(f func(b client.HeartbeatRequest, w http.ResponseWriter) bool) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

// Beats returns every heartbeat received so far.
func (s *Server) Beats() []Beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Beat(nil), s.beats...)
}

// Answered returns the heartbeats the server has answered, in arrival order
// up to the first one still being handled.
func (s *Server) Answered() []Beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Beat
	for _, b := range s.beats {
		if b.Status == 0 {
			break
		}
		out = append(out, b)
	}
	return out
}

// Count returns how many heartbeats arrived.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.beats)
}

// Claim creates ticket id and claims it; it returns the lease's epoch.
func (s *Server) Claim(id, agent string) int64 {
	s.t.Helper()
	ctx := context.Background()
	if _, err := s.Svc.CreateTicket(ctx, warp.NewTicket{ID: id, Title: id}); err != nil && !errors.Is(err, warp.ErrConflict) {
		s.t.Fatal(err)
	}
	v, err := s.Svc.Claim(ctx, id, warp.ClaimRequest{Agent: agent, Host: "test-host"})
	if err != nil {
		s.t.Fatal(err)
	}
	return v.Lease.Epoch
}

// Lease returns the latest lease of ticket id.
func (s *Server) Lease(id string) warp.Lease {
	s.t.Helper()
	v, err := s.Svc.Ticket(context.Background(), id)
	if err != nil || v.Lease == nil {
		s.t.Fatalf("ticket %s: %v", id, err)
	}
	return *v.Lease
}

// Create creates an open ticket.
func (s *Server) Create(id string, labels ...string) {
	s.t.Helper()
	if _, err := s.Svc.CreateTicket(context.Background(), warp.NewTicket{ID: id, Title: id, Labels: labels}); err != nil {
		s.t.Fatal(err)
	}
}

// Ticket returns ticket id with its latest lease.
func (s *Server) Ticket(id string) warp.TicketView {
	s.t.Helper()
	v, err := s.Svc.Ticket(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

// StartProcess starts name with args as a real process standing in for an
// agent and returns it with its identity; it is killed and reaped at the
// end of the test.
func StartProcess(t testing.TB, name string, args ...string) (*exec.Cmd, proc.Identity) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, id
}

// WaitTimeout bounds WaitFor: only a broken run reaches it, so it leaves a
// loaded machine all the room it needs (10 s was reached under load).
const WaitTimeout = time.Minute

// WaitFor polls cond every 10 ms for up to WaitTimeout and fails the test,
// naming what it waited for, when cond never holds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", WaitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BuildGyrum builds the gyrum binary, with gyrum-hook beside it, into a new
// temporary directory, for a package's TestMain; path is gyrum's, remove
// the directory's cleanup. Build output goes to stderr.
func BuildGyrum() (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "gyrum-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "gyrum")
	// Both binaries, as a release ships them: gyrum setup then installs
	// gyrum-hook, the hook the agents run.
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", dir+string(filepath.Separator),
		"github.com/gyrum-labs/warp/cmd/gyrum", "github.com/gyrum-labs/warp/cmd/gyrum-hook")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as a release builds them
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build gyrum: %w", err)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
