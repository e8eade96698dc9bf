package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/metrics"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// More tokens of the documentation fixture: a second agent (for leases
// bound to another token) and one kept for the per-token host bound.
const (
	agent2Token = "agent-secret-2"
	hostsToken  = "agent-hosts-1"
	docHostCap  = 2 // --max-hosts-per-token of the fixture
)

// faultStore is the real SQLite store with a switch that makes every
// transaction fail with a given error, as a lost database (503) or a
// failing one (500) would.
type faultStore struct {
	warp.Store
	err atomic.Pointer[error]
}

func (s *faultStore) fault() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *faultStore) set(err error) {
	if err == nil {
		s.err.Store(nil)
		return
	}
	s.err.Store(&err)
}

func (s *faultStore) Update(ctx context.Context, fn func(warp.Tx) error) error {
	if err := s.fault(); err != nil {
		return err
	}
	return s.Store.Update(ctx, fn)
}

func (s *faultStore) View(ctx context.Context, fn func(warp.Tx) error) error {
	if err := s.fault(); err != nil {
		return err
	}
	return s.Store.View(ctx, fn)
}

func (s *faultStore) Ping(ctx context.Context) error {
	if err := s.fault(); err != nil {
		return err
	}
	return s.Store.Ping(ctx)
}

var (
	errDBDown   = fmt.Errorf("injected: %w", warp.ErrUnavailable)
	errDBBroken = errors.New("injected: the disk is on fire")
)

// docFixture is a server assembled as warp serve assembles it (the API, the
// dashboard with its event stream, the metrics), with tokens, over a real
// SQLite file behind a faultStore. It records the route pattern of every
// request the router matched.
type docFixture struct {
	t      testing.TB
	store  *faultStore
	svc    *warp.Service
	ops    *warpcli.Ops
	api    *httpapi.Server
	srv    *httptest.Server
	client *http.Client
	routes chan string
	seq    int
}

func newDocFixture(t testing.TB) *docFixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := &testClock{now: time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)}
	f := &docFixture{t: t, store: &faultStore{Store: db}, routes: make(chan string, 256)}
	f.svc, err = warp.NewService(f.store, warp.Config{Policy: warp.DefaultPolicy(), Now: clock.Now, MaxHostsPerToken: docHostCap})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if f.ops, err = warpcli.NewOps(f.svc, dashboard.Config{}, metrics.Config{}); err != nil {
		t.Fatal(err)
	}
	cfg := httpapi.ServerConfig{
		Tokens: []httpapi.Token{
			{Role: httpapi.RoleAgent, Secret: agentToken}, {Role: httpapi.RoleAgent, Secret: agent2Token},
			{Role: httpapi.RoleAgent, Secret: hostsToken}, {Role: httpapi.RoleAdmin, Secret: adminToken},
		},
		Sessions: f.store,
		Observe: func(route string, _ int, _ time.Duration) {
			select {
			case f.routes <- route:
			default:
			}
		},
	}
	f.ops.Attach(&cfg)
	if f.api, err = httpapi.NewServer(f.svc, cfg); err != nil {
		t.Fatal(err)
	}
	f.ops.Mount(f.api)
	sctx, cancel := context.WithCancel(ctx)
	if err := f.ops.Start(sctx); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.api)
	f.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		f.ops.Close() // open streams would hold up the server's Close
		f.srv.Close()
		cancel()
	})
	return f
}

// docReq is one request as a client sends it.
type docReq struct {
	method, path string
	token        string // bearer token; none when empty
	secret       string // Warp-Lease-Secret; none when empty
	contentType  string // application/json when empty and there is a body
	body         string
	header       map[string]string // more headers: Accept, Cookie, Origin
}

type docResp struct {
	status int
	header http.Header
	body   []byte
}

func (r docReq) http(base string) *http.Request {
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		panic(err)
	}
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.secret != "" {
		req.Header.Set(httpapi.HeaderLeaseSecret, r.secret)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	return req
}

// send sends r to the fixture's server. Of an event stream it reads the
// first event and leaves.
func (f *docFixture) send(r docReq) docResp {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := f.client.Do(r.http(f.srv.URL).WithContext(ctx))
	if err != nil {
		f.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	var b []byte
	if mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			b = append(b, line...)
			if err != nil || line == "\n" {
				break
			}
		}
		cancel()
	} else if b, err = io.ReadAll(resp.Body); err != nil {
		f.t.Fatalf("%s %s: read the answer: %v", r.method, r.path, err)
	}
	return docResp{status: resp.StatusCode, header: resp.Header, body: b}
}

// session signs in with the admin token, as a browser does, and returns
// the Cookie header the browser then sends.
func (f *docFixture) session() string {
	f.t.Helper()
	resp, err := f.client.PostForm(f.srv.URL+"/signin", url.Values{"token": {adminToken}})
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie {
			return c.Name + "=" + c.Value
		}
	}
	f.t.Fatalf("sign-in set no session cookie: %d %v", resp.StatusCode, resp.Header)
	return ""
}

func (f *docFixture) drainRoutes() {
	for {
		select {
		case <-f.routes:
		default:
			return
		}
	}
}

// routeOf returns the route pattern of the request just answered.
func (f *docFixture) routeOf() string {
	select {
	case r := <-f.routes:
		return r
	case <-time.After(5 * time.Second):
		return "(no route observed)"
	}
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// Setup through the service, as the tokens' holders would have done it.

func agentCtx(token, secret string, wantsSecret bool) context.Context {
	return warp.WithCaller(context.Background(), warp.Caller{Agent: true, Token: warp.TokenID(token),
		LeaseSecret: secret, WantsSecret: wantsSecret})
}

func (f *docFixture) create(labels ...string) string {
	f.t.Helper()
	f.seq++
	id := fmt.Sprintf("D-%d", f.seq)
	if _, err := f.svc.CreateTicket(context.Background(), warp.NewTicket{ID: id, Title: "doc " + id, Labels: labels}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// claimed returns a ticket claimed by agentToken with a lease secret.
func (f *docFixture) claimed() (id string, epoch int64, secret string) {
	f.t.Helper()
	id = f.create()
	v, err := f.svc.Claim(agentCtx(agentToken, "", true), id, warp.ClaimRequest{Agent: "O", Host: "h1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return id, v.Ticket.Epoch, v.LeaseSecret
}

// claimedBy returns a ticket claimed by token without a secret: the lease
// is bound to the token.
func (f *docFixture) claimedBy(token string) (id string, epoch int64) {
	f.t.Helper()
	id = f.create()
	v, err := f.svc.Claim(agentCtx(token, "", false), id, warp.ClaimRequest{Agent: "O", Host: "h1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return id, v.Ticket.Epoch
}

// released returns a ticket whose secret-bound lease its holder released.
func (f *docFixture) released() (id string, epoch int64, secret string) {
	f.t.Helper()
	id, epoch, secret = f.claimed()
	if _, err := f.svc.Release(agentCtx(agentToken, secret, false), id, epoch, "done for now"); err != nil {
		f.t.Fatal(err)
	}
	return id, epoch, secret
}

func (f *docFixture) heartbeat(ctx context.Context, h warp.Heartbeat) {
	f.t.Helper()
	if _, err := f.svc.Heartbeat(ctx, h); err != nil {
		f.t.Fatal(err)
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// docCase is one request of the status table: the route it is for, the
// status and error code it must get.
type docCase struct {
	route  string
	status int
	code   string // the error code; "" for a success
	name   string
	req    func(f *docFixture) docReq
	fault  error // the store fails with it during the request
	own    bool  // on a fixture of its own (it breaks the fixture)
	check  func(t *testing.T, body []byte)
}

func hbv2(id string, epoch int64, age float64, more map[string]any) string {
	b := map[string]any{"schema_version": 2, "ticket": id, "epoch": epoch, "host": "h1", "agent": "O", "activity_age_s": age}
	for k, v := range more {
		b[k] = v
	}
	return js(b)
}

// docCases is the status table. With the generic requests of
// TestOpenAPIStatuses (no token, wrong token, agent token on admin routes,
// store faults, connection limits), it produces every
// documented status of every operation.
func docCases() []docCase {
	big := `{"title":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`
	long := strings.Repeat("h", 300)
	admin := func(method, path, body string) func(*docFixture) docReq {
		return func(*docFixture) docReq { return docReq{method: method, path: path, token: adminToken, body: body} }
	}
	get := func(path string) func(*docFixture) docReq { return admin("GET", path, "") }
	var cs []docCase
	add := func(route string, status int, code, name string, req func(*docFixture) docReq) {
		cs = append(cs, docCase{route: route, status: status, code: code, name: name, req: req})
	}
	hasSecret := func(t *testing.T, body []byte) {
		var tk httpapi.Ticket
		if err := json.Unmarshal(body, &tk); err != nil || len(tk.LeaseSecret) != 64 {
			t.Errorf("claim with Warp-Lease-Secret: new answered no lease_secret: %s", body)
		}
	}
	endedDetail := func(t *testing.T, body []byte) {
		var eb httpapi.ErrorBody
		_ = json.Unmarshal(body, &eb)
		if eb.Error.Detail["lease_state"] != "released" || eb.Error.Detail["end_reason"] != "done for now" {
			t.Errorf("lease_ended for the holder: detail %v, want lease_state and end_reason", eb.Error.Detail)
		}
	}

	// Tickets.
	add("POST /v1/tickets", 201, "", "create", func(f *docFixture) docReq {
		f.seq++
		return docReq{method: "POST", path: "/v1/tickets", token: adminToken,
			body: js(map[string]any{"id": fmt.Sprintf("N-%d", f.seq), "title": "t", "labels": []string{"go", "db"}})}
	})
	add("POST /v1/tickets", 201, "", "empty body: generated id", admin("POST", "/v1/tickets", ""))
	add("POST /v1/tickets", 400, "invalid", "bad id", admin("POST", "/v1/tickets", `{"id":"-bad"}`))
	add("POST /v1/tickets", 400, "invalid", "unknown field", admin("POST", "/v1/tickets", `{"nope":1}`))
	add("POST /v1/tickets", 400, "invalid", "malformed", admin("POST", "/v1/tickets", `{"title":`))
	add("POST /v1/tickets", 409, "conflict", "id taken", func(f *docFixture) docReq {
		return docReq{method: "POST", path: "/v1/tickets", token: adminToken, body: js(map[string]any{"id": f.create()})}
	})
	add("POST /v1/tickets", 413, "body_too_large", "64 KiB", admin("POST", "/v1/tickets", big))

	add("GET /v1/tickets", 200, "", "filtered page", func(f *docFixture) docReq {
		f.claimed()
		f.claimed()
		return docReq{method: "GET", path: "/v1/tickets?state=claimed&verdict=active&host=h1&limit=1", token: adminToken}
	})
	add("GET /v1/tickets", 200, "", "all", get("/v1/tickets"))
	for _, q := range []string{"state=bogus", "limit=0", "limit=1001", "cursor=x", "verdict=nope", "verdict=active&state=open"} {
		add("GET /v1/tickets", 400, "invalid", q, get("/v1/tickets?"+q))
	}

	add("GET /v1/tickets/{id}", 200, "", "held", func(f *docFixture) docReq {
		id, _, _ := f.claimed()
		return docReq{method: "GET", path: "/v1/tickets/" + id, token: adminToken}
	})
	add("GET /v1/tickets/{id}", 200, "", "ended", func(f *docFixture) docReq {
		id, _, _ := f.released()
		return docReq{method: "GET", path: "/v1/tickets/" + id, token: adminToken}
	})
	add("GET /v1/tickets/{id}", 200, "", "never claimed", func(f *docFixture) docReq {
		return docReq{method: "GET", path: "/v1/tickets/" + f.create(), token: adminToken}
	})
	add("GET /v1/tickets/{id}", 400, "invalid", "bad id", get("/v1/tickets/-x"))
	add("GET /v1/tickets/{id}", 404, "not_found", "unknown", get("/v1/tickets/NOPE-404"))

	add("GET /v1/tickets", 200, "", "by labels", get("/v1/tickets?label=go&label=db"))
	add("GET /v1/tickets", 400, "invalid", "bad label", get("/v1/tickets?label=no+spaces"))

	// An operator's changes.
	edit := func(body string) func(*docFixture) docReq {
		return func(f *docFixture) docReq {
			return docReq{method: "PATCH", path: "/v1/tickets/" + f.create(), token: adminToken, body: body}
		}
	}
	add("PATCH /v1/tickets/{id}", 200, "", "title and labels", edit(`{"title":"new","add_labels":["ui"],"remove_labels":["go"]}`))
	add("PATCH /v1/tickets/{id}", 200, "", "every label removed", edit(`{"labels":[]}`))
	add("PATCH /v1/tickets/{id}", 400, "invalid", "nothing to change", edit(`{}`))
	add("PATCH /v1/tickets/{id}", 400, "invalid", "empty body", edit(""))
	add("PATCH /v1/tickets/{id}", 400, "invalid", "labels and add_labels", edit(`{"labels":["a"],"add_labels":["b"]}`))
	add("PATCH /v1/tickets/{id}", 400, "invalid", "bad label", edit(`{"add_labels":["no spaces"]}`))
	add("PATCH /v1/tickets/{id}", 400, "invalid", "unknown field", edit(`{"state":"open"}`))
	add("PATCH /v1/tickets/{id}", 404, "not_found", "unknown", admin("PATCH", "/v1/tickets/NOPE-404", `{"title":"x"}`))
	add("PATCH /v1/tickets/{id}", 413, "body_too_large", "64 KiB", edit(big))
	for _, op := range []string{"cancel", "reopen"} {
		route := "POST /v1/tickets/{id}/" + op
		p := func(id string) string { return "/v1/tickets/" + id + "/" + op }
		if op == "cancel" {
			add(route, 200, "", "claimed", func(f *docFixture) docReq {
				id, _, _ := f.claimed()
				return docReq{method: "POST", path: p(id), token: adminToken, body: `{"reason":"not needed"}`}
			})
			add(route, 200, "", "open, empty body", func(f *docFixture) docReq {
				return docReq{method: "POST", path: p(f.create()), token: adminToken}
			})
			add(route, 409, "conflict", "already cancelled", func(f *docFixture) docReq {
				id := f.create()
				if _, err := f.svc.Cancel(context.Background(), id, ""); err != nil {
					f.t.Fatal(err)
				}
				return docReq{method: "POST", path: p(id), token: adminToken}
			})
		} else {
			add(route, 200, "", "cancelled", func(f *docFixture) docReq {
				id := f.create()
				if _, err := f.svc.Cancel(context.Background(), id, ""); err != nil {
					f.t.Fatal(err)
				}
				return docReq{method: "POST", path: p(id), token: adminToken, body: `{"reason":"wanted after all"}`}
			})
			add(route, 409, "conflict", "open", func(f *docFixture) docReq {
				return docReq{method: "POST", path: p(f.create()), token: adminToken}
			})
		}
		add(route, 400, "invalid", "reason too long", func(f *docFixture) docReq {
			return docReq{method: "POST", path: p(f.create()), token: adminToken, body: js(map[string]string{"reason": long})}
		})
		add(route, 400, "invalid", "bad id", admin("POST", p("-x"), ""))
		add(route, 404, "not_found", "unknown", admin("POST", p("NOPE-404"), ""))
		add(route, 413, "body_too_large", "64 KiB", func(f *docFixture) docReq {
			return docReq{method: "POST", path: p(f.create()), token: adminToken, body: big}
		})
	}

	add("GET /v1/tickets/{id}/events", 200, "", "events", func(f *docFixture) docReq {
		id, _, _ := f.released()
		return docReq{method: "GET", path: "/v1/tickets/" + id + "/events?after=0&limit=10", token: adminToken}
	})
	add("GET /v1/tickets/{id}/events", 400, "invalid", "after", get("/v1/tickets/D-1/events?after=-1"))
	add("GET /v1/tickets/{id}/events", 400, "invalid", "limit", get("/v1/tickets/D-1/events?limit=1001"))
	add("GET /v1/tickets/{id}/events", 400, "invalid", "bad id", get("/v1/tickets/-x/events"))
	add("GET /v1/tickets/{id}/events", 404, "not_found", "unknown", get("/v1/tickets/NOPE-404/events"))

	// What became of one lease: its holder with an agent token.
	leaseOf := func(id string, epoch int64) string { return fmt.Sprintf("/v1/tickets/%s/leases/%d", id, epoch) }
	add("GET /v1/tickets/{id}/leases/{epoch}", 200, "", "held, its secret", func(f *docFixture) docReq {
		id, epoch, secret := f.claimed()
		return docReq{method: "GET", path: leaseOf(id, epoch), token: agentToken, secret: secret}
	})
	add("GET /v1/tickets/{id}/leases/{epoch}", 200, "", "released, taken over, its secret", func(f *docFixture) docReq {
		id, epoch, secret := f.released()
		if _, err := f.svc.Claim(agentCtx(agentToken, "", true), id, warp.ClaimRequest{Agent: "P", Host: "h2"}); err != nil {
			f.t.Fatal(err)
		}
		return docReq{method: "GET", path: leaseOf(id, epoch), token: agentToken, secret: secret}
	})
	cs[len(cs)-1].check = func(t *testing.T, body []byte) {
		var st httpapi.LeaseStatus
		if err := json.Unmarshal(body, &st); err != nil || st.Lease.State != "released" || st.Lease.EndReason != "done for now" ||
			st.CurrentEpoch != st.Lease.Epoch+1 || st.TicketState != "claimed" {
			t.Errorf("a released lease taken over: got %+v (%v), want released with its reason, current_epoch one more, ticket claimed", st, err)
		}
	}
	add("GET /v1/tickets/{id}/leases/{epoch}", 200, "", "admin, without a secret", func(f *docFixture) docReq {
		id, epoch, _ := f.claimed()
		return docReq{method: "GET", path: leaseOf(id, epoch), token: adminToken}
	})
	add("GET /v1/tickets/{id}/leases/{epoch}", 400, "invalid", "epoch 0", get("/v1/tickets/D-1/leases/0"))
	add("GET /v1/tickets/{id}/leases/{epoch}", 400, "invalid", "epoch not a number", get("/v1/tickets/D-1/leases/x"))
	add("GET /v1/tickets/{id}/leases/{epoch}", 400, "invalid", "bad id", get("/v1/tickets/-x/leases/1"))
	add("GET /v1/tickets/{id}/leases/{epoch}", 404, "not_found", "unknown ticket", get("/v1/tickets/NOPE-404/leases/1"))
	add("GET /v1/tickets/{id}/leases/{epoch}", 404, "not_found", "no such epoch, admin", func(f *docFixture) docReq {
		id, epoch, _ := f.claimed()
		return docReq{method: "GET", path: leaseOf(id, epoch+1), token: adminToken}
	})
	add("GET /v1/tickets/{id}/leases/{epoch}", 409, "not_holder", "no secret", func(f *docFixture) docReq {
		id, epoch, _ := f.claimed()
		return docReq{method: "GET", path: leaseOf(id, epoch), token: agentToken}
	})
	add("GET /v1/tickets/{id}/leases/{epoch}", 409, "not_holder", "another lease's secret", func(f *docFixture) docReq {
		id, epoch, _ := f.claimed()
		_, _, other := f.claimed()
		return docReq{method: "GET", path: leaseOf(id, epoch), token: agentToken, secret: other}
	})
	add("GET /v1/tickets/{id}/leases/{epoch}", 409, "not_holder", "no such epoch, agent", func(f *docFixture) docReq {
		id, epoch, secret := f.claimed()
		return docReq{method: "GET", path: leaseOf(id, epoch+1), token: agentToken, secret: secret}
	})

	// Claims.
	add("POST /v1/tickets/{id}/claim", 200, "", "with a secret", func(f *docFixture) docReq {
		return docReq{method: "POST", path: "/v1/tickets/" + f.create() + "/claim", token: agentToken, secret: "new",
			body: `{"agent":"O","host":"h1"}`}
	})
	cs[len(cs)-1].check = hasSecret
	add("POST /v1/tickets/{id}/claim", 200, "", "token-bound, empty body", func(f *docFixture) docReq {
		return docReq{method: "POST", path: "/v1/tickets/" + f.create() + "/claim", token: agentToken}
	})
	claim := func(body string) func(*docFixture) docReq {
		return func(f *docFixture) docReq {
			return docReq{method: "POST", path: "/v1/tickets/" + f.create() + "/claim", token: agentToken, body: body}
		}
	}
	add("POST /v1/tickets/{id}/claim", 400, "invalid", "wrong type", claim(`{"agent":5}`))
	add("POST /v1/tickets/{id}/claim", 400, "invalid", "host too long", claim(js(map[string]string{"host": long})))
	add("POST /v1/tickets/{id}/claim", 400, "invalid", "bad id", func(*docFixture) docReq {
		return docReq{method: "POST", path: "/v1/tickets/-x/claim", token: agentToken}
	})
	add("POST /v1/tickets/{id}/claim", 404, "not_found", "unknown", func(*docFixture) docReq {
		return docReq{method: "POST", path: "/v1/tickets/NOPE-404/claim", token: agentToken}
	})
	add("POST /v1/tickets/{id}/claim", 409, "conflict", "claimed", func(f *docFixture) docReq {
		id, _, _ := f.claimed()
		return docReq{method: "POST", path: "/v1/tickets/" + id + "/claim", token: agentToken, secret: "new"}
	})
	add("POST /v1/tickets/{id}/claim", 409, "conflict", "completed", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		if _, err := f.svc.Complete(agentCtx(agentToken, sec, false), id, e, ""); err != nil {
			f.t.Fatal(err)
		}
		return docReq{method: "POST", path: "/v1/tickets/" + id + "/claim", token: agentToken}
	})
	add("POST /v1/tickets/{id}/claim", 413, "body_too_large", "64 KiB", claim(big))

	add("POST /v1/claims/next", 200, "", "by label", func(f *docFixture) docReq {
		label := fmt.Sprintf("next%d", f.seq)
		f.create(label)
		return docReq{method: "POST", path: "/v1/claims/next", token: agentToken, secret: "new",
			body: js(map[string]any{"agent": "O", "host": "h1", "labels": []string{label}})}
	})
	cs[len(cs)-1].check = hasSecret
	next := func(body string) func(*docFixture) docReq {
		return func(*docFixture) docReq {
			return docReq{method: "POST", path: "/v1/claims/next", token: agentToken, body: body}
		}
	}
	add("POST /v1/claims/next", 400, "invalid", "bad label", next(`{"labels":["-bad"]}`))
	add("POST /v1/claims/next", 400, "invalid", "unknown field", next(`{"label":"go"}`))
	add("POST /v1/claims/next", 404, "no_open_ticket", "no such label", next(`{"labels":["none-such"]}`))
	add("POST /v1/claims/next", 413, "body_too_large", "64 KiB", next(big))

	// Release and complete: the same checks.
	for _, w := range []struct{ verb, field string }{{"release", "reason"}, {"complete", "pr_url"}} {
		route := "POST /v1/tickets/{id}/" + w.verb
		p := func(id string) string { return "/v1/tickets/" + id + "/" + w.verb }
		add(route, 200, "", "agent with epoch and secret", func(f *docFixture) docReq {
			id, e, sec := f.claimed()
			return docReq{method: "POST", path: p(id), token: agentToken, secret: sec, body: js(map[string]any{"epoch": e, w.field: "done"})}
		})
		add(route, 200, "", "agent, token-bound", func(f *docFixture) docReq {
			id, e := f.claimedBy(agentToken)
			return docReq{method: "POST", path: p(id), token: agentToken, body: js(map[string]any{"epoch": e})}
		})
		add(route, 200, "", "admin without epoch", func(f *docFixture) docReq {
			id, _, _ := f.claimed()
			return docReq{method: "POST", path: p(id), token: adminToken}
		})
		add(route, 400, "invalid", "negative epoch", func(f *docFixture) docReq {
			id, _, _ := f.claimed()
			return docReq{method: "POST", path: p(id), token: adminToken, body: `{"epoch":-1}`}
		})
		add(route, 400, "invalid", "unknown field", func(f *docFixture) docReq {
			id, e, sec := f.claimed()
			return docReq{method: "POST", path: p(id), token: agentToken, secret: sec, body: js(map[string]any{"epoch": e, "why": "x"})}
		})
		add(route, 400, "invalid", w.field+" too long", func(f *docFixture) docReq {
			id, e, sec := f.claimed()
			return docReq{method: "POST", path: p(id), token: agentToken, secret: sec,
				body: js(map[string]any{"epoch": e, w.field: strings.Repeat("u", 1100)})}
		})
		add(route, 400, "invalid", "bad id", func(*docFixture) docReq {
			return docReq{method: "POST", path: p("-x"), token: adminToken}
		})
		add(route, 403, "forbidden", "agent without epoch", func(f *docFixture) docReq {
			id, _, sec := f.claimed()
			return docReq{method: "POST", path: p(id), token: agentToken, secret: sec, body: `{}`}
		})
		add(route, 404, "not_found", "unknown", func(*docFixture) docReq {
			return docReq{method: "POST", path: p("NOPE-404"), token: agentToken, body: `{"epoch":1}`}
		})
		add(route, 409, "stale_epoch", "older epoch", func(f *docFixture) docReq {
			id, e, sec := f.claimed()
			return docReq{method: "POST", path: p(id), token: agentToken, secret: sec, body: js(map[string]any{"epoch": e + 1})}
		})
		add(route, 409, "not_holder", "no secret", func(f *docFixture) docReq {
			id, e, _ := f.claimed()
			return docReq{method: "POST", path: p(id), token: agentToken, body: js(map[string]any{"epoch": e})}
		})
		add(route, 409, "not_holder", "another token", func(f *docFixture) docReq {
			id, e := f.claimedBy(agentToken)
			return docReq{method: "POST", path: p(id), token: agent2Token, body: js(map[string]any{"epoch": e})}
		})
		add(route, 410, "lease_ended", "released", func(f *docFixture) docReq {
			id, e, sec := f.released()
			return docReq{method: "POST", path: p(id), token: agentToken, secret: sec, body: js(map[string]any{"epoch": e})}
		})
		cs[len(cs)-1].check = endedDetail
		add(route, 410, "lease_ended", "never claimed", func(f *docFixture) docReq {
			return docReq{method: "POST", path: p(f.create()), token: adminToken}
		})
		add(route, 413, "body_too_large", "64 KiB", func(f *docFixture) docReq {
			return docReq{method: "POST", path: p(f.create()), token: adminToken, body: big}
		})
	}

	// Snapshots of attempts (issue 45): by the holder, held or ended, once.
	snapRoute := "POST /v1/tickets/{id}/attempts/{epoch}/snapshot"
	snapPath := func(id string, e int64) string { return fmt.Sprintf("/v1/tickets/%s/attempts/%d/snapshot", id, e) }
	saved := func(id string, e int64) string {
		return js(map[string]any{"state": "saved", "commit": strings.Repeat("ab", 20), "ref": fmt.Sprintf("refs/gyrum/%s/%d", id, e),
			"branch": "gyrum/" + id, "remote": "git@example.com:a/b.git", "host": "h1"})
	}
	add(snapRoute, 200, "", "ended lease, its holder", func(f *docFixture) docReq {
		id, e, sec := f.released()
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, secret: sec, body: saved(id, e)}
	})
	add(snapRoute, 200, "", "worktree gone", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, secret: sec, body: `{"state":"gone","host":"h1"}`}
	})
	add(snapRoute, 400, "invalid", "unknown state", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, secret: sec, body: `{"state":"maybe"}`}
	})
	add(snapRoute, 400, "invalid", "another ref", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, secret: sec, body: saved(id, e+1)}
	})
	add(snapRoute, 400, "invalid", "epoch 0", func(f *docFixture) docReq {
		id, _, sec := f.claimed()
		return docReq{method: "POST", path: snapPath(id, 0), token: agentToken, secret: sec, body: `{"state":"gone"}`}
	})
	add(snapRoute, 404, "not_found", "no such attempt", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		return docReq{method: "POST", path: snapPath(id, e+1), token: agentToken, secret: sec, body: saved(id, e+1)}
	})
	add(snapRoute, 409, "conflict", "a second snapshot", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		if _, err := f.svc.RecordSnapshot(context.Background(), id, e, warp.Snapshot{State: warp.SnapshotGone}); err != nil {
			f.t.Fatal(err)
		}
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, secret: sec, body: saved(id, e)}
	})
	add(snapRoute, 409, "not_holder", "no secret", func(f *docFixture) docReq {
		id, e, _ := f.claimed()
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, body: saved(id, e)}
	})
	add(snapRoute, 413, "body_too_large", "64 KiB", func(f *docFixture) docReq {
		id, e, sec := f.claimed()
		return docReq{method: "POST", path: snapPath(id, e), token: agentToken, secret: sec, body: big}
	})

	// Heartbeats, on both paths.
	for _, hp := range []string{"/v1/heartbeat", "/heartbeat"} {
		route := "POST " + hp
		hb := func(body func(f *docFixture) (string, string)) func(*docFixture) docReq {
			return func(f *docFixture) docReq {
				b, sec := body(f)
				return docReq{method: "POST", path: hp, token: agentToken, secret: sec, body: b}
			}
		}
		add(route, 200, "", "v2", hb(func(f *docFixture) (string, string) {
			id, e, sec := f.claimed()
			return hbv2(id, e, 3, map[string]any{"in_flight": "Bash", "hook_seen": true, "hook_events": 2}), sec
		}))
		add(route, 200, "", "v1 as curl -d sends it", func(f *docFixture) docReq {
			id, _ := f.claimedBy(agentToken)
			return docReq{method: "POST", path: hp, token: agentToken, contentType: "application/x-www-form-urlencoded", body: `{"ticket":"` + id + `"}`}
		})
		add(route, 200, "", "stale report", hb(func(f *docFixture) (string, string) {
			id, e, sec := f.claimed()
			return hbv2(id, e, 1260, map[string]any{"stale": true, "hook_seen": true, "hook_events": 0}), sec
		}))
		cs[len(cs)-1].check = func(t *testing.T, body []byte) {
			var r httpapi.HeartbeatResponse
			_ = json.Unmarshal(body, &r)
			if r.Extended || r.Note == "" {
				t.Errorf("stale report answered %s, want extended false and a note", body)
			}
		}
		add(route, 200, "", "probe", func(f *docFixture) docReq {
			return docReq{method: "POST", path: hp, token: agentToken, body: hbv2("gyrum-doctor-probe", 1, 0, nil),
				header: map[string]string{httpapi.HeaderProbe: httpapi.ProbeValue}}
		})
		cs[len(cs)-1].check = func(t *testing.T, body []byte) {
			var r httpapi.HeartbeatProbe
			if err := json.Unmarshal(body, &r); err != nil || !r.Probe || r.Ticket != "gyrum-doctor-probe" {
				t.Errorf("probe answered %s, want probe true for its ticket", body)
			}
		}
		add(route, 400, "invalid", "probe header other than 1", func(f *docFixture) docReq {
			return docReq{method: "POST", path: hp, token: agentToken, body: hbv2("T-1", 1, 0, nil),
				header: map[string]string{httpapi.HeaderProbe: "true"}}
		})
		add(route, 200, "", "exit report", hb(func(f *docFixture) (string, string) {
			id, e, sec := f.claimed()
			return hbv2(id, e, 1800, map[string]any{"exit": "parent-exited", "hook_seen": true, "hook_events": 0}), sec
		}))
		bad := map[string]map[string]any{
			"negative age":    {"activity_age_s": -1},
			"unknown exit":    {"exit": "crashed"},
			"hook_events < 0": {"hook_events": -1},
			"missing epoch":   {"epoch": nil},
		}
		for name, more := range bad {
			add(route, 400, "invalid", name, hb(func(f *docFixture) (string, string) {
				id, e, sec := f.claimed()
				var m map[string]any
				_ = json.Unmarshal([]byte(hbv2(id, e, 3, nil)), &m)
				for k, v := range more {
					if v == nil {
						delete(m, k)
					} else {
						m[k] = v
					}
				}
				return js(m), sec
			}))
		}
		add(route, 400, "invalid", "empty body", hb(func(*docFixture) (string, string) { return "", "" }))
		add(route, 400, "unsupported_schema_version", "schema_version 3", hb(func(f *docFixture) (string, string) {
			id, e, sec := f.claimed()
			return strings.Replace(hbv2(id, e, 3, nil), `"schema_version":2`, `"schema_version":3`, 1), sec
		}))
		add(route, 404, "not_found", "unknown ticket", hb(func(*docFixture) (string, string) { return `{"ticket":"NOPE-404"}`, "" }))
		add(route, 409, "stale_epoch", "older epoch", hb(func(f *docFixture) (string, string) {
			id, e, sec := f.claimed()
			return hbv2(id, e+1, 3, nil), sec
		}))
		add(route, 409, "not_holder", "wrong secret", hb(func(f *docFixture) (string, string) {
			id, e, _ := f.claimed()
			return hbv2(id, e, 3, nil), strings.Repeat("0", 64)
		}))
		add(route, 410, "lease_ended", "after the release", hb(func(f *docFixture) (string, string) {
			id, e, sec := f.released()
			return hbv2(id, e, 3, nil), sec
		}))
		cs[len(cs)-1].check = endedDetail
		add(route, 410, "lease_ended", "v1 to a ticket never claimed", hb(func(f *docFixture) (string, string) {
			return `{"ticket":"` + f.create() + `"}`, ""
		}))
		add(route, 429, "too_many_hosts", "one host too many", func(f *docFixture) docReq {
			id, _ := f.claimedBy(hostsToken)
			for i := range docHostCap {
				f.heartbeat(agentCtx(hostsToken, "", false), warp.Heartbeat{SchemaVersion: 1, Ticket: id, Host: fmt.Sprintf("fleet-%d", i)})
			}
			return docReq{method: "POST", path: hp, token: hostsToken, body: js(map[string]string{"ticket": id, "host": "one-more"})}
		})
		add(route, 413, "body_too_large", "64 KiB", hb(func(*docFixture) (string, string) { return big, "" }))
	}

	// Fleet and mode.
	for _, p := range []string{"/v1/adoption", "/v1/hosts"} {
		route := "GET " + p
		add(route, 200, "", "first page", func(f *docFixture) docReq {
			for _, h := range []string{"h1", "fleet-x"} {
				id, _ := f.claimedBy(agent2Token)
				f.heartbeat(agentCtx(agent2Token, "", false), warp.Heartbeat{SchemaVersion: 1, Ticket: id, Host: h})
			}
			return docReq{method: "GET", path: p + "?window=1h&limit=1", token: adminToken}
		})
		add(route, 200, "", "defaults", get(p))
		for _, q := range []string{"window=-1h", "window=soon", "limit=0", "limit=5001"} {
			add(route, 400, "invalid", q, get(p+"?"+q))
		}
	}
	add("GET /v1/mode", 200, "", "mode", get("/v1/mode"))
	add("PUT /v1/mode", 200, "", "the current mode again", admin("PUT", "/v1/mode", `{"mode":"transition"}`))
	add("PUT /v1/mode", 400, "invalid", "empty body", admin("PUT", "/v1/mode", ""))
	add("PUT /v1/mode", 400, "invalid", "unknown mode", admin("PUT", "/v1/mode", `{"mode":"bogus"}`))
	add("PUT /v1/mode", 400, "invalid", "unknown field", admin("PUT", "/v1/mode", `{"mode":"legacy","now":true}`))
	add("PUT /v1/mode", 409, "adoption_incomplete", "a host sent v1", func(f *docFixture) docReq {
		id, _ := f.claimedBy(agentToken)
		f.heartbeat(agentCtx(agentToken, "", false), warp.Heartbeat{SchemaVersion: 1, Ticket: id, Host: "h1"})
		return docReq{method: "PUT", path: "/v1/mode", token: adminToken, body: `{"mode":"activity"}`}
	})
	add("PUT /v1/mode", 413, "body_too_large", "64 KiB", admin("PUT", "/v1/mode", big))
	add("GET /v1/mode/history", 200, "", "changes", func(f *docFixture) docReq {
		for _, m := range []warp.Mode{warp.ModeLegacy, warp.ModeTransition} {
			if _, err := f.svc.SetMode(context.Background(), m, false); err != nil {
				f.t.Fatal(err)
			}
		}
		return docReq{method: "GET", path: "/v1/mode/history?limit=5", token: adminToken}
	})
	add("GET /v1/mode/history", 400, "invalid", "limit", get("/v1/mode/history?limit=0"))

	// Health, metrics, the stream, the documents.
	add("GET /healthz", 200, "", "up", func(*docFixture) docReq { return docReq{method: "GET", path: "/healthz"} })
	add("GET /readyz", 200, "", "ready", func(*docFixture) docReq { return docReq{method: "GET", path: "/readyz"} })
	cs = append(cs, docCase{route: "GET /readyz", status: 503, code: "unavailable", name: "database down", fault: errDBDown,
		req: func(*docFixture) docReq { return docReq{method: "GET", path: "/readyz"} }})
	cs = append(cs, docCase{route: "GET /readyz", status: 503, code: "unavailable", name: "database failing", fault: errDBBroken,
		req: func(*docFixture) docReq { return docReq{method: "GET", path: "/readyz"} }})
	add("GET /metrics", 200, "", "scrape", get("/metrics"))
	add("GET /v1/events/stream", 200, "", "hello", get("/v1/events/stream"))
	cs[len(cs)-1].check = func(t *testing.T, body []byte) {
		if !strings.HasPrefix(string(body), "retry: 2000\nevent: hello\ndata: {") {
			t.Errorf("stream starts %q", body)
		}
	}
	cs = append(cs, docCase{route: "GET /v1/events/stream", status: 503, name: "server stopping", own: true,
		req: func(f *docFixture) docReq {
			f.ops.Close()
			return docReq{method: "GET", path: "/v1/events/stream", token: adminToken}
		}})
	add("GET /v1/openapi.json", 200, "", "document", func(*docFixture) docReq { return docReq{method: "GET", path: "/v1/openapi.json"} })
	add("GET /v1/heartbeat.schema.json", 200, "", "schema", func(*docFixture) docReq {
		return docReq{method: "GET", path: "/v1/heartbeat.schema.json"}
	})

	// Dashboard pages and assets.
	add("GET /{$}", 200, "", "claimed tickets", func(f *docFixture) docReq {
		f.claimed()
		return docReq{method: "GET", path: "/", token: adminToken}
	})
	add("GET /{$}", 200, "", "filtered", get("/?verdict=active&host=h1&limit=5"))
	for _, q := range []string{"verdict=nope", "limit=0", "limit=501", "cursor=x", "host=" + long} {
		add("GET /{$}", 400, "invalid", q, get("/?"+q))
	}
	add("GET /tickets/{id}", 200, "", "timeline", func(f *docFixture) docReq {
		id, _, _ := f.released()
		return docReq{method: "GET", path: "/tickets/" + id, token: adminToken}
	})
	add("GET /tickets/{id}", 400, "invalid", "bad id", get("/tickets/-x"))
	add("GET /tickets/{id}", 400, "invalid", "bad after", get("/tickets/D-1?after=x"))
	add("GET /tickets/{id}", 404, "not_found", "unknown", get("/tickets/NOPE-404"))
	add("GET /tickets/{id}/timeline", 200, "", "lease timeline", func(f *docFixture) docReq {
		id, _, _ := f.released()
		return docReq{method: "GET", path: "/tickets/" + id + "/timeline", token: adminToken}
	})
	add("GET /tickets/{id}/timeline", 400, "invalid", "bad id", get("/tickets/-x/timeline"))
	add("GET /tickets/{id}/timeline", 404, "not_found", "unknown", get("/tickets/NOPE-404/timeline"))
	add("GET /hosts", 200, "", "hosts", get("/hosts?window=1h&limit=1"))
	add("GET /hosts", 400, "invalid", "window", get("/hosts?window=x"))
	add("GET /hosts", 400, "invalid", "limit", get("/hosts?limit=0"))
	add("GET /charts", 200, "", "charts", get("/charts"))
	// The dashboard's actions: a confirmation page, its form.
	formPost := func(path, body string, header map[string]string) docReq {
		return docReq{method: "POST", path: path, token: adminToken, contentType: "application/x-www-form-urlencoded", body: body, header: header}
	}
	pageAccept := map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
	withSession := func(f *docFixture) map[string]string {
		return map[string]string{"Accept": pageAccept["Accept"], "Cookie": f.session()}
	}
	for _, name := range []string{"release", "cancel", "reopen"} {
		get, post := "GET /tickets/{id}/"+name, "POST /tickets/{id}/"+name
		p := func(id string) string { return "/tickets/" + id + "/" + name }
		// A ticket the action applies to, and one it does not.
		fits := func(f *docFixture) string {
			switch name {
			case "reopen":
				id := f.create()
				if _, err := f.svc.Cancel(context.Background(), id, ""); err != nil {
					f.t.Fatal(err)
				}
				return id
			default:
				id, _, _ := f.claimed()
				return id
			}
		}
		misfit := func(f *docFixture) string {
			if name == "reopen" {
				return f.create()
			}
			id := f.create()
			if _, err := f.svc.Cancel(context.Background(), id, ""); err != nil {
				f.t.Fatal(err)
			}
			return id
		}
		add(get, 200, "", "an admin token", func(f *docFixture) docReq {
			return docReq{method: "GET", path: p(fits(f)), token: adminToken}
		})
		add(get, 200, "", "a signed-in admin", func(f *docFixture) docReq {
			return docReq{method: "GET", path: p(fits(f)), header: withSession(f)}
		})
		add(get, 303, "", "browser without a session", func(f *docFixture) docReq {
			return docReq{method: "GET", path: p(fits(f)), header: pageAccept}
		})
		add(get, 400, "invalid", "bad id", func(f *docFixture) docReq {
			return docReq{method: "GET", path: p("-x"), header: withSession(f)}
		})
		add(get, 404, "not_found", "unknown", func(f *docFixture) docReq {
			return docReq{method: "GET", path: p("NOPE-404"), header: withSession(f)}
		})
		add(get, 409, "conflict", "the state does not allow it", func(f *docFixture) docReq {
			return docReq{method: "GET", path: p(misfit(f)), header: withSession(f)}
		})
		add(post, 303, "", "done", func(f *docFixture) docReq {
			return formPost(p(fits(f)), "reason=from+the+page", nil)
		})
		add(post, 400, "invalid", "reason too long", func(f *docFixture) docReq {
			return formPost(p(fits(f)), url.Values{"reason": {long}}.Encode(), nil)
		})
		add(post, 403, "forbidden", "a session's form without its token", func(f *docFixture) docReq {
			r := formPost(p(fits(f)), "reason=x", map[string]string{"Cookie": f.session()})
			r.token = ""
			return r
		})
		add(post, 404, "not_found", "unknown", func(f *docFixture) docReq { return formPost(p("NOPE-404"), "", nil) })
		if name == "release" {
			add(post, 409, "stale_epoch", "the lease the page showed was claimed again", func(f *docFixture) docReq {
				id, e, sec := f.claimed()
				if _, err := f.svc.Release(agentCtx(agentToken, sec, false), id, e, ""); err != nil {
					f.t.Fatal(err)
				}
				if _, err := f.svc.Claim(agentCtx(agentToken, "", true), id, warp.ClaimRequest{Agent: "O", Host: "h1"}); err != nil {
					f.t.Fatal(err)
				}
				return formPost(p(id), "epoch="+strconv.FormatInt(e, 10), nil)
			})
			add(post, 400, "invalid", "bad epoch", func(f *docFixture) docReq { return formPost(p(fits(f)), "epoch=x", nil) })
			add(post, 410, "lease_ended", "never claimed", func(f *docFixture) docReq { return formPost(p(f.create()), "", nil) })
		} else {
			add(post, 409, "conflict", "the state does not allow it", func(f *docFixture) docReq { return formPost(p(misfit(f)), "", nil) })
		}
		add(post, 413, "body_too_large", "64 KiB", func(f *docFixture) docReq { return formPost(p(fits(f)), "reason="+big, nil) })
	}

	add("GET /assets/", 200, "", "style", func(*docFixture) docReq { return docReq{method: "GET", path: "/assets/style.css"} })
	add("GET /assets/", 200, "", "script", func(*docFixture) docReq { return docReq{method: "GET", path: "/assets/live.js"} })
	add("GET /assets/", 404, "", "no such asset", func(*docFixture) docReq { return docReq{method: "GET", path: "/assets/nope.css"} })

	// A browser without a session is sent to the sign-in form; with one it
	// sees the pages.
	browser := map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
	for _, pg := range []struct{ route, path string }{
		{"GET /{$}", "/"}, {"GET /tickets/{id}", "/tickets/D-1"}, {"GET /tickets/{id}/timeline", "/tickets/D-1/timeline"},
		{"GET /hosts", "/hosts"}, {"GET /charts", "/charts"}, {"GET /metrics", "/metrics"},
	} {
		add(pg.route, 303, "", "browser without a session", func(*docFixture) docReq {
			return docReq{method: "GET", path: pg.path + "?token=" + adminToken, header: browser}
		})
	}
	add("GET /{$}", 200, "", "signed-in browser", func(f *docFixture) docReq {
		return docReq{method: "GET", path: "/", header: map[string]string{"Accept": browser["Accept"], "Cookie": f.session()}}
	})

	// Sign-in and sign-out.
	form := func(token string) string { return url.Values{"token": {token}, "next": {"/hosts"}}.Encode() }
	signIn := func(token string, header map[string]string) func(*docFixture) docReq {
		return func(*docFixture) docReq {
			return docReq{method: "POST", path: "/signin", contentType: "application/x-www-form-urlencoded", body: form(token), header: header}
		}
	}
	add("POST /signin", 303, "", "admin token", signIn(adminToken, nil))
	add("POST /signin", 400, "invalid", "no token", signIn("", nil))
	add("POST /signin", 401, "unauthorized", "unknown token", signIn("not-a-token", nil))
	add("POST /signin", 403, "forbidden", "agent token", signIn(agentToken, nil))
	add("POST /signin", 403, "forbidden", "cross-origin", signIn(adminToken, map[string]string{"Sec-Fetch-Site": "cross-site"}))
	add("GET /signin", 200, "", "form", func(*docFixture) docReq {
		return docReq{method: "GET", path: "/signin?next=%2Fhosts", header: browser}
	})
	add("GET /signin", 303, "", "signed in already", func(f *docFixture) docReq {
		return docReq{method: "GET", path: "/signin?next=%2Fhosts", header: map[string]string{"Cookie": f.session()}}
	})
	add("POST /signout", 303, "", "signed in", func(f *docFixture) docReq {
		return docReq{method: "POST", path: "/signout", header: map[string]string{"Cookie": f.session()}}
	})
	add("POST /signout", 403, "forbidden", "cross-origin", func(f *docFixture) docReq {
		return docReq{method: "POST", path: "/signout", header: map[string]string{"Cookie": f.session(), "Origin": "https://evil.example"}}
	})
	return cs
}

// docCoverage records what the requests produced, per route.
type docCoverage struct {
	statuses map[string]map[int]bool
	codes    map[string]map[int]map[string]bool
}

func (c *docCoverage) add(route string, status int, code string) {
	if c.statuses[route] == nil {
		c.statuses[route] = map[int]bool{}
		c.codes[route] = map[int]map[string]bool{}
	}
	c.statuses[route][status] = true
	if c.codes[route][status] == nil {
		c.codes[route][status] = map[string]bool{}
	}
	if code != "" {
		c.codes[route][status][code] = true
	}
}

var (
	pageHeading = regexp.MustCompile(`<h1>(\d+) · ([a-z_]+)</h1>`)
	// signInError is the message of the sign-in form shown again.
	signInError = regexp.MustCompile(`id="signin-error"[^>]* data-status="(\d+)" data-code="([a-z_]+)"`)
	// actionError is what the confirmation page of an action says went
	// wrong, or why it offers no form.
	actionError = regexp.MustCompile(`id="action-(?:error|refused)"[^>]* data-status="(\d+)" data-code="([a-z_]+)"`)
)

// expect checks an answer against the document: the status is want and
// documented for op, its required headers are there, its content type is
// documented, a JSON body fits the documented schema, and an error's code
// (JSON, or the heading of an HTML error page) is wantCode (when given) and
// one of the response's x-warp-error-codes.
func expect(t *testing.T, s *schemaSet, cov *docCoverage, op docOp, want int, wantCode string, r docResp) {
	t.Helper()
	if r.status != want {
		t.Errorf("status %d, want %d; answer %.300s", r.status, want, r.body)
		return
	}
	resp, ok := s.responses(op)[strconv.Itoa(want)]
	if !ok {
		t.Errorf("%s answers %d, which openapi.json does not list", op.route, want)
		return
	}
	headers, _ := resp["headers"].(map[string]any)
	for name, h := range headers {
		if req, _ := s.deref(h)["required"].(bool); req && r.header.Get(name) == "" {
			t.Errorf("%d without the required header %s", want, name)
		}
	}
	content, _ := resp["content"].(map[string]any)
	mt := mediaType(r.header.Get("Content-Type"))
	if len(content) == 0 {
		if len(r.body) > 0 {
			t.Errorf("%d has a body (%s) but openapi.json documents none", want, mt)
			return
		}
		cov.add(op.route, want, "")
		return
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		t.Errorf("%d answered %s, openapi.json documents %v", want, mt, keysOf(content))
		return
	}
	code := ""
	switch {
	case strings.HasSuffix(mt, "json"):
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Errorf("%s answer does not parse: %v", mt, err)
			return
		}
		var errs []string
		s.check("openapi.json", media["schema"], v, "$", &errs)
		for _, e := range errs {
			t.Errorf("answer does not fit its schema: %s\n%.500s", e, r.body)
		}
		if want >= 400 {
			var eb httpapi.ErrorBody
			_ = json.Unmarshal(r.body, &eb)
			code = eb.Error.Code
		}
	case mt == "text/html" && want >= 400:
		m := pageHeading.FindStringSubmatch(string(r.body))
		if m == nil {
			m = signInError.FindStringSubmatch(string(r.body))
		}
		if m == nil {
			m = actionError.FindStringSubmatch(string(r.body))
		}
		if m == nil || m[1] != strconv.Itoa(want) {
			t.Errorf("error page without the heading \"%d · code\": %.300s", want, r.body)
			return
		}
		code = m[2]
	}
	if code != "" {
		if wantCode != "" && code != wantCode {
			t.Errorf("error code %s, want %s; answer %.300s", code, wantCode, r.body)
		}
		listed := errorCodesOf(resp)
		if !contains(listed, code) {
			t.Errorf("%d %s is not among the documented codes %v", want, code, listed)
		}
	} else if wantCode != "" && want >= 400 {
		t.Errorf("no error code in the answer, want %s: %.300s", wantCode, r.body)
	}
	cov.add(op.route, want, code)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// withQuery adds key=value to the query of p.
func withQuery(p, key, value string) string {
	u, _ := url.Parse(p)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// limitedServer serves f's handler behind httpapi.LimitListener with one
// connection already held open, so that the next one is refused.
func (f *docFixture) limitedServer(total, perClient int) string {
	f.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(f.api)
	srv.Listener.Close()
	srv.Listener = httpapi.LimitListener(ln, total, perClient)
	srv.Start()
	f.t.Cleanup(srv.Close)
	hold, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { hold.Close() })
	return ln.Addr().String()
}

// sendRaw sends r on a new connection to addr and reads the answer.
func sendRaw(t *testing.T, addr string, r docReq) docResp {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req := r.http("http://" + addr)
	_ = req.Write(c) // the listener may answer and close before reading it
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return docResp{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestOpenAPIStatuses sends the status table and, for every operation, the
// requests every route of its kind can get wrong, to a fully assembled
// server, and checks each answer against openapi.json. In the end every
// documented status and error code of every operation must have been
// produced.
func TestOpenAPIStatuses(t *testing.T) {
	oa, s := docSet(t)
	ops := docOps(t, oa)
	byRoute := map[string]docOp{}
	for _, op := range ops {
		byRoute[op.route] = op
	}
	cov := &docCoverage{statuses: map[string]map[int]bool{}, codes: map[string]map[int]map[string]bool{}}
	f := newDocFixture(t)

	// run sends one request and checks it; routed: the router must match
	// the operation's pattern (not so for ?token= and the listener).
	run := func(t *testing.T, fx *docFixture, op docOp, want int, code string, r docReq, routed bool) []byte {
		t.Helper()
		fx.drainRoutes()
		resp := fx.send(r)
		expect(t, s, cov, op, want, code, resp)
		if routed {
			if got := fx.routeOf(); got != op.route {
				t.Errorf("%s %s reached route %q", r.method, r.path, got)
			}
		}
		return resp.body
	}

	samples := map[string]docCase{}
	for _, c := range docCases() {
		op, ok := byRoute[c.route]
		if !ok {
			t.Errorf("the status table has a case for %s, which openapi.json does not document", c.route)
			continue
		}
		if _, ok := samples[c.route]; !ok && c.status < 400 && c.fault == nil && !c.own {
			samples[c.route] = c
		}
		t.Run(fmt.Sprintf("%s/%d/%s", c.route, c.status, c.name), func(t *testing.T) {
			fx := f
			if c.own {
				fx = newDocFixture(t)
			}
			r := c.req(fx)
			fx.store.set(c.fault)
			defer fx.store.set(nil)
			body := run(t, fx, op, c.status, c.code, r, true)
			if c.check != nil {
				c.check(t, body)
			}
		})
	}

	perClient := f.limitedServer(0, 1)
	total := f.limitedServer(1, 0)
	for _, op := range ops {
		sample, ok := samples[op.route]
		if !ok {
			t.Errorf("%s: no success request in the status table", op.route)
			continue
		}
		resps := s.responses(op)
		t.Run(op.route+"/generic", func(t *testing.T) {
			if op.role != "open" {
				r := sample.req(f)
				r.token = ""
				run(t, f, op, 401, "unauthorized", r, true)
				r.token = "not-a-token"
				run(t, f, op, 401, "unauthorized", r, true)
			}
			if op.role == "admin" {
				r := sample.req(f)
				r.token = agentToken
				run(t, f, op, 403, "forbidden", r, true)
			}
			if _, ok := resps["500"]; ok {
				for _, fault := range []struct {
					err    error
					status int
					code   string
				}{{errDBBroken, 500, "internal"}, {errDBDown, 503, "unavailable"}} {
					r := sample.req(f)
					f.store.set(fault.err)
					run(t, f, op, fault.status, fault.code, r, true)
					f.store.set(nil)
				}
			}
			// The connection limits answer before routing, whatever the request.
			for _, l := range []struct {
				addr   string
				status int
				code   string
			}{{perClient, 429, "too_many_connections"}, {total, 503, "unavailable"}} {
				resp := sendRaw(t, l.addr, sample.req(f))
				expect(t, s, cov, op, l.status, l.code, resp)
				if resp.header.Get("Retry-After") != "1" {
					t.Errorf("%d from the listener without Retry-After: 1", l.status)
				}
			}
		})
	}

	// Every documented status and error code was produced.
	for _, op := range ops {
		for status, resp := range s.responses(op) {
			n, _ := strconv.Atoi(status)
			if !cov.statuses[op.route][n] {
				t.Errorf("%s documents %s, which no request produced", op.route, status)
				continue
			}
			for _, code := range errorCodesOf(resp) {
				if !cov.codes[op.route][n][code] {
					t.Errorf("%s documents %s %s, which no request produced", op.route, status, code)
				}
			}
		}
	}
}
