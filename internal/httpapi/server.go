package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Tokens are the accepted bearer tokens. With none, every call is
	// allowed: the caller must then listen on loopback only (warp serve
	// refuses anything else without --insecure).
	Tokens []Token
	// Logger receives 5xx answers; discarded when nil.
	Logger *slog.Logger
	// Observe, when set, is called once per request after the answer with
	// the route pattern ("POST /v1/heartbeat", "unmatched" when no route
	// matched), the status code and the time the handler took (metrics).
	Observe func(route string, code int, dur time.Duration)
	// OnHeartbeat, when set, is called once per heartbeat request with its
	// outcome (metrics).
	OnHeartbeat func(apiobserve.HeartbeatOutcome)
	// OnChange, when set, is called after every successful write other
	// than a heartbeat (the dashboard's event stream). Keep it short: it
	// runs on the request's goroutine.
	OnChange func(apiobserve.Change)
	// AnyHost, with no tokens, answers requests whatever their Host header
	// names. Without it a tokenless server answers only requests addressed
	// to localhost or a loopback IP: a web page whose domain the attacker
	// re-resolves to 127.0.0.1 (DNS rebinding) names its own host. warp
	// serve sets it with --insecure, whose clients name the server's
	// public address.
	AnyHost bool
	// Sessions keeps the dashboard's sign-ins (the server's own store, so
	// every replica accepts them). With tokens and Sessions, a browser
	// opening a page without a session is sent to the sign-in form
	// (SignInPath); without Sessions it gets the JSON 401.
	Sessions warp.Store
	// SessionTTL is how long a sign-in lasts; DefaultSessionTTL when zero.
	SessionTTL time.Duration
	// SignInPage renders the sign-in form (the dashboard's); a bare form
	// when nil.
	SignInPage SignInPage
	// DatabaseTimeout bounds the database work of one API request: a
	// database that does not answer within it gets the request a 503
	// (DefaultDatabaseTimeout when zero; negative: no bound).
	DatabaseTimeout time.Duration
}

// DefaultDatabaseTimeout bounds the database work of an API request: far
// above what a request costs a database that answers (milliseconds; the
// waits SQLite's busy timeout and a PostgreSQL connection attempt bound,
// 5 s each, fit in it and report their own failure), well within the
// answer's own bound (the server's write timeout, 30 s) and the heartbeat
// loop's (30 s at the default interval). PUT /v1/mode, which rewrites
// every held lease in one transaction, is not bound by it.
const DefaultDatabaseTimeout = warp.DatabaseTimeout

// ReadyTimeout bounds the database ping of GET /readyz: it answers 503
// "the database is not answering" when the ping takes longer, so that the
// probe answers within a second whatever the database does.
const ReadyTimeout = 500 * time.Millisecond

// errNotAnswering is what a request whose database work ran out of time
// (DatabaseTimeout, ReadyTimeout, or the client gone) failed with: the
// database did not answer in time, a 503 like any other unavailability.
var errNotAnswering = warp.Errorf(warp.ErrUnavailable, "the database is not answering")

// notAnswering returns err as errNotAnswering when it is the failure of
// database work whose context ran out (ctx, the request's): an error of
// the context itself, or any error that is no domain answer (500) once
// the context is done (a driver reports an interrupted statement its own
// way).
func notAnswering(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, errNotAnswering) {
		return err
	}
	if _, status := httpkit.ErrorStatus(err); errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		ctx.Err() != nil && status == http.StatusInternalServerError {
		return fmt.Errorf("%w: %w", errNotAnswering, err)
	}
	return err
}

// Server is the warp HTTP API. It implements http.Handler.
type Server struct {
	svc     *warp.Service
	cfg     ServerConfig
	log     *slog.Logger
	mux     *http.ServeMux
	openAll bool // no tokens configured (at the start: SetTokens keeps it)
	// auth is what the tokens decide (authState), replaced whole by
	// SetTokens while requests read it.
	auth atomic.Pointer[authState]
	// csrfKey keys the form token of a server without tokens (no session
	// to derive it from).
	csrfKey []byte
	// sameOrigin refuses the writes a browser sends for another site's
	// page (Sec-Fetch-Site, Origin): a tokenless warp on loopback is
	// otherwise open to any page its operator visits.
	sameOrigin *http.CrossOriginProtection
}

// NewServer returns the API server for svc with every route of the HTTP
// API registered except the dashboard, metrics and event stream, which
// warp serve mounts (internal/warpcli).
func NewServer(svc *warp.Service, cfg ServerConfig) (*Server, error) {
	if svc == nil {
		return nil, errors.New("httpapi: nil service")
	}
	if err := checkTokens(cfg.Tokens); err != nil {
		return nil, err
	}
	if cfg.DatabaseTimeout == 0 {
		cfg.DatabaseTimeout = DefaultDatabaseTimeout
	}
	s := &Server{svc: svc, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), openAll: len(cfg.Tokens) == 0,
		csrfKey: make([]byte, 32), sameOrigin: http.NewCrossOriginProtection()}
	if _, err := rand.Read(s.csrfKey); err != nil {
		return nil, fmt.Errorf("httpapi: form token key: %w", err)
	}
	s.auth.Store(newAuthState(cfg.Tokens))
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	s.handle("POST /v1/tickets", s.createTicket, RoleAdmin)
	s.handle("GET /v1/tickets", s.listTickets, RoleAdmin)
	s.handle("GET /v1/tickets/{id}", s.getTicket, RoleAdmin)
	s.handle("PATCH /v1/tickets/{id}", s.editTicket, RoleAdmin)
	s.handle("POST /v1/tickets/{id}/cancel", s.cancelTicket, RoleAdmin)
	s.handle("POST /v1/tickets/{id}/reopen", s.reopenTicket, RoleAdmin)
	s.handle("GET /v1/tickets/{id}/events", s.ticketEvents, RoleAdmin)
	s.handle("GET /v1/tickets/{id}/leases/{epoch}", s.leaseStatus, RoleAgent) // an agent: its own lease only, checked inside
	s.handle("POST /v1/tickets/{id}/claim", s.claim, RoleAgent)
	s.handle("POST /v1/claims/next", s.claimNext, RoleAgent)
	s.handle("POST /v1/tickets/{id}/release", s.release, RoleAgent) // without epoch: admin, checked inside
	s.handle("POST /v1/tickets/{id}/complete", s.complete, RoleAgent)
	s.handle("POST /v1/tickets/{id}/attempts/{epoch}/snapshot", s.recordSnapshot, RoleAgent)
	s.handle("POST /heartbeat", s.heartbeat, RoleAgent)
	s.handle("POST /v1/heartbeat", s.heartbeat, RoleAgent)
	s.handle("GET /v1/adoption", s.adoption, RoleAdmin)
	s.handle("GET /v1/hosts", s.hosts, RoleAdmin)
	s.handle("GET /v1/mode", s.getMode, RoleAdmin)
	s.handle("PUT /v1/mode", s.setMode, RoleAdmin)
	s.handle("GET /v1/mode/history", s.modeHistory, RoleAdmin)
	s.handle("GET /healthz", s.healthz, RoleOpen)
	s.handle("GET /readyz", s.readyz, RoleOpen)
	s.signInRoutes() // GET and POST /signin, POST /signout (session.go)
	s.docRoutes()    // GET /v1/openapi.json and /v1/heartbeat.schema.json (openapi.go)
}

// SetTokens replaces the accepted tokens (warp serve re-reads its token
// file on SIGHUP): requests that arrive after it see the new set, and a
// dashboard session whose token is gone, or no longer admin or viewer,
// opens nothing from its next request. A server that started without
// tokens stays open (it listens on loopback only), and one that started
// with tokens never opens up: an empty set is refused. On error the
// tokens in force are kept.
func (s *Server) SetTokens(tokens []Token) error {
	if s.openAll {
		return errors.New("this server started without tokens (open, on loopback only): restart it with --token-file to use tokens")
	}
	if len(tokens) == 0 {
		return errors.New("no tokens: a server that started with tokens keeps at least one (it would be open to anyone)")
	}
	if err := checkTokens(tokens); err != nil {
		return err
	}
	s.auth.Store(newAuthState(tokens))
	return nil
}

// apiHandler is a route's handler: it writes a success answer itself or
// returns the error to answer with.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

// unboundedRoutes are the API routes whose database work DatabaseTimeout
// does not bound: PUT /v1/mode rewrites every held lease in one
// transaction, which a large fleet's takes longer. Only the client bounds
// them.
var unboundedRoutes = map[string]bool{"PUT /v1/mode": true}

// handle registers an API route, its database work bound by
// DatabaseTimeout (unless unboundedRoutes names it).
func (s *Server) handle(pattern string, h apiHandler, role Role) {
	bound := s.cfg.DatabaseTimeout
	if unboundedRoutes[pattern] {
		bound = 0
	}
	s.Mount(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bound > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), bound)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if err := h(w, r); err != nil {
			s.WriteError(w, r, err)
		}
	}), role)
}

// Mount registers h for pattern (http.ServeMux syntax, "GET /metrics") behind
// the server's middleware: the body limit, authorisation to at least role,
// and the Observe observer under the pattern's name. warp serve mounts the
// dashboard, the metrics and the event stream with it. Like
// http.ServeMux.Handle it panics on an invalid or conflicting pattern. It
// is safe to call while serving.
func (s *Server) Mount(pattern string, h http.Handler, role Role) {
	s.mux.Handle(pattern, s.wrap(pattern, h, role, false))
}

// MountAction registers h for pattern, a dashboard action (a form a
// signed-in admin posts: release, cancel, reopen), behind the middleware
// of Mount with the admin role, and one thing more: a session may post
// to it, with the form token of the session (httpkit.CSRFField) and from
// this server's own pages (the cross-origin guard). The request carries
// the operator (httpkit.OperatorFrom, warp.Caller.Operator). A bearer
// token posts without a form token: it is no cookie a page could ride.
func (s *Server) MountAction(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.wrap(pattern, h, RoleAdmin, true))
}

func (s *Server) wrap(route string, h http.Handler, role Role, action bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if s.cfg.Observe != nil {
				s.cfg.Observe(route, rec.status(), time.Since(start))
			}
		}()
		a, err := s.authorize(r, role, action)
		if err == nil {
			err = s.checkBrowser(r)
		}
		r.Body = http.MaxBytesReader(rec, r.Body, MaxBodyBytes)
		if err == nil && action && a.op != nil && r.Method == http.MethodPost {
			err = checkFormToken(r, a.op.CSRF)
		}
		if err != nil {
			if errors.Is(err, httpkit.ErrUnauthorized) && s.wantsSignIn(r) {
				redirectToSignIn(rec, r)
				return
			}
			s.WriteError(rec, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), roleKey{}, a.role)
		secret := r.Header.Get(HeaderLeaseSecret)
		c := warp.Caller{
			// Only an admin (or a server without tokens, where every
			// caller is) skips the holder checks: an anonymous caller of
			// an open route is held to them like an agent.
			Agent: a.role != RoleAdmin, Token: a.tokenID,
			LeaseSecret: secret, WantsSecret: secret == LeaseSecretNew,
		}
		if a.op != nil {
			// The operator names the writes of the dashboard's actions.
			if action {
				c.Operator = a.op.Name
			}
			ctx = httpkit.WithOperator(ctx, *a.op)
		}
		r = r.WithContext(warp.WithCaller(ctx, c))
		h.ServeHTTP(rec, r)
	})
}

// checkFormToken refuses a posted form without the session's form token:
// another site's page cannot read it, so it cannot post in the operator's
// name even where the cross-origin guard has nothing to go on.
func checkFormToken(r *http.Request, want string) error {
	if err := r.ParseForm(); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return fmt.Errorf("%w: the form is over %d bytes", httpkit.ErrBodyTooLarge, mbe.Limit)
		}
		return fmt.Errorf("%w: the form does not parse: %v", warp.ErrInvalid, err)
	}
	got := r.PostForm.Get(httpkit.CSRFField)
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return fmt.Errorf("%w: the form's token does not match this session (it was signed out, or the page is stale): reload the page and try again", httpkit.ErrForbidden)
	}
	return nil
}

// checkBrowser refuses what only a browser misled by another site sends: a
// cross-origin write, and (without tokens) a request addressed to a name
// that is not loopback.
func (s *Server) checkBrowser(r *http.Request) error {
	if err := s.sameOrigin.Check(r); err != nil {
		return fmt.Errorf("%w: a cross-origin request from a browser (Origin %q): warp takes writes from its own pages and from clients, not from other sites",
			httpkit.ErrForbidden, r.Header.Get("Origin"))
	}
	if s.openAll && !s.cfg.AnyHost && !loopbackHost(r.Host) {
		return fmt.Errorf("%w: this warp has no tokens, so it answers only requests addressed to localhost or a loopback IP, not to Host %q "+
			"(a guard against DNS rebinding): use http://127.0.0.1:PORT, or configure --token-file", httpkit.ErrForbidden, r.Host)
	}
	return nil
}

// loopbackHost reports whether hostport (a Host header, port optional)
// names this machine's loopback: localhost, a name under .localhost
// (browsers resolve those to loopback themselves), or a loopback IP.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorized is who authorize let in: the role, the token's identity
// (warp.TokenID, which binds the leases it claims; empty without one) and,
// for a dashboard session or a server without tokens, the operator.
type authorized struct {
	role    Role
	tokenID string
	op      *httpkit.Operator
}

// authorize returns who the caller is, or httpkit.ErrUnauthorized /
// httpkit.ErrForbidden. A session authorises reads, and the posts of an
// action route (action) when it is an admin's; a viewer, by token or
// session, reads what an admin reads and writes nothing.
func (s *Server) authorize(r *http.Request, need Role, action bool) (authorized, error) {
	if s.openAll {
		return authorized{role: RoleAdmin, op: &httpkit.Operator{Name: "local", CSRF: s.openFormToken(), CanAct: true}}, nil
	}
	if need == RoleOpen {
		return authorized{role: RoleOpen}, nil
	}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	auth := r.Header.Get("Authorization")
	if auth == "" {
		// A signed-in browser: its session stands for the token that
		// opened it.
		sess, ok, err := s.session(r, action)
		if err != nil {
			return authorized{}, err
		}
		if !ok {
			return authorized{}, fmt.Errorf("%w: send Authorization: Bearer <token> (set WARP_TOKEN)%s", httpkit.ErrUnauthorized, s.signInHint())
		}
		if sess.role == RoleViewer && !read {
			return authorized{}, fmt.Errorf("%w: this dashboard session is a viewer's: it reads, and acts on nothing (sign in with an admin token to act)", httpkit.ErrForbidden)
		}
		return authorized{role: sess.role, tokenID: sess.tokenID, op: &httpkit.Operator{Name: sess.name, CSRF: formToken(sess.id),
			CanAct: sess.role == RoleAdmin}}, nil
	}
	scheme, secret, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return authorized{}, fmt.Errorf("%w: the Authorization header must be \"Bearer <token>\"", httpkit.ErrUnauthorized)
	}
	secret = strings.TrimSpace(secret)
	role, id, found := s.auth.Load().tokens.lookup(secret)
	switch {
	case !found:
		return authorized{}, fmt.Errorf("%w: unknown token", httpkit.ErrUnauthorized)
	case role == RoleViewer && (need != RoleAdmin || !read):
		return authorized{role: role}, fmt.Errorf("%w: this call needs the %s role; a viewer token reads only", httpkit.ErrForbidden, need)
	case role != RoleViewer && role < need:
		return authorized{role: role}, fmt.Errorf("%w: this call needs the %s role, the token has %s", httpkit.ErrForbidden, need, role)
	}
	return authorized{role: role, tokenID: id}, nil
}

// formToken is the form token of the session whose id (the cookie's
// value) is id: a hash of the id under a label of its own, so every
// replica derives the same one, and the stored hash of the id (TokenID)
// does not give it away.
func formToken(id string) string {
	sum := sha256.Sum256([]byte("warp-form-token\x00" + id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// openFormToken is the form token of a server without tokens: keyed by
// this process's random key (such a server is one process, on loopback).
func (s *Server) openFormToken() string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("warp-form-token-open"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signInHint points a caller without a token at the sign-in form, when
// the server has one.
func (s *Server) signInHint() string {
	if !s.sessionsOn() {
		return ""
	}
	return ", or sign in with a browser at " + SignInPath
}

// ServeHTTP routes r. Unknown paths and wrong methods answer in the JSON
// error format like everything else.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	// Let the mux decide (404, 405 with Allow, or a path-cleaning
	// redirect) into a buffer, then answer its decision in our format.
	buf := &bufferedWriter{header: http.Header{}}
	s.mux.ServeHTTP(buf, r)
	code := buf.code
	switch code {
	case http.StatusNotFound:
		s.WriteError(w, r, warp.Errorf(warp.ErrNotFound, "no route %s %s: the API is described at GET /v1/openapi.json", r.Method, r.URL.Path))
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", buf.header.Get("Allow"))
		s.WriteError(w, r, fmt.Errorf("%w: %s does not take %s (allowed: %s)", httpkit.ErrMethodNotAllowed, r.URL.Path, r.Method, buf.header.Get("Allow")))
	default:
		for k, v := range buf.header {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
		_, _ = w.Write(buf.body)
	}
	if s.cfg.Observe != nil {
		s.cfg.Observe("unmatched", code, time.Since(start))
	}
}

// WriteError answers err in the wire format, with the code and status of
// httpkit.ErrorStatus. Database connection failures count as warp.ErrUnavailable
// (503), and so does database work that ran out of the request's time
// (notAnswering); a 503 carries Retry-After: 1. 5xx answers are logged
// (unless the client has gone), with the internal detail kept out of the
// answer; 4xx are not. Mounted handlers use it too.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	err = notAnswering(r.Context(), err)
	if isUnavailable(err) && !errors.Is(err, warp.ErrUnavailable) {
		err = fmt.Errorf("%w: %w", warp.ErrUnavailable, err)
	}
	code, status := httpkit.ErrorStatus(err)
	msg := warp.ErrorMessage(err)
	switch {
	case status == http.StatusServiceUnavailable && errors.Is(err, errNotAnswering):
		msg = "the database is not answering; retry later"
	case status == http.StatusServiceUnavailable:
		msg = "the database is unavailable; retry later"
	case status >= 500:
		msg = "internal error; the server log has the detail"
	}
	if status >= 500 && !errors.Is(r.Context().Err(), context.Canceled) {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="warp"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	var detail map[string]string
	var we *warp.Error
	if status < 500 && errors.As(err, &we) {
		detail = we.Detail
	}
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg, Detail: detail}})
}

// isUnavailable reports whether err is a failure to reach the database
// rather than an answer from it.
func isUnavailable(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := answers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			answers.Put(buf)
		}
	}()
	// Encode writes what Marshal would, and the newline.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		http.Error(w, `{"error":{"code":"internal","message":"encode answer"}}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// answers holds the buffers answers are encoded into (a heartbeat's is
// written with every heartbeat).
var answers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// The header values of every JSON answer, shared: set as they are, never
// changed.
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// statusRecorder remembers the status a handler wrote. It unwraps to the
// underlying writer so http.ResponseController (flushing for the event
// stream) still works.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets handlers that type-assert http.Flusher stream through the recorder.
func (r *statusRecorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// bufferedWriter captures the mux's own 404/405/redirect answers.
type bufferedWriter struct {
	header http.Header
	code   int
	body   []byte
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	b.body = append(b.body, p...)
	return len(p), nil
}
