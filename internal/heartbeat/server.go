package heartbeat

import (
	"net/url"
	"strings"

	"github.com/gyrum-labs/warp/client"
)

// SameServer reports whether two warp URLs name the same server: the same
// scheme, host and port (a missing port is the scheme's), and path but for
// a trailing slash; "" is client.DefaultURL. gyrum sends WARP_TOKEN only to
// the server WARP_URL names: a lease.json is a file in a worktree, which a
// repository can commit, and its warp_url must not draw the token to a
// server of the repository's choosing.
func SameServer(a, b string) bool {
	ka, oka := serverKey(a)
	kb, okb := serverKey(b)
	return oka && okb && ka == kb
}

func serverKey(s string) (string, bool) {
	if s == "" {
		s = client.DefaultURL
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + host + ":" + port + strings.TrimRight(u.EscapedPath(), "/"), true
}
