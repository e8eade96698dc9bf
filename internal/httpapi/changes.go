package httpapi

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/gyrum-labs/warp/internal/apihook"
	"github.com/gyrum-labs/warp/internal/httpkit"
	"github.com/gyrum-labs/warp/internal/warp"
)

// changed tells ServerConfig.OnChange about a successful write.
func (s *Server) changed(c apihook.Change) {
	if s.cfg.OnChange != nil {
		s.cfg.OnChange(c)
	}
}

// TokenCookie is the cookie a browser holds its token in. Browsers cannot
// send a bearer header when following a link, so the dashboard pages take
// the token once as ?token= (see exchangeToken) and the cookie afterwards.
// The cookie is HttpOnly and SameSite=Strict, and it authorises only GET
// and HEAD requests: it can read pages, never write.
const TokenCookie = "warp_token"

// cookieAuthorization returns the Authorization value that the token
// cookie stands for, "" when the request carries none or is not a read.
func cookieAuthorization(r *http.Request) string {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return ""
	}
	c, err := r.Cookie(TokenCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	secret, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(secret) == 0 {
		return ""
	}
	return "Bearer " + string(secret)
}

// exchangeToken handles a browser's first visit with ?token=: on a GET of
// a page (not the JSON API) with a known token it sets the token cookie
// and redirects to the same URL without the token, so the secret leaves
// the address bar and the history. An unknown token gets 401 and no
// cookie. It reports whether it answered the request.
func (s *Server) exchangeToken(w http.ResponseWriter, r *http.Request) bool {
	if s.openAll || (r.Method != http.MethodGet && r.Method != http.MethodHead) ||
		strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/heartbeat" {
		return false
	}
	q := r.URL.Query()
	token := q.Get("token")
	if !q.Has("token") {
		return false
	}
	role, _, ok := s.tokens.lookup(token)
	if !ok || token == "" {
		s.WriteError(w, r, warp.Errorf(httpkit.ErrUnauthorized, "unknown token in ?token="))
		return true
	}
	if role != RoleAdmin {
		// Pages are admin reads: an agent token would buy a cookie that
		// opens nothing.
		s.WriteError(w, r, warp.Errorf(httpkit.ErrForbidden, "?token= takes an admin token: the dashboard is for operators"))
		return true
	}
	http.SetCookie(w, &http.Cookie{
		Name: TokenCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(token)), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r),
	})
	q.Del("token")
	// Same origin only: "//evil.example/" is a scheme-relative URL to a
	// browser, so the path keeps exactly one leading slash.
	u := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/\\"), RawQuery: q.Encode()}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
	return true
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
