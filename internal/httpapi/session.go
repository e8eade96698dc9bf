package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// changed tells ServerConfig.OnChange about a successful write.
func (s *Server) changed(c apiobserve.Change) {
	if s.cfg.OnChange != nil {
		s.cfg.OnChange(c)
	}
}

// Dashboard sign-in. A browser cannot send a bearer header when it follows
// a link, so an operator signs in once with an admin token on the sign-in
// page and holds a session from then on: a random id in the SessionCookie,
// whose SHA-256 alone the store keeps (warp.Session). The cookie never
// holds a token. Sessions live in the database, so every replica accepts
// them and a restart keeps them; they end at their expiry, at sign-out, or
// when the token that opened them is no longer configured.
const (
	// SessionCookie holds a browser's session id: HttpOnly,
	// SameSite=Strict, Path=/, Secure over HTTPS, for SessionTTL. It
	// authorises GET and HEAD requests, and an admin's the posts of the
	// dashboard's action routes (MountAction) with the session's form
	// token: never the JSON API's writes.
	SessionCookie = "warp_session"
	// SignInPath serves the sign-in form (GET) and takes it (POST).
	SignInPath = "/signin"
	// SignOutPath ends the session (POST).
	SignOutPath = "/signout"
	// DefaultSessionTTL is how long a sign-in lasts (--session-ttl).
	DefaultSessionTTL = 12 * time.Hour
	// sessionIDBytes is the entropy of a session id.
	sessionIDBytes = 32
	// pruneSessionsBatch bounds the expired sessions a sign-in removes: the
	// table holds the live sessions and fewer expired ones than that
	// between two sign-ins.
	pruneSessionsBatch = 100
)

// SignInPage renders the sign-in form with status: next is the local path
// to go to once signed in (the form sends it back), problem what went
// wrong and code its error code of the error table ("" on a first visit).
// The dashboard provides it.
type SignInPage func(w http.ResponseWriter, r *http.Request, status int, code, next, problem string)

// signInRoutes registers the sign-in and sign-out routes. They are open
// (the form is how a token arrives) and behind the browser guard: a POST
// from another site's page is refused like any cross-origin write.
func (s *Server) signInRoutes() {
	s.Mount("GET "+SignInPath, http.HandlerFunc(s.signInForm), RoleOpen)
	s.Mount("POST "+SignInPath, http.HandlerFunc(s.signIn), RoleOpen)
	s.Mount("POST "+SignOutPath, http.HandlerFunc(s.signOut), RoleOpen)
}

// sessionsOn reports whether browsers sign in: the server has tokens and a
// store to keep sessions in.
func (s *Server) sessionsOn() bool { return !s.openAll && s.cfg.Sessions != nil }

func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) {
	next := localNext(r.URL.Query().Get("next"))
	if !s.sessionsOn() {
		s.noSignIn(w, r, next)
		return
	}
	if _, ok, _ := s.session(r, false); ok {
		seeOther(w, r, next)
		return
	}
	s.renderSignIn(w, r, http.StatusOK, "", next, "")
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.signInFailed(w, r, "/", fmt.Errorf("%w: the sign-in form does not parse: %v", warp.ErrInvalid, err))
		return
	}
	next := localNext(r.PostForm.Get("next"))
	if !s.sessionsOn() {
		s.noSignIn(w, r, next)
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	name := strings.TrimSpace(r.PostForm.Get("name"))
	role, tokenID, found := s.auth.Load().tokens.lookup(token)
	switch {
	case token == "":
		s.signInFailed(w, r, next, fmt.Errorf("%w: paste an admin token (a role admin line of --token-file, or WARP_TOKEN), or a viewer token to read only", warp.ErrInvalid))
		return
	case !found:
		s.signInFailed(w, r, next, fmt.Errorf("%w: unknown token: paste an admin token of this server (--token-file or WARP_TOKEN)", httpkit.ErrUnauthorized))
		return
	case role != RoleAdmin && role != RoleViewer:
		s.signInFailed(w, r, next, fmt.Errorf("%w: that is an agent token; the dashboard is for operators: sign in with an admin (or viewer) token", httpkit.ErrForbidden))
		return
	}
	if err := warp.CheckText("name", name, MaxSessionName); err != nil {
		s.signInFailed(w, r, next, err)
		return
	}
	id, err := newSessionID()
	if err != nil {
		s.signInFailed(w, r, next, err)
		return
	}
	now := s.svc.Now()
	sess := warp.Session{IDHash: warp.TokenID(id), TokenID: tokenID, Name: name, CreatedAt: now, ExpiresAt: now.Add(s.sessionTTL())}
	err = s.cfg.Sessions.Update(r.Context(), func(tx warp.Tx) error {
		if _, err := tx.PruneSessions(r.Context(), now, pruneSessionsBatch); err != nil {
			return err
		}
		return tx.InsertSession(r.Context(), sess)
	})
	if err != nil {
		s.signInFailed(w, r, next, fmt.Errorf("store the session: %w", err))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/", MaxAge: int(s.sessionTTL() / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r),
	})
	seeOther(w, r, next)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if !s.sessionsOn() {
		s.noSignIn(w, r, "/")
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		err := s.cfg.Sessions.Update(r.Context(), func(tx warp.Tx) error { return tx.DeleteSession(r.Context(), warp.TokenID(c.Value)) })
		if err != nil {
			s.signInFailed(w, r, "/", fmt.Errorf("delete the session: %w", err))
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r)})
	seeOther(w, r, SignInPath)
}

// noSignIn answers the sign-in routes of a server without tokens (every
// page is open: go there) or without a session store (not found).
func (s *Server) noSignIn(w http.ResponseWriter, r *http.Request, next string) {
	if s.openAll {
		seeOther(w, r, next)
		return
	}
	s.WriteError(w, r, warp.Errorf(warp.ErrNotFound, "this server keeps no sessions: send Authorization: Bearer <token>"))
}

// signInFailed shows the form again with what went wrong, in the status
// of the error table; 5xx are logged and not detailed.
func (s *Server) signInFailed(w http.ResponseWriter, r *http.Request, next string, err error) {
	if isUnavailable(err) && !errors.Is(err, warp.ErrUnavailable) {
		err = fmt.Errorf("%w: %w", warp.ErrUnavailable, err)
	}
	code, status := httpkit.ErrorStatus(err)
	msg := warp.ErrorMessage(err)
	switch {
	case status == http.StatusServiceUnavailable:
		msg = "the database is unavailable; retry later"
	case status >= 500:
		msg = "internal error; the server log has the detail"
	}
	if status >= 500 && r.Context().Err() == nil {
		s.log.Error("sign-in failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	s.renderSignIn(w, r, status, code, next, msg)
}

func (s *Server) renderSignIn(w http.ResponseWriter, r *http.Request, status int, code, next, problem string) {
	if s.cfg.SignInPage != nil {
		s.cfg.SignInPage(w, r, status, code, next, problem)
		return
	}
	// Without the dashboard: a bare form, escaped, on the same policy.
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	w.WriteHeader(status)
	fmt.Fprint(w, `<!doctype html><title>warp · sign in</title>`)
	if problem != "" {
		fmt.Fprintf(w, `<p id="signin-error" data-status="%d" data-code="%s">%s</p>`, status, html.EscapeString(code), html.EscapeString(problem))
	}
	fmt.Fprintf(w, `<form method="post" action="%s"><input type="hidden" name="next" value="%s"><input type="password" name="token"><input name="name"><button>sign in</button></form>`,
		SignInPath, html.EscapeString(next))
}

func (s *Server) sessionTTL() time.Duration {
	if s.cfg.SessionTTL > 0 {
		return s.cfg.SessionTTL
	}
	return DefaultSessionTTL
}

// errSessionEnded is the answer to a session cookie that opens nothing.
var errSessionEnded = fmt.Errorf("%w: the dashboard session expired or was signed out: sign in again at %s", httpkit.ErrUnauthorized, SignInPath)

// sessionInfo is a live session: its id (the cookie's value), the token
// that opened it, that token's role now, and the session's name.
type sessionInfo struct {
	id, tokenID, name string
	role              Role
}

// session returns the request's session: ok is false when it carries no
// session cookie (err nil) or one that opens nothing (err says why:
// unknown, expired, its token gone, or the store failed). Sessions open
// reads, and with writes the posts of an action route too. An expired
// session is deleted as it is refused.
func (s *Server) session(r *http.Request, writes bool) (sessionInfo, bool, error) {
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	if !s.sessionsOn() || !read && !(writes && r.Method == http.MethodPost) {
		return sessionInfo{}, false, nil
	}
	c, cerr := r.Cookie(SessionCookie)
	if cerr != nil || c.Value == "" {
		return sessionInfo{}, false, nil
	}
	ctx := r.Context()
	hash := warp.TokenID(c.Value)
	var sess warp.Session
	err := s.cfg.Sessions.View(ctx, func(tx warp.Tx) error {
		var err error
		sess, err = tx.Session(ctx, hash)
		return err
	})
	role, known := s.auth.Load().sessionRoles[sess.TokenID]
	switch {
	case errors.Is(err, warp.ErrNotFound):
		return sessionInfo{}, false, errSessionEnded
	case err != nil:
		return sessionInfo{}, false, fmt.Errorf("read the session: %w", err)
	case !s.svc.Now().Before(sess.ExpiresAt):
		s.dropSession(ctx, hash)
		return sessionInfo{}, false, errSessionEnded
	case !known:
		// The token that signed in was removed (or made an agent's).
		s.dropSession(ctx, hash)
		return sessionInfo{}, false, errSessionEnded
	}
	name := sess.Name
	if name == "" {
		name = defaultSessionName(role, sess.TokenID)
	}
	return sessionInfo{id: c.Value, tokenID: sess.TokenID, name: name, role: role}, true, nil
}

// MaxSessionName bounds the name a sign-in gives its session.
const MaxSessionName = 64

// defaultSessionName names a session signed in without a name: its role
// and the start of its token's identity ("admin-1a2b3c4d"), which tells
// the tokens apart and gives none away.
func defaultSessionName(role Role, tokenID string) string {
	if len(tokenID) > 8 {
		tokenID = tokenID[:8]
	}
	return role.String() + "-" + tokenID
}

// dropSession deletes a session that can no longer open anything; a
// failure leaves it to a later sign-in's prune.
func (s *Server) dropSession(ctx context.Context, hash string) {
	err := s.cfg.Sessions.Update(ctx, func(tx warp.Tx) error { return tx.DeleteSession(ctx, hash) })
	if err != nil && ctx.Err() == nil {
		s.log.Warn("delete an ended session", "err", err)
	}
}

// wantsSignIn reports whether an unauthorised request is a browser opening
// a page, which is sent to the sign-in form instead of a JSON 401: a read,
// without an Authorization header, that accepts HTML, outside the JSON API.
func (s *Server) wantsSignIn(r *http.Request) bool {
	return s.sessionsOn() && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		r.Header.Get("Authorization") == "" && strings.Contains(r.Header.Get("Accept"), "text/html") &&
		!strings.HasPrefix(r.URL.Path, "/v1/") && r.URL.Path != "/heartbeat"
}

// redirectToSignIn sends a browser to the sign-in form, which brings it
// back to the page it asked for (without a ?token=, which is not taken).
func redirectToSignIn(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Del("token")
	next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	seeOther(w, r, SignInPath+"?"+url.Values{"next": {localNext(next.String())}}.Encode())
}

// localNext returns next as a path of this server: "/" unless it is one.
// "//evil.example/" is a scheme-relative URL to a browser, and "/\evil"
// one to some, so the path keeps exactly one leading slash; a ?token= is
// dropped and the sign-in pages lead to "/".
func localNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	q := u.Query()
	q.Del("token")
	out := url.URL{Path: "/" + strings.TrimLeft(u.Path, "/\\"), RawQuery: q.Encode()}
	if out.Path == SignInPath || out.Path == SignOutPath {
		return "/"
	}
	return out.String()
}

func seeOther(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// newSessionID returns a random session id, base64url without padding.
func newSessionID() (string, error) {
	b := make([]byte, sessionIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// overHTTPS reports whether the browser reached warp over HTTPS: TLS here,
// or a proxy in front that says so (X-Forwarded-Proto, Forwarded), which
// is the only way warp serve, itself plain HTTP, is served over HTTPS. The
// headers are trusted without knowing the proxy: all they can do is make
// the cookie Secure, which only keeps it off plain-HTTP requests.
func overHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); strings.EqualFold(strings.TrimSpace(p), "https") {
		return true
	}
	first, _, _ := strings.Cut(r.Header.Get("Forwarded"), ",")
	for _, kv := range strings.Split(first, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && strings.EqualFold(k, "proto") && strings.EqualFold(strings.Trim(v, `"`), "https") {
			return true
		}
	}
	return false
}
