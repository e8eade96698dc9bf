package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
)

const (
	agentToken = "agent-secret-1"
	adminToken = "admin-secret-1"
)

// testClock is the service clock the tests move.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a real API server on 127.0.0.1:0 over a real SQLite file, with a
// service clock the test moves.
type env struct {
	t     testing.TB
	clock *testClock
	db    *sqlite.DB
	path  string
	svc   *warp.Service
	api   *httpapi.Server
	srv   *httptest.Server
}

type envOptions struct {
	tokens []httpapi.Token
	mode   warp.Mode
	cfg    httpapi.ServerConfig
	// sessions keeps dashboard sign-ins in the env's store.
	sessions bool
}

func withTokens() envOptions {
	return envOptions{tokens: []httpapi.Token{{Role: httpapi.RoleAgent, Secret: agentToken}, {Role: httpapi.RoleAdmin, Secret: adminToken}}}
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	clock := &testClock{now: time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)}
	svc, err := warp.NewService(db, warp.Config{Policy: warp.DefaultPolicy(), InitialMode: o.mode, Now: clock.Now, // sweeps by hand, hours apart: no gap
		SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := o.cfg
	cfg.Tokens = o.tokens
	if o.sessions {
		cfg.Sessions = db
	}
	api, err := httpapi.NewServer(svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &env{t: t, clock: clock, db: db, path: path, svc: svc, api: api, srv: srv}
}

// response is one raw answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorCode() string {
	var eb httpapi.ErrorBody
	if err := json.Unmarshal(r.body, &eb); err != nil {
		return ""
	}
	return eb.Error.Code
}

func (r response) errorMessage() string {
	var eb httpapi.ErrorBody
	_ = json.Unmarshal(r.body, &eb)
	return eb.Error.Message
}

// request sends a raw request the way a shell script or another client
// would; contentType "" sends none.
func (e *env) request(method, path, token, contentType string, body []byte) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// json sends v as a JSON body and decodes a 2xx answer into out.
func (e *env) json(method, path, token string, v, out any) response {
	e.t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			e.t.Fatal(err)
		}
	}
	r := e.request(method, path, token, "application/json", body)
	if out != nil && r.status < 300 {
		if err := json.Unmarshal(r.body, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, r.body, err)
		}
	}
	return r
}

func (e *env) mustStatus(r response, want int) response {
	e.t.Helper()
	if r.status != want {
		e.t.Fatalf("status %d, want %d; body %s", r.status, want, r.body)
	}
	return r
}

func (e *env) create(id string, labels ...string) {
	e.t.Helper()
	e.mustStatus(e.json("POST", "/v1/tickets", adminToken, httpapi.CreateTicketRequest{ID: id, Title: "ticket " + id, Labels: labels}, nil), http.StatusCreated)
}

func (e *env) claim(id, host string) httpapi.Ticket {
	e.t.Helper()
	var t httpapi.Ticket
	e.mustStatus(e.json("POST", "/v1/tickets/"+id+"/claim", agentToken, httpapi.ClaimRequest{Agent: "O", Host: host}, &t), http.StatusOK)
	return t
}

func (e *env) ticket(id string) warp.TicketView {
	e.t.Helper()
	v, err := e.svc.Ticket(context.Background(), id)
	if err != nil {
		e.t.Fatalf("ticket %s: %v", id, err)
	}
	return v
}

// snapshot renders everything a request could change: every ticket with
// its lease, every event (per ticket and global), the mode and the
// adoption counts.
func (e *env) snapshot() string {
	e.t.Helper()
	ctx := context.Background()
	page, err := e.svc.ListTickets(ctx, warp.ListOptions{Limit: warp.MaxListLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	type tk struct {
		View   warp.TicketView
		Events []warp.Event
	}
	var out struct {
		Tickets  []tk
		Global   []warp.Event
		Mode     warp.Mode
		Adoption warp.Adoption
	}
	for _, v := range page.Tickets {
		evs, err := e.svc.Events(ctx, v.Ticket.ID, 0, warp.MaxListLimit)
		if err != nil {
			e.t.Fatal(err)
		}
		out.Tickets = append(out.Tickets, tk{View: v, Events: evs})
	}
	err = e.db.View(ctx, func(tx warp.Tx) error {
		var err error
		out.Global, err = tx.Events(ctx, "", 0, warp.MaxListLimit)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if out.Mode, err = e.svc.Mode(ctx); err != nil {
		e.t.Fatal(err)
	}
	if out.Adoption, err = e.svc.Adoption(ctx, warp.DefaultAdoptionWindow); err != nil {
		e.t.Fatal(err)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func v2Body(ticket string, epoch int64, age float64) map[string]any {
	return map[string]any{"schema_version": 2, "ticket": ticket, "epoch": epoch, "host": "h1", "agent": "O", "activity_age_s": age}
}

func TestHealthAndReadyAreOpen(t *testing.T) {
	e := newEnv(t, withTokens())
	r := e.mustStatus(e.request("GET", "/healthz", "", "", nil), http.StatusOK)
	if !strings.Contains(string(r.body), `"ok"`) {
		t.Errorf("healthz body %s", r.body)
	}
	e.mustStatus(e.request("GET", "/readyz", "", "", nil), http.StatusOK)
	// With the database gone, readiness fails with 503 while liveness holds.
	e.db.Close()
	r = e.request("GET", "/readyz", "", "", nil)
	if r.status != http.StatusServiceUnavailable || r.errorCode() != httpapi.CodeUnavailable {
		t.Errorf("readyz on a closed database: %d %s, want 503 unavailable", r.status, r.body)
	}
	e.mustStatus(e.request("GET", "/healthz", "", "", nil), http.StatusOK)
}

func TestAgentMayDoItsWorkWithItsToken(t *testing.T) {
	e := newEnv(t, withTokens())
	e.create("T-1", "go")
	e.create("T-2", "go")
	e.create("T-3")
	t1 := e.claim("T-1", "h1")
	if t1.Lease == nil || t1.Lease.Epoch != 1 || t1.State != "claimed" || t1.Verdict != "active" {
		t.Fatalf("claim answer %+v", t1)
	}
	var hb httpapi.HeartbeatResponse
	e.mustStatus(e.json("POST", "/v1/heartbeat", agentToken, v2Body("T-1", 1, 3), &hb), http.StatusOK)
	if hb.Ticket != "T-1" || hb.Epoch != 1 || hb.Mode != "transition" || hb.Verdict != "active" || !hb.Extended {
		t.Errorf("heartbeat answer %+v", hb)
	}
	var next httpapi.Ticket
	e.mustStatus(e.json("POST", "/v1/claims/next", agentToken, httpapi.ClaimNextRequest{Agent: "U", Host: "h2", Labels: []string{"go"}}, &next), http.StatusOK)
	if next.ID != "T-2" {
		t.Errorf("claim-next took %s, want T-2 (oldest open with label go)", next.ID)
	}
	var rel httpapi.Ticket
	e.mustStatus(e.json("POST", "/v1/tickets/T-2/release", agentToken, httpapi.ReleaseRequest{Epoch: 1, Reason: "done for now"}, &rel), http.StatusOK)
	if rel.State != "open" || rel.Lease.State != "released" || rel.Lease.EndReason != "done for now" {
		t.Errorf("release answer %+v lease %+v", rel, rel.Lease)
	}
	var done httpapi.Ticket
	e.mustStatus(e.json("POST", "/v1/tickets/T-1/complete", agentToken, httpapi.CompleteRequest{Epoch: 1, PRURL: "https://example.com/pr/1"}, &done), http.StatusOK)
	if done.State != "completed" || done.Lease.PRURL != "https://example.com/pr/1" {
		t.Errorf("complete answer %+v", done)
	}
	// The agent may not read the ticket list: that is an operator's view.
	r := e.request("GET", "/v1/tickets", agentToken, "", nil)
	if r.status != http.StatusForbidden || r.errorCode() != httpapi.CodeForbidden {
		t.Errorf("agent GET /v1/tickets: %d %s", r.status, r.body)
	}
}

func TestAdminReadsTicketsEventsModeAdoption(t *testing.T) {
	e := newEnv(t, withTokens())
	for _, id := range []string{"A-1", "A-2", "A-3"} {
		e.create(id)
	}
	e.claim("A-2", "h1")
	e.mustStatus(e.json("POST", "/heartbeat", agentToken, map[string]any{"ticket": "A-2", "host": "h1"}, nil), http.StatusOK)

	var list httpapi.TicketList
	e.mustStatus(e.json("GET", "/v1/tickets?limit=2", adminToken, nil, &list), http.StatusOK)
	if len(list.Tickets) != 2 || list.Tickets[0].ID != "A-1" || list.NextCursor == "" {
		t.Fatalf("page 1: %+v", list)
	}
	var page2 httpapi.TicketList
	e.mustStatus(e.json("GET", "/v1/tickets?limit=2&cursor="+list.NextCursor, adminToken, nil, &page2), http.StatusOK)
	if len(page2.Tickets) != 1 || page2.Tickets[0].ID != "A-3" || page2.NextCursor != "" {
		t.Fatalf("page 2: %+v", page2)
	}
	var claimed httpapi.TicketList
	e.mustStatus(e.json("GET", "/v1/tickets?state=claimed&verdict=active&host=h1", adminToken, nil, &claimed), http.StatusOK)
	if len(claimed.Tickets) != 1 || claimed.Tickets[0].ID != "A-2" {
		t.Fatalf("claimed active on h1: %+v", claimed)
	}
	var one httpapi.Ticket
	e.mustStatus(e.json("GET", "/v1/tickets/A-2", adminToken, nil, &one), http.StatusOK)
	if one.Lease == nil || one.Lease.SchemaVersion != 1 || one.Verdict != "active" {
		t.Fatalf("ticket A-2: %+v", one)
	}
	var evs httpapi.EventList
	e.mustStatus(e.json("GET", "/v1/tickets/A-2/events", adminToken, nil, &evs), http.StatusOK)
	if len(evs.Events) != 2 || evs.Events[0].Kind != "created" || evs.Events[1].Kind != "claimed" {
		t.Fatalf("events of A-2: %+v", evs)
	}
	var after httpapi.EventList
	e.mustStatus(e.json("GET", "/v1/tickets/A-2/events?after="+jsonInt(evs.Events[0].ID), adminToken, nil, &after), http.StatusOK)
	if len(after.Events) != 1 || after.Events[0].Kind != "claimed" {
		t.Fatalf("events after the first: %+v", after)
	}
	var a httpapi.Adoption
	e.mustStatus(e.json("GET", "/v1/adoption?window=1h", adminToken, nil, &a), http.StatusOK)
	if a.Window != "1h0m0s" || len(a.Hosts) != 1 || a.Hosts[0].Host != "h1" || a.Hosts[0].V1Count != 1 || a.Summary.ReadyForActivityMode {
		t.Fatalf("adoption: %+v", a)
	}
	var m httpapi.ModeBody
	e.mustStatus(e.json("GET", "/v1/mode", adminToken, nil, &m), http.StatusOK)
	if m.Mode != "transition" {
		t.Fatalf("mode %q", m.Mode)
	}
	// h1 sent v1 within the window: activity mode is refused, then forced.
	r := e.json("PUT", "/v1/mode", adminToken, httpapi.ModeBody{Mode: "activity"}, nil)
	if r.status != http.StatusConflict || r.errorCode() != httpapi.CodeAdoptionIncomplete || !strings.Contains(r.errorMessage(), "h1") {
		t.Fatalf("activity without force: %d %s", r.status, r.body)
	}
	e.mustStatus(e.json("PUT", "/v1/mode", adminToken, httpapi.ModeBody{Mode: "activity", Force: true}, &m), http.StatusOK)
	if m.Mode != "activity" {
		t.Fatalf("mode after force %q", m.Mode)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// One secret configured with two roles is refused: the index would give
// it the later one, an agent's token made admin.
func TestServerRefusesASecretWithTwoRoles(t *testing.T) {
	svc := newEnv(t, envOptions{}).svc
	_, err := httpapi.NewServer(svc, httpapi.ServerConfig{Tokens: []httpapi.Token{
		{Role: httpapi.RoleAgent, Secret: "shared"}, {Role: httpapi.RoleAdmin, Secret: "root"}, {Role: httpapi.RoleAdmin, Secret: "shared"}}})
	if err == nil || !strings.Contains(err.Error(), "token 2") || !strings.Contains(err.Error(), "also configured as agent") {
		t.Fatalf("NewServer: %v, want token 2 refused as also an agent's", err)
	}
	// The same secret twice with one role is the same token.
	if _, err := httpapi.NewServer(svc, httpapi.ServerConfig{Tokens: []httpapi.Token{
		{Role: httpapi.RoleAdmin, Secret: "root"}, {Role: httpapi.RoleAdmin, Secret: "root"}}}); err != nil {
		t.Fatal(err)
	}
}

// A route mounted open (no token needed) gives the domain a caller held to
// the holder checks, not an admin: a write mounted open by mistake could
// otherwise end any lease.
func TestOpenRoutesCallerIsNotAnAdmin(t *testing.T) {
	e := newEnv(t, withTokens())
	got := make(chan warp.Caller, 1)
	e.api.Mount("GET /test-open", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := warp.CallerFrom(r.Context())
		got <- c
	}), httpapi.RoleOpen)
	e.mustStatus(e.request("GET", "/test-open", "", "", nil), http.StatusOK)
	if c := <-got; !c.Agent {
		t.Errorf("anonymous caller of an open route: %+v, want one held to the holder checks", c)
	}
	open := newEnv(t, envOptions{})
	open.api.Mount("GET /test-open", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := warp.CallerFrom(r.Context())
		got <- c
	}), httpapi.RoleOpen)
	open.mustStatus(open.request("GET", "/test-open", "", "", nil), http.StatusOK)
	if c := <-got; c.Agent {
		t.Errorf("a server without tokens: caller %+v, want admin (every caller is)", c)
	}
}

func TestNoTokensConfiguredAllowsEverything(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.mustStatus(e.json("POST", "/v1/tickets", "", httpapi.CreateTicketRequest{ID: "T-1"}, nil), http.StatusCreated)
	e.mustStatus(e.json("POST", "/v1/tickets/T-1/claim", "", nil, nil), http.StatusOK)
	// Release without epoch is the operator's call; open servers treat
	// every caller as the operator.
	e.mustStatus(e.json("POST", "/v1/tickets/T-1/release", "", httpapi.ReleaseRequest{}, nil), http.StatusOK)
	e.mustStatus(e.request("GET", "/v1/tickets", "", "", nil), http.StatusOK)
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	e := newEnv(t, withTokens())
	r := e.request("GET", "/v1/nope", adminToken, "", nil)
	if r.status != http.StatusNotFound || r.errorCode() != httpapi.CodeNotFound {
		t.Errorf("GET /v1/nope: %d %s", r.status, r.body)
	}
	r = e.request("DELETE", "/v1/tickets", adminToken, "", nil)
	if r.status != http.StatusMethodNotAllowed || r.errorCode() != httpapi.CodeMethodNotAllowed {
		t.Errorf("DELETE /v1/tickets: %d %s", r.status, r.body)
	}
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "POST") || !strings.Contains(allow, "GET") {
		t.Errorf("Allow %q, want GET and POST", allow)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestMountAddsRoutesBehindAuthAndObserve(t *testing.T) {
	type obs struct {
		route string
		code  int
	}
	seen := make(chan obs, 16)
	o := withTokens()
	o.cfg.Observe = func(route string, code int, _ time.Duration) { seen <- obs{route, code} }
	e := newEnv(t, o)
	e.api.Mount("GET /extra", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpapi.CallerRole(r.Context()) != httpapi.RoleAdmin {
			t.Errorf("caller role %v inside the handler", httpapi.CallerRole(r.Context()))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusTeapot)
		// Streaming handlers flush through the middleware's writer.
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the middleware: %v", err)
		}
		io.WriteString(w, "data: hi\n\n")
	}), httpapi.RoleAdmin)

	r := e.request("GET", "/extra", agentToken, "", nil)
	if r.status != http.StatusForbidden {
		t.Errorf("agent on an admin mount: %d", r.status)
	}
	if got := <-seen; got != (obs{"GET /extra", http.StatusForbidden}) {
		t.Errorf("observed %+v", got)
	}
	r = e.request("GET", "/extra", adminToken, "", nil)
	if r.status != http.StatusTeapot || string(r.body) != "data: hi\n\n" {
		t.Errorf("admin on the mount: %d %q", r.status, r.body)
	}
	if got := <-seen; got != (obs{"GET /extra", http.StatusTeapot}) {
		t.Errorf("observed %+v", got)
	}
	e.request("GET", "/nowhere", adminToken, "", nil)
	if got := <-seen; got != (obs{"unmatched", http.StatusNotFound}) {
		t.Errorf("observed %+v", got)
	}
}

func TestHeartbeatOutcomeHook(t *testing.T) {
	got := make(chan apiobserve.HeartbeatOutcome, 8)
	o := envOptions{}
	o.cfg.OnHeartbeat = func(h apiobserve.HeartbeatOutcome) { got <- h }
	e := newEnv(t, o)
	e.create("T-1")
	e.claim("T-1", "h1")
	e.json("POST", "/v1/heartbeat", "", v2Body("T-1", 1, 0), nil)
	if h := <-got; h != (apiobserve.HeartbeatOutcome{SchemaVersion: 2, Code: "ok", Extended: true, Ticket: "T-1", Epoch: 1}) {
		t.Errorf("v2 outcome %+v", h)
	}
	e.json("POST", "/heartbeat", "", map[string]any{"ticket": "T-9"}, nil)
	if h := <-got; h != (apiobserve.HeartbeatOutcome{SchemaVersion: 1, Code: httpapi.CodeNotFound, Ticket: "T-9"}) {
		t.Errorf("unknown ticket outcome %+v", h)
	}
	e.request("POST", "/heartbeat", "", "", []byte(`{"schema_version":9,"ticket":"T-1"}`))
	if h := <-got; h.Code != httpapi.CodeUnsupportedSchema || h.Extended {
		t.Errorf("unsupported schema outcome %+v", h)
	}
}

// TestDatabaseLockedAnswers503: another process holding SQLite's write
// lock past the busy timeout makes writes fail as "unavailable" (503, so
// loops retry), logged as a 5xx; 4xx answers are not logged. Once the lock
// is gone the same request succeeds.
func TestDatabaseLockedAnswers503(t *testing.T) {
	t.Parallel()
	var logBuf syncBuffer
	o := envOptions{}
	o.cfg.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	e := newEnv(t, o)

	e.mustStatus(e.json("GET", "/v1/tickets/NOPE", "", nil, nil), http.StatusNotFound)
	if strings.Contains(logBuf.String(), "request failed") {
		t.Fatalf("a 404 was logged: %s", logBuf.String())
	}

	other, err := sql.Open("sqlite", e.path) // the driver internal/sqlite registers
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	r := e.json("POST", "/v1/tickets", "", httpapi.CreateTicketRequest{ID: "T-1"}, nil)
	if r.status != http.StatusServiceUnavailable || r.errorCode() != httpapi.CodeUnavailable {
		t.Fatalf("write under a foreign lock: %d %s, want 503 unavailable", r.status, r.body)
	}
	if !strings.Contains(logBuf.String(), "request failed") || !strings.Contains(logBuf.String(), "status=503") {
		t.Errorf("503 not logged: %s", logBuf.String())
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	e.mustStatus(e.json("POST", "/v1/tickets", "", httpapi.CreateTicketRequest{ID: "T-1"}, nil), http.StatusCreated)
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
