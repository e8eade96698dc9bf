// Package rawhttp is a minimal HTTP/1.1 client that does not link net/http.
//
// It exists for small long-lived processes, such as the heartbeat loop that
// runs beside every agent, whose resident memory matters: net/http (with
// its HTTP/2 bundle, MIME, multipart and cookie code and their init-time
// tables) adds about 3 MiB of RSS to a binary that only needs to POST a
// small JSON body every few minutes. The whole answer is buffered in
// memory, so it suits small bodies only.
//
// Supported: http and https URLs (default ports 80/443, IPv6 literal
// hosts); one exchange per TCP connection, sent with "Connection: close";
// request bodies sent with Content-Length; answers framed by
// "Transfer-Encoding: chunked" (extensions and trailers skipped), by
// Content-Length or by the connection closing, and no body for HEAD, 204
// and 304; 1xx interim answers skipped; TLS through Client.TLS (package
// rawtls: crypto/tls), which a plain-http binary leaves out; http://
// proxies, from Client.Proxy or from the environment (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY and their lower-case forms, read once, as net/http
// does), with the absolute-form request target for http:// URLs and a
// CONNECT tunnel for https:// URLs, and Proxy-Authorization: Basic from the
// proxy URL's userinfo; one deadline for the whole exchange, and
// cancellation through the context.
//
// Not supported: keep-alive and connection reuse, HTTP/2, redirects (a 3xx
// answer is returned as is), compression (no Accept-Encoding is sent, and a
// transfer coding other than chunked is an error), streaming bodies,
// protocol upgrades (101 is an error), userinfo in the request URL, https://
// and SOCKS proxies, cookies.
//
// Every error starts with "rawhttp: METHOD URL: " and names the step that
// failed; underlying errors are wrapped, so errors.Is works with
// context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded,
// io.ErrUnexpectedEOF and the net and crypto/tls error types.
package rawhttp

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Defaults for the zero Client fields.
const (
	defaultTimeout = 30 * time.Second
	defaultMaxBody = 16 << 20
)

// userAgent is sent when the request does not set User-Agent.
const userAgent = "warp-rawhttp/1"

// Header is one header field, as sent or as received.
type Header struct{ Key, Value string }

// Request is one HTTP request.
type Request struct {
	// Method is GET, POST, PUT...; empty means GET.
	Method string
	// URL is an absolute http:// or https:// URL. Its path and query are
	// sent as url.URL.RequestURI returns them; a fragment is dropped.
	URL string
	// Header is sent as given, after Host, User-Agent (unless Header sets
	// it) and Content-Length. Keys must be tokens and values must not hold
	// CR, LF or NUL. Host, Content-Length, Transfer-Encoding and Connection
	// are set by the client and may not appear here.
	Header []Header
	// Body is sent with Content-Length when non-nil. POST, PUT and PATCH
	// send "Content-Length: 0" even when it is nil.
	Body []byte
}

// Response is an HTTP answer, read whole.
type Response struct {
	Status int
	// Header holds the fields as received, in order, names as sent.
	Header []Header
	// Body is the answer body; nil when empty.
	Body []byte
}

// Get returns the value of the first field named key, compared without
// regard to case, or "" when there is none.
func (r Response) Get(key string) string {
	for _, h := range r.Header {
		if strings.EqualFold(h.Key, key) {
			return h.Value
		}
	}
	return ""
}

// Client sends requests. Its zero value is ready to use; a Client is safe
// for concurrent use as long as its fields are not changed.
type Client struct {
	// Timeout bounds the whole exchange: dial, proxy CONNECT, TLS
	// handshake, write and read. Zero (or negative) means 30 s.
	// A context deadline that comes earlier wins.
	Timeout time.Duration
	// MaxBody is the largest answer body accepted; a larger one is an
	// error, detected before it is buffered. Zero (or negative) means
	// 16 MiB.
	MaxBody int64
	// TLS secures a connection for https: it runs the client side of a
	// TLS handshake for serverName over conn (already connected to the
	// server, or tunnelled through a proxy) and returns the secured
	// connection. Nil: https URLs are refused before any dial. Package
	// rawtls has one over crypto/tls; it is a field rather than built in
	// so that a binary that speaks plain http never links crypto/tls
	// (another ~1.5 MiB of resident memory).
	TLS func(ctx context.Context, conn net.Conn, serverName string) (net.Conn, error)
	// Proxy returns the proxy for a request URL, nil for none. Nil means
	// the environment's (HTTP_PROXY, HTTPS_PROXY, NO_PROXY and lower-case
	// forms), read once per process. Only http:// proxies are supported.
	Proxy func(*url.URL) (*url.URL, error)
	// Dial opens the TCP connection, to the server or to the proxy. Nil
	// means a net.Dialer. The context carries the exchange's deadline.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// envProxyFunc is the proxy function from the environment, read once like
// net/http's. Tests replace it.
var envProxyFunc = sync.OnceValue(proxyFromEnvironment)

func proxyFromEnvironment() func(*url.URL) (*url.URL, error) {
	return httpproxy.FromEnvironment().ProxyFunc()
}

// Do sends r and reads the answer whole, on a connection of its own.
// Any answer, 3xx, 4xx and 5xx included, is a Response and no error.
func (c *Client) Do(ctx context.Context, r Request) (Response, error) {
	if r.Method == "" {
		r.Method = "GET"
	}
	x := exchange{c: c, ctx: ctx, req: &r}
	resp, err := x.run()
	if err != nil {
		return Response{}, fmt.Errorf("rawhttp: %s %s: %w", r.Method, x.urlForError(), err)
	}
	return resp, nil
}

// exchange is the state of one Do.
type exchange struct {
	c   *Client
	ctx context.Context
	req *Request
	u   *url.URL

	// ctxBound is set when the context's deadline is the one in force.
	ctxBound bool
}

// urlForError is the request URL for error messages, without a password.
func (x *exchange) urlForError() string {
	if x.u != nil && x.u.User != nil {
		return x.u.Redacted()
	}
	return x.req.URL
}

// stepError wraps err, the failure of step, with what the context says:
// a cancelled context closes the connection under a read or write, and the
// resulting "use of closed network connection" is reported as ctx.Err().
// A deadline that passed matches context.DeadlineExceeded when it was the
// context's and os.ErrDeadlineExceeded when it was Client.Timeout's,
// whichever step (dial or I/O) it stopped.
func (x *exchange) stepError(step string, err error) error {
	if cerr := x.ctx.Err(); cerr != nil {
		if !errors.Is(err, cerr) {
			err = cerr
		}
	} else if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		// A dial stopped by the deadline reports context.DeadlineExceeded,
		// a read or write os.ErrDeadlineExceeded; and the context's
		// deadline may fire a moment before the context notices.
		target := os.ErrDeadlineExceeded
		if x.ctxBound {
			target = context.DeadlineExceeded
		}
		if !errors.Is(err, target) {
			err = &alsoIs{err: err, target: target}
		}
	}
	return fmt.Errorf("%s: %w", step, err)
}

// alsoIs is err, with its message, that errors.Is also finds target in.
type alsoIs struct{ err, target error }

func (e *alsoIs) Error() string   { return e.err.Error() }
func (e *alsoIs) Unwrap() []error { return []error{e.err, e.target} }

func (x *exchange) run() (Response, error) {
	c, r := x.c, x.req
	u, err := url.Parse(r.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Response{}, fmt.Errorf("invalid URL: %w", err)
	}
	x.u = u
	if err := validate(r, u); err != nil {
		return Response{}, err
	}
	if u.Scheme == "https" && c.TLS == nil {
		return Response{}, errors.New("https is not available: this client has no TLS (Client.TLS)")
	}
	// The proxy, if any.
	proxyFn := c.Proxy
	if proxyFn == nil {
		proxyFn = envProxyFunc()
	}
	proxy, err := proxyFn(u)
	if err != nil {
		return Response{}, fmt.Errorf("proxy: %w", err)
	}
	if proxy != nil {
		if proxy.Scheme != "http" {
			return Response{}, fmt.Errorf("proxy scheme %q not supported (only http)", proxy.Scheme)
		}
		if proxy.Host == "" {
			return Response{}, errors.New("proxy URL has no host")
		}
	}
	if err := x.ctx.Err(); err != nil {
		return Response{}, err
	}

	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	now := time.Now()
	deadline := now.Add(timeout)
	if d, ok := x.ctx.Deadline(); ok && d.Before(deadline) {
		deadline, x.ctxBound = d, true
		if !d.After(now) {
			// Past, though the context may not have noticed yet.
			return Response{}, context.DeadlineExceeded
		}
	}

	addr := hostPort(u.Host, u.Scheme)
	dialAddr, dialStep := addr, "connect"
	if proxy != nil {
		dialAddr = hostPort(proxy.Host, "http")
		dialStep = "connect to proxy " + dialAddr
	}
	dial := c.Dial
	if dial == nil {
		// One exchange per connection, bounded by a deadline: TCP
		// keep-alive probes would never fire, and setting them up costs
		// system calls on every dial.
		d := net.Dialer{KeepAlive: -1}
		dial = d.DialContext
	}
	dctx, cancel := context.WithDeadline(x.ctx, deadline)
	conn, err := dial(dctx, "tcp", dialAddr)
	cancel()
	if err != nil {
		return Response{}, x.stepError(dialStep, err)
	}
	defer conn.Close()
	// Closing the TCP connection (never the TLS one, whose Close writes)
	// ends whatever waits on it.
	raw := conn
	stop := context.AfterFunc(x.ctx, func() { raw.Close() })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		return Response{}, x.stepError("set deadline", err)
	}

	var proxyAuth string
	if proxy != nil && proxy.User != nil {
		p, _ := proxy.User.Password()
		proxyAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(proxy.User.Username()+":"+p))
	}
	target := u.RequestURI()
	if u.Scheme == "https" {
		if proxy != nil {
			if conn, err = x.tunnel(conn, addr, proxyAuth); err != nil {
				return Response{}, err
			}
			proxyAuth = "" // for the proxy only, never for the server
		}
		tc, err := c.TLS(x.ctx, conn, u.Hostname())
		if err != nil {
			return Response{}, x.stepError("tls handshake", err)
		}
		conn = tc
	} else if proxy != nil {
		target = "http://" + u.Host + target
	}

	buf := appendRequest(nil, r, target, removeZone(u.Host), proxyAuth)
	br := bufio.NewReader(conn)
	if _, werr := conn.Write(buf); werr != nil {
		// The server may have answered early (say 413) and closed: its
		// answer says more than the write error.
		if resp, err := readResponse(br, r.Method, x.maxBody()); err == nil {
			return resp, nil
		}
		return Response{}, x.stepError("write request", werr)
	}
	resp, err := readResponse(br, r.Method, x.maxBody())
	if err != nil {
		return Response{}, x.stepError("read answer", err)
	}
	return resp, nil
}

func (x *exchange) maxBody() int64 {
	if x.c.MaxBody > 0 {
		return x.c.MaxBody
	}
	return defaultMaxBody
}

// tunnel asks the proxy on conn for a tunnel to addr and returns the
// connection to speak TLS over.
func (x *exchange) tunnel(conn net.Conn, addr, proxyAuth string) (net.Conn, error) {
	b := make([]byte, 0, 128+len(proxyAuth)+2*len(addr))
	b = append(b, "CONNECT "...)
	b = append(b, addr...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, addr...)
	b = append(b, "\r\nUser-Agent: "+userAgent+"\r\n"...)
	if proxyAuth != "" {
		b = append(b, "Proxy-Authorization: "...)
		b = append(b, proxyAuth...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	if _, err := conn.Write(b); err != nil {
		return nil, x.stepError("proxy CONNECT "+addr, err)
	}
	br := bufio.NewReader(conn)
	hr := headReader{br: br}
	status, reason, _, err := hr.readHead(false)
	if err != nil {
		return nil, x.stepError("proxy CONNECT "+addr, err)
	}
	if status < 200 || status > 299 {
		return nil, fmt.Errorf("proxy CONNECT %s: proxy answered %d %s", addr, status, reason)
	}
	if br.Buffered() > 0 {
		// Bytes past the answer belong to the tunnel.
		return &bufferedConn{Conn: conn, br: br}, nil
	}
	return conn, nil
}

// bufferedConn is a net.Conn whose first bytes were read into br.
type bufferedConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.br.Read(p) }

// hostPort is host with the scheme's default port added when it has none.
func hostPort(host, scheme string) string {
	h, port := splitHostPort(host)
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(h, port)
}

// removeZone removes the zone from an IPv6 literal host for the Host
// header, as net/http does: "[fe80::1%en0]:8080" becomes "[fe80::1]:8080".
func removeZone(host string) string {
	if !strings.HasPrefix(host, "[") {
		return host
	}
	i := strings.LastIndexByte(host, ']')
	if i < 0 {
		return host
	}
	j := strings.LastIndexByte(host[:i], '%')
	if j < 0 {
		return host
	}
	return host[:j] + host[i:]
}

// splitHostPort splits url.URL.Host into the host name, without IPv6
// brackets, and the port, empty when there is none.
func splitHostPort(hostport string) (host, port string) {
	u := url.URL{Host: hostport}
	return u.Hostname(), u.Port()
}

// validate checks r before anything is sent.
func validate(r *Request, u *url.URL) error {
	if !isToken(r.Method) {
		return fmt.Errorf("invalid method %q", r.Method)
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return errors.New("invalid URL: not absolute (no scheme)")
	default:
		return fmt.Errorf("unsupported URL scheme %q (only http and https)", u.Scheme)
	}
	if u.User != nil {
		return errors.New("userinfo in the URL is not supported")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("invalid URL: no host")
	}
	for _, h := range r.Header {
		if !isToken(h.Key) {
			return fmt.Errorf("invalid header name %q", h.Key)
		}
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			return fmt.Errorf("invalid value for header %s: contains CR, LF or NUL", h.Key)
		}
		for _, k := range [...]string{"Host", "Content-Length", "Transfer-Encoding", "Connection"} {
			if strings.EqualFold(h.Key, k) {
				return fmt.Errorf("header %s is set by rawhttp and may not be given", h.Key)
			}
		}
	}
	return nil
}

// appendRequest appends the request head and body, ready to write in one go.
func appendRequest(b []byte, r *Request, target, host, proxyAuth string) []byte {
	hasUA := false
	n := len(r.Method) + len(target) + len(host) + len(proxyAuth) + len(r.Body) + 160
	for _, h := range r.Header {
		n += len(h.Key) + len(h.Value) + 4
		if strings.EqualFold(h.Key, "User-Agent") {
			hasUA = true
		}
	}
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if !hasUA {
		b = append(b, "User-Agent: "+userAgent+"\r\n"...)
	}
	if r.Body != nil || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(r.Body)), 10)
		b = append(b, "\r\n"...)
	}
	if proxyAuth != "" {
		b = append(b, "Proxy-Authorization: "...)
		b = append(b, proxyAuth...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Connection: close\r\n"...)
	for _, h := range r.Header {
		b = append(b, h.Key...)
		b = append(b, ": "...)
		b = append(b, h.Value...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, r.Body...)
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenByte(s[i]) {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
