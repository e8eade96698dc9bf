package rawhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/quiet"
	"github.com/gyrum-labs/warp/internal/rawhttp/rawtls"
)

// rawServer starts a TCP server on 127.0.0.1:0 that reads each request's
// head and hands the connection to handle, and returns its base URL. The
// listener and every connection are closed, and the handlers waited for,
// when the test ends.
func rawServer(t testing.TB, handle func(c net.Conn, br *bufio.Reader, head string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		closed bool
		conns  = map[net.Conn]bool{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				head, err := readRequestHead(br)
				if err != nil {
					return
				}
				handle(c, br, head)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// readRequestHead reads a request line and header section, and the body
// when a Content-Length announces one.
func readRequestHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if line == "\r\n" {
			break
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", err
	}
	b.Write(body)
	return b.String(), nil
}

// answer returns a rawServer handler that writes s and closes.
func answer(s string) func(net.Conn, *bufio.Reader, string) {
	return func(c net.Conn, _ *bufio.Reader, _ string) { io.WriteString(c, s) }
}

// stall is a rawServer handler that never answers; it returns when the
// client closes. got, when not nil, is closed once the request is in.
func stall(got chan struct{}) func(net.Conn, *bufio.Reader, string) {
	return func(c net.Conn, br *bufio.Reader, _ string) {
		if got != nil {
			close(got)
		}
		io.Copy(io.Discard, br)
	}
}

// noProxy makes a client ignore the environment's proxies.
func noProxy(*url.URL) (*url.URL, error) { return nil, nil }

func do(t *testing.T, c *Client, r Request) (Response, error) {
	t.Helper()
	if c.Proxy == nil {
		c.Proxy = noProxy
	}
	if c.Dial == nil && os.Getenv(quietDialEnv) != "" {
		c.Dial = quiet.Dialer()
	}
	return c.Do(context.Background(), r)
}

// quietDialEnv, set, makes do dial with quiet.Dial, as the heartbeat loop
// does on Linux.
const quietDialEnv = "RAWHTTP_TEST_QUIET_DIAL"

// TestSuiteOverQuietDial runs this package's tests again in a child test
// process whose requests dial with quiet.Dial (non-blocking sockets driven
// by raw system calls) instead of a net.Dialer: the loop's client must
// behave the same over either.
func TestSuiteOverQuietDial(t *testing.T) {
	if os.Getenv(quietDialEnv) != "" {
		t.Skip("this is the child run")
	}
	if quiet.Dialer() == nil {
		t.Skip("quiet.Dial is not used on this platform")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^Test", "-test.skip", "^TestSuiteOverQuietDial$", "-test.count", "1")
	cmd.Env = append(os.Environ(), quietDialEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests over quiet.Dial failed: %v\n%s", err, out)
	}
}

func mustDo(t *testing.T, c *Client, r Request) Response {
	t.Helper()
	resp, err := do(t, c, r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// seen is what an httptest handler saw of a request.
type seen struct {
	method, requestURI, host, body string
	header                         http.Header
	contentLength                  int64
	transferEncoding               []string
	close                          bool
	proto                          string
	tls                            bool
}

func recorder(t *testing.T, got *seen, answer func(w http.ResponseWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server: read body: %v", err)
		}
		*got = seen{method: r.Method, requestURI: r.RequestURI, host: r.Host, body: string(b),
			header: r.Header, contentLength: r.ContentLength, transferEncoding: r.TransferEncoding,
			close: r.Close, proto: r.Proto, tls: r.TLS != nil}
		answer(w)
	}
}

func TestGet(t *testing.T) {
	var got seen
	srv := httptest.NewServer(recorder(t, &got, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Answer", "yes")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)

	resp := mustDo(t, &Client{}, Request{URL: srv.URL + "/v1/tickets/a%2Fb?x=1&y=%20z#frag",
		Header: []Header{{"Accept", "application/json"}, {"X-Multi", "1"}, {"X-Multi", "2"}}})

	if got.method != "GET" || got.requestURI != "/v1/tickets/a%2Fb?x=1&y=%20z" {
		t.Errorf("server saw %s %s", got.method, got.requestURI)
	}
	if want := strings.TrimPrefix(srv.URL, "http://"); got.host != want {
		t.Errorf("Host %q, want %q", got.host, want)
	}
	if got.proto != "HTTP/1.1" || !got.close {
		t.Errorf("proto %s close %v, want HTTP/1.1 and Connection: close", got.proto, got.close)
	}
	if got.contentLength != 0 || got.transferEncoding != nil || got.header.Get("Content-Length") != "" {
		t.Errorf("GET without body sent Content-Length %d / %q, Transfer-Encoding %v",
			got.contentLength, got.header.Get("Content-Length"), got.transferEncoding)
	}
	if ua := got.header.Get("User-Agent"); ua != userAgent {
		t.Errorf("User-Agent %q", ua)
	}
	if got.header.Get("Accept") != "application/json" || strings.Join(got.header["X-Multi"], ",") != "1,2" {
		t.Errorf("headers %v", got.header)
	}
	if ae := got.header.Get("Accept-Encoding"); ae != "" {
		t.Errorf("Accept-Encoding %q sent", ae)
	}

	if resp.Status != 200 || string(resp.Body) != `{"ok":true}` {
		t.Errorf("answer %d %q", resp.Status, resp.Body)
	}
	if resp.Get("content-type") != "application/json" || resp.Get("X-ANSWER") != "yes" || resp.Get("Nope") != "" {
		t.Errorf("answer header %v", resp.Header)
	}
	if resp.Get("Content-Length") != "11" {
		t.Errorf("answer not framed by Content-Length: %v", resp.Header)
	}
}

func TestPost(t *testing.T) {
	var got seen
	srv := httptest.NewServer(recorder(t, &got, func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":7}`)
	}))
	t.Cleanup(srv.Close)

	body := []byte(`{"lease":"L-1","in_flight":2}`)
	resp := mustDo(t, &Client{}, Request{Method: "POST", URL: srv.URL + "/v1/heartbeat",
		Header: []Header{{"Content-Type", "application/json"}, {"Authorization", "Bearer tok"}, {"User-Agent", "agent/2"}},
		Body:   body})

	if got.method != "POST" || got.requestURI != "/v1/heartbeat" || got.body != string(body) {
		t.Errorf("server saw %s %s %q", got.method, got.requestURI, got.body)
	}
	if got.contentLength != int64(len(body)) || got.header.Get("Content-Length") != fmt.Sprint(len(body)) {
		t.Errorf("Content-Length %d %q", got.contentLength, got.header.Get("Content-Length"))
	}
	if got.header.Get("Content-Type") != "application/json" || got.header.Get("Authorization") != "Bearer tok" {
		t.Errorf("headers %v", got.header)
	}
	if ua := got.header["User-Agent"]; len(ua) != 1 || ua[0] != "agent/2" {
		t.Errorf("User-Agent %q, want the one given only", ua)
	}
	if resp.Status != 201 || string(resp.Body) != `{"id":7}` {
		t.Errorf("answer %d %q", resp.Status, resp.Body)
	}
}

// TestRequestBytes checks the request exactly as sent.
func TestRequestBytes(t *testing.T) {
	heads := make(chan string, 4)
	base := rawServer(t, func(c net.Conn, br *bufio.Reader, head string) {
		heads <- head
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	host := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{Method: "POST", URL: base + "/hb", Header: []Header{{"X-A", "b c"}}, Body: []byte("{}")},
			"POST /hb HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\nContent-Length: 2\r\nConnection: close\r\nX-A: b c\r\n\r\n{}"},
		{Request{Method: "POST", URL: base},
			"POST / HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{Request{Method: "PUT", URL: base + "?q", Body: []byte{}},
			"PUT /?q HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{Request{Method: "DELETE", URL: base + "/x/"},
			"DELETE /x/ HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\nConnection: close\r\n\r\n"},
	} {
		resp := mustDo(t, &Client{}, tc.r)
		if resp.Status != 200 || resp.Body != nil {
			t.Errorf("%s %s: answer %d %q", tc.r.Method, tc.r.URL, resp.Status, resp.Body)
		}
		if got := <-heads; got != tc.want {
			t.Errorf("%s %s sent\n%q\nwant\n%q", tc.r.Method, tc.r.URL, got, tc.want)
		}
	}
}

func TestChunked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, s := range []string{"first,", strings.Repeat("x", 5000), ",last"} {
			io.WriteString(w, s)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	resp := mustDo(t, &Client{}, Request{URL: srv.URL})
	if resp.Get("Transfer-Encoding") != "chunked" {
		t.Errorf("answer not chunked: %v", resp.Header)
	}
	if want := "first," + strings.Repeat("x", 5000) + ",last"; string(resp.Body) != want {
		t.Errorf("body %d bytes, want %d", len(resp.Body), len(want))
	}

	// Extensions, upper-case hex, trailers, a coding named in any case.
	base := rawServer(t, answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nTrailer: X-Sum\r\n\r\n"+
		"5;name=value\r\nhello\r\nA ; ext\r\n, world!!!\r\n0\r\nX-Sum: 1\r\nX-Other: 2\r\n\r\n"))
	resp = mustDo(t, &Client{}, Request{URL: base})
	if string(resp.Body) != "hello, world!!!" || resp.Get("X-Sum") != "" {
		t.Errorf("body %q header %v", resp.Body, resp.Header)
	}
}

func TestReadUntilClose(t *testing.T) {
	base := rawServer(t, answer("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nno length, "+strings.Repeat("y", 10000)))
	resp := mustDo(t, &Client{}, Request{URL: base + "/old"})
	if resp.Status != 200 || string(resp.Body) != "no length, "+strings.Repeat("y", 10000) {
		t.Errorf("answer %d, %d bytes", resp.Status, len(resp.Body))
	}
}

func TestNoBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/head":
			w.Header().Set("Content-Length", "1234")
			w.WriteHeader(200)
		case "/204":
			w.WriteHeader(204)
		case "/304":
			w.Header().Set("Etag", `"v1"`)
			w.WriteHeader(304)
		}
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		method, path string
		status       int
	}{{"HEAD", "/head", 200}, {"DELETE", "/204", 204}, {"GET", "/304", 304}} {
		resp, err := do(t, &Client{Timeout: 5 * time.Second}, Request{Method: tc.method, URL: srv.URL + tc.path})
		if err != nil || resp.Status != tc.status || resp.Body != nil {
			t.Errorf("%s %s: %d %q %v", tc.method, tc.path, resp.Status, resp.Body, err)
		}
	}
	// A raw server that sends a Content-Length with 204 and then nothing:
	// the length is ignored, the answer ends with its header.
	base := rawServer(t, func(c net.Conn, br *bufio.Reader, _ string) {
		io.WriteString(c, "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n")
		io.Copy(io.Discard, br) // stays open until the client hangs up
	})
	resp, err := do(t, &Client{Timeout: 5 * time.Second}, Request{URL: base})
	if err != nil || resp.Status != 204 || resp.Body != nil {
		t.Errorf("204 with Content-Length: %d %q %v", resp.Status, resp.Body, err)
	}
}

func TestInterimAnswers(t *testing.T) {
	base := rawServer(t, answer("HTTP/1.1 100 Continue\r\n\r\n"+
		"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	resp := mustDo(t, &Client{}, Request{Method: "POST", URL: base, Body: []byte("x")})
	if resp.Status != 200 || string(resp.Body) != "ok" || resp.Get("Link") != "" {
		t.Errorf("answer %d %q %v", resp.Status, resp.Body, resp.Header)
	}

	base = rawServer(t, answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"))
	if _, err := do(t, &Client{}, Request{URL: base}); err == nil || !strings.Contains(err.Error(), "101") {
		t.Errorf("101: %v", err)
	}

	base = rawServer(t, answer(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 10)+"HTTP/1.1 200 OK\r\n\r\n"))
	if _, err := do(t, &Client{}, Request{URL: base}); err == nil || !strings.Contains(err.Error(), "interim") {
		t.Errorf("endless 100s: %v", err)
	}
}

func TestMaxBody(t *testing.T) {
	big := strings.Repeat("z", 2000)
	answers := map[string]string{
		"/length":  "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + big,
		"/chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + big[:1000] + "\r\n3e8\r\n" + big[:1000] + "\r\n0\r\n\r\n",
		"/close":   "HTTP/1.1 200 OK\r\n\r\n" + big,
	}
	base := rawServer(t, func(c net.Conn, _ *bufio.Reader, head string) {
		io.WriteString(c, answers[strings.Fields(head)[1]])
	})
	for path := range answers {
		_, err := do(t, &Client{MaxBody: 1999}, Request{URL: base + path})
		if err == nil || !strings.Contains(err.Error(), "larger than the limit of 1999 bytes") {
			t.Errorf("%s over MaxBody: %v", path, err)
		}
		resp, err := do(t, &Client{MaxBody: 2000}, Request{URL: base + path})
		if err != nil || string(resp.Body) != big {
			t.Errorf("%s at MaxBody: %d bytes, %v", path, len(resp.Body), err)
		}
	}
}

func TestTimeout(t *testing.T) {
	base := rawServer(t, stall(nil))
	_, err := do(t, &Client{Timeout: 200 * time.Millisecond}, Request{Method: "POST", URL: base + "/hb", Body: []byte("{}")})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("%v is not a net.Error with Timeout()", err)
	}
	if want := "rawhttp: POST " + base + "/hb: read answer: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}

	// A TLS handshake that stalls.
	_, err = do(t, &Client{Timeout: 200 * time.Millisecond, TLS: rawtls.Handshake(nil)}, Request{URL: "https" + strings.TrimPrefix(base, "http")})
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), ": tls handshake: ") {
		t.Errorf("TLS: got %v, want os.ErrDeadlineExceeded in the handshake", err)
	}

	// A dial that stalls: it sees the deadline in its context.
	hang := func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, err = do(t, &Client{Timeout: 100 * time.Millisecond, Dial: hang}, Request{URL: base})
	if !errors.Is(err, os.ErrDeadlineExceeded) || err.Error() != "rawhttp: GET "+base+": connect: context deadline exceeded" {
		t.Errorf("dial: got %v, want os.ErrDeadlineExceeded", err)
	}
}

func TestContextDeadline(t *testing.T) {
	base := rawServer(t, stall(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := (&Client{Proxy: noProxy}).Do(ctx, Request{URL: base})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	// Past before it starts: no dial.
	_, err = (&Client{Proxy: noProxy, Dial: failDial(t)}).Do(ctx, Request{URL: base})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}

func TestCancel(t *testing.T) {
	got := make(chan struct{})
	base := rawServer(t, stall(got))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-got
		cancel()
	}()
	_, err := (&Client{Proxy: noProxy}).Do(ctx, Request{URL: base + "/wait"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if want := "rawhttp: GET " + base + "/wait: "; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), ": context canceled") {
		t.Errorf("error %q, want %q...: context canceled", err, want)
	}

	// Cancelled before it starts: no dial.
	_, err = (&Client{Proxy: noProxy, Dial: failDial(t)}).Do(ctx, Request{URL: base})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func failDial(t *testing.T) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) {
		t.Error("dialled")
		return nil, errors.New("no dial")
	}
}

func TestTruncated(t *testing.T) {
	for name, s := range map[string]string{
		"length":       "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b",
		"chunk data":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort",
		"chunk size":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"chunk crlf":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello",
		"trailer":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n",
		"header":       "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
		"status line":  "HTTP/1.1 20",
		"empty answer": "",
	} {
		base := rawServer(t, answer(s))
		_, err := do(t, &Client{}, Request{URL: base})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: got %v, want io.ErrUnexpectedEOF", name, err)
		}
	}
}

// TestErrorMessage pins the shape of an error.
func TestErrorMessage(t *testing.T) {
	base := rawServer(t, answer(""))
	_, err := do(t, &Client{}, Request{Method: "POST", URL: base + "/v1/heartbeat", Body: []byte("{}")})
	if want := "rawhttp: POST " + base + "/v1/heartbeat: read answer: unexpected EOF"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestMalformedAnswers(t *testing.T) {
	for _, tc := range []struct{ name, answer, want string }{
		{"status no code", "HTTP/1.1 OK\r\n\r\n", "malformed status line"},
		{"status http2", "HTTP/2 200 OK\r\n\r\n", "malformed status line"},
		{"status garbage", "hello\r\n\r\n", "malformed status line"},
		{"status 4 digits", "HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"},
		{"status 099", "HTTP/1.1 099 Low\r\n\r\n", "malformed status line"},
		{"header no colon", "HTTP/1.1 200 OK\r\nBroken\r\n\r\n", "malformed header line"},
		{"header space before colon", "HTTP/1.1 200 OK\r\nX-A : b\r\n\r\n", "malformed header line"},
		{"fold first", "HTTP/1.1 200 OK\r\n folded\r\n\r\n", "malformed header line"},
		{"length invalid", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n1", "invalid Content-Length"},
		{"length negative", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"},
		{"length signed", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n1", "invalid Content-Length"},
		{"length conflict", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n12", "conflicting Content-Length"},
		{"length list conflict", "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\n12", "conflicting Content-Length"},
		{"te gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "unsupported Transfer-Encoding"},
		{"chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"},
		{"chunk size empty", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;x\r\n", "malformed chunk size"},
		{"chunk size huge", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", "malformed chunk size"},
		{"chunk no crlf", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", "no CRLF"},
		{"chunk line long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + strings.Repeat("e", 5000) + "\r\n", "too long"},
		{"header bytes", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 70<<10) + "\r\n\r\n", "header section larger than 65536 bytes"},
		{"header bytes many lines", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-B: "+strings.Repeat("b", 1000)+"\r\n", 70) + "\r\n", "header section larger than 65536 bytes"},
		{"header lines", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: 1\r\n", 101) + "\r\n", "header section of more than 100 lines"},
		{"trailer lines", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + strings.Repeat("X-A: 1\r\n", 101) + "\r\n", "trailer: header section of more than 100 lines"},
	} {
		base := rawServer(t, answer(tc.answer))
		_, err := do(t, &Client{}, Request{URL: base})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestLenientAnswers covers what is accepted though unusual.
func TestLenientAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		status       int
		header       []Header
		body         string
	}{
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx", 200, []Header{{"Content-Length", "1"}}, "x"},
		{"bare LF", "HTTP/1.0 404 Not Found\nX-A:  b \n\nnot here", 404, []Header{{"X-A", "b"}}, "not here"},
		{"folded", "HTTP/1.1 200 OK\r\nX-F: one\r\n  two\r\n\tthree\r\nX-E:\r\n more\r\n\r\n", 200,
			[]Header{{"X-F", "one two three"}, {"X-E", "more"}}, ""},
		{"length list", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nab", 200,
			[]Header{{"Content-Length", "2, 2"}, {"Content-Length", "2"}}, "ab"},
		{"chunked wins", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", 200,
			[]Header{{"Content-Length", "100"}, {"Transfer-Encoding", "chunked"}}, "ab"},
		{"empty value", "HTTP/1.1 500 Internal Server Error\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n", 500,
			[]Header{{"X-Empty", ""}, {"Content-Length", "0"}}, ""},
		{"long line", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("l", 10000) + "\r\n\r\n", 200,
			[]Header{{"X-Long", strings.Repeat("l", 10000)}}, ""},
	} {
		br := bufio.NewReader(strings.NewReader(tc.answer))
		resp, err := readResponse(br, "GET", 1<<20)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if resp.Status != tc.status || fmt.Sprint(resp.Header) != fmt.Sprint(tc.header) || string(resp.Body) != tc.body {
			t.Errorf("%s: got %d %q %q, want %d %q %q", tc.name, resp.Status, resp.Header, resp.Body, tc.status, tc.header, tc.body)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	c := &Client{Dial: failDial(t), Proxy: func(*url.URL) (*url.URL, error) {
		t.Error("proxy asked")
		return nil, nil
	}}
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"LF in value", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"X-A", "a\nInjected: 1"}}}, "invalid value for header X-A"},
		{"CR in value", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"X-A", "a\r"}}}, "invalid value for header X-A"},
		{"CRLF in key", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"X-A\r\nB", "a"}}}, "invalid header name"},
		{"colon in key", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"X-A:", "a"}}}, "invalid header name"},
		{"empty key", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"", "a"}}}, "invalid header name"},
		{"Host given", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"host", "a"}}}, "header host is set by rawhttp"},
		{"Content-Length given", Request{URL: "http://127.0.0.1:1/", Header: []Header{{"Content-Length", "1"}}}, "is set by rawhttp"},
		{"method", Request{Method: "GET /x", URL: "http://127.0.0.1:1/"}, "invalid method"},
		{"scheme", Request{URL: "ftp://127.0.0.1/file"}, `unsupported URL scheme "ftp"`},
		{"ws scheme", Request{URL: "ws://127.0.0.1/"}, `unsupported URL scheme "ws"`},
		{"relative", Request{URL: "/v1/heartbeat"}, "not absolute"},
		{"no host", Request{URL: "http:///x"}, "no host"},
		{"bad URL", Request{URL: "http://127.0.0.1:port/"}, "invalid URL"},
		{"control in URL", Request{URL: "http://127.0.0.1/a\r\nb"}, "invalid URL"},
		{"userinfo", Request{URL: "http://user:secret@127.0.0.1/"}, "userinfo in the URL is not supported"},
	} {
		_, err := c.Do(context.Background(), tc.r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error shows the password: %v", tc.name, err)
		}
	}
}

func TestConnectError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = do(t, &Client{}, Request{URL: "http://" + addr + "/x"})
	var oe *net.OpError
	if !errors.As(err, &oe) || !strings.HasPrefix(err.Error(), "rawhttp: GET http://"+addr+"/x: connect: ") {
		t.Errorf("got %v, want a connect *net.OpError", err)
	}
}

func TestIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	var got seen
	srv := httptest.NewUnstartedServer(recorder(t, &got, func(w http.ResponseWriter) { io.WriteString(w, "six") }))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://[::1]:") {
		t.Fatalf("server URL %s", srv.URL)
	}
	resp := mustDo(t, &Client{}, Request{URL: srv.URL + "/v6"})
	if string(resp.Body) != "six" || got.host != strings.TrimPrefix(srv.URL, "http://") || got.requestURI != "/v6" {
		t.Errorf("answer %q, server saw Host %q %s", resp.Body, got.host, got.requestURI)
	}
}

func tlsServer(t *testing.T, got *seen) (*httptest.Server, *tls.Config) {
	srv := httptest.NewUnstartedServer(recorder(t, got, func(w http.ResponseWriter) { io.WriteString(w, "secure") }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // no "TLS handshake error" noise
	srv.EnableHTTP2 = true                           // offers h2, which the client must not take
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, &tls.Config{RootCAs: pool}
}

func TestHTTPS(t *testing.T) {
	var got seen
	srv, cfg := tlsServer(t, &got)
	resp := mustDo(t, &Client{TLS: rawtls.Handshake(cfg)}, Request{Method: "POST", URL: srv.URL + "/s?x=1", Body: []byte("{}")})
	if resp.Status != 200 || string(resp.Body) != "secure" {
		t.Errorf("answer %d %q", resp.Status, resp.Body)
	}
	if !got.tls || got.proto != "HTTP/1.1" || got.requestURI != "/s?x=1" || got.body != "{}" ||
		got.host != strings.TrimPrefix(srv.URL, "https://") {
		t.Errorf("server saw %+v", got)
	}
	if cfg.ServerName != "" {
		t.Error("the caller's TLSConfig was changed")
	}

	// A name the certificate holds, reached through Dial; a config that
	// offers h2 still gets HTTP/1.1.
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	cfg2 := cfg.Clone()
	cfg2.NextProtos = []string{"h2", "http/1.1"}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != "example.com:"+port {
			t.Errorf("dialled %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}
	resp = mustDo(t, &Client{TLS: rawtls.Handshake(cfg2), Dial: dial}, Request{URL: "https://example.com:" + port + "/name"})
	if string(resp.Body) != "secure" || got.host != "example.com:"+port || got.proto != "HTTP/1.1" {
		t.Errorf("by name: answer %q, server saw %+v", resp.Body, got)
	}
}

// A client without TLS (a plain-http binary) refuses https before it
// dials anything.
func TestHTTPSWithoutTLS(t *testing.T) {
	dialled := false
	c := &Client{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = true
		return nil, errors.New("dialled")
	}}
	_, err := do(t, c, Request{URL: "https://127.0.0.1:1/x"})
	if err == nil || !strings.Contains(err.Error(), "https is not available") || dialled {
		t.Errorf("got %v (dialled %v), want https refused before any dial", err, dialled)
	}
}

func TestHTTPSDefaultRoots(t *testing.T) {
	var got seen
	srv, _ := tlsServer(t, &got)
	_, err := do(t, &Client{TLS: rawtls.Handshake(nil)}, Request{URL: srv.URL})
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) || !strings.Contains(err.Error(), "tls handshake") {
		t.Errorf("got %v, want a certificate verification error", err)
	}
}

func TestHTTPProxy(t *testing.T) {
	var got seen
	proxy := httptest.NewServer(recorder(t, &got, func(w http.ResponseWriter) {
		w.Header().Set("Via", "1.1 test-proxy")
		io.WriteString(w, "proxied")
	}))
	t.Cleanup(proxy.Close)
	pu, _ := url.Parse(proxy.URL)
	pu.User = url.UserPassword("agent", "p@ss:word")
	var asked *url.URL
	c := &Client{Proxy: func(u *url.URL) (*url.URL, error) { asked = u; return pu, nil }}

	resp := mustDo(t, c, Request{Method: "POST", URL: "http://warp.example:7077/v1/heartbeat?x=%2F", Body: []byte("{}")})
	if resp.Status != 200 || string(resp.Body) != "proxied" || resp.Get("Via") == "" {
		t.Errorf("answer %d %q", resp.Status, resp.Body)
	}
	if asked == nil || asked.String() != "http://warp.example:7077/v1/heartbeat?x=%2F" {
		t.Errorf("Proxy asked for %v", asked)
	}
	if got.requestURI != "http://warp.example:7077/v1/heartbeat?x=%2F" || got.host != "warp.example:7077" || got.body != "{}" {
		t.Errorf("proxy saw %s, Host %s, body %q", got.requestURI, got.host, got.body)
	}
	if want := "Basic " + base64.StdEncoding.EncodeToString([]byte("agent:p@ss:word")); got.header.Get("Proxy-Authorization") != want {
		t.Errorf("Proxy-Authorization %q, want %q", got.header.Get("Proxy-Authorization"), want)
	}

	// Without userinfo, no Proxy-Authorization.
	pu.User = nil
	mustDo(t, c, Request{URL: "http://warp.example/"})
	if got.requestURI != "http://warp.example/" || got.header.Get("Proxy-Authorization") != "" {
		t.Errorf("proxy saw %s %v", got.requestURI, got.header)
	}

	// Only http:// proxies.
	for _, p := range []string{"https://127.0.0.1:1", "socks5://127.0.0.1:1"} {
		c := &Client{Dial: failDial(t), Proxy: func(*url.URL) (*url.URL, error) { return url.Parse(p) }}
		_, err := c.Do(context.Background(), Request{URL: "http://warp.example/"})
		if scheme, _, _ := strings.Cut(p, ":"); err == nil || !strings.Contains(err.Error(), `proxy scheme "`+scheme+`" not supported`) {
			t.Errorf("proxy %s: %v", p, err)
		}
	}
	// A failing Proxy func.
	c = &Client{Dial: failDial(t), Proxy: func(*url.URL) (*url.URL, error) { return nil, errors.New("bad proxy config") }}
	if _, err := c.Do(context.Background(), Request{URL: "http://warp.example/"}); err == nil || !strings.Contains(err.Error(), "proxy: bad proxy config") {
		t.Errorf("Proxy error: %v", err)
	}
}

// connectProxy starts a CONNECT proxy that tunnels to whatever is asked
// and returns its URL; each CONNECT head is sent on heads. An answer other
// than "" is sent instead of tunnelling.
func connectProxy(t *testing.T, heads chan<- string, refuse string) *url.URL {
	base := rawServer(t, func(c net.Conn, br *bufio.Reader, head string) {
		heads <- head
		if refuse != "" {
			io.WriteString(c, refuse)
			return
		}
		f := strings.Fields(head)
		if len(f) < 2 || f[0] != "CONNECT" {
			io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
			return
		}
		up, err := net.Dial("tcp", f[1])
		if err != nil {
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
			return
		}
		defer up.Close()
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		done := make(chan struct{})
		go func() {
			io.Copy(up, br)
			up.(*net.TCPConn).CloseWrite()
			close(done)
		}()
		io.Copy(c, up)
		c.Close()
		<-done
	})
	u, _ := url.Parse(base)
	return u
}

func TestConnectProxy(t *testing.T) {
	var got seen
	srv, cfg := tlsServer(t, &got)
	target := strings.TrimPrefix(srv.URL, "https://")
	heads := make(chan string, 1)
	pu := connectProxy(t, heads, "")
	pu.User = url.UserPassword("agent", "s3cret")
	c := &Client{TLS: rawtls.Handshake(cfg), Proxy: func(*url.URL) (*url.URL, error) { return pu, nil }}

	resp := mustDo(t, c, Request{Method: "POST", URL: srv.URL + "/tunnelled?q=1", Body: []byte("{}")})
	if resp.Status != 200 || string(resp.Body) != "secure" {
		t.Errorf("answer %d %q", resp.Status, resp.Body)
	}
	head := <-heads
	wantAuth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("agent:s3cret")) + "\r\n"
	if !strings.HasPrefix(head, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n") || !strings.Contains(head, wantAuth) {
		t.Errorf("proxy saw %q", head)
	}
	if !got.tls || got.requestURI != "/tunnelled?q=1" || got.host != target || got.body != "{}" {
		t.Errorf("server saw %+v", got)
	}
	if pa := got.header.Get("Proxy-Authorization"); pa != "" {
		t.Errorf("Proxy-Authorization leaked to the server: %q", pa)
	}

	// A proxy that refuses.
	pu = connectProxy(t, heads, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n")
	c.Proxy = func(*url.URL) (*url.URL, error) { return pu, nil }
	_, err := c.Do(context.Background(), Request{URL: srv.URL})
	<-heads
	if err == nil || !strings.Contains(err.Error(), "proxy CONNECT "+target+": proxy answered 407 Proxy Authentication Required") {
		t.Errorf("refused CONNECT: %v", err)
	}
}

func TestEnvProxy(t *testing.T) {
	var got seen
	proxy := httptest.NewServer(recorder(t, &got, func(w http.ResponseWriter) { io.WriteString(w, "env proxy") }))
	t.Cleanup(proxy.Close)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", "")
	t.Setenv("NO_PROXY", "direct.test")
	t.Setenv("no_proxy", "")
	t.Setenv("REQUEST_METHOD", "")
	saved := envProxyFunc
	envProxyFunc = sync.OnceValue(proxyFromEnvironment) // read the environment set here
	t.Cleanup(func() { envProxyFunc = saved })

	var dialled []string
	c := &Client{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		if addr == "direct.test:80" {
			return nil, errors.New("not dialling direct.test")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	resp, err := c.Do(context.Background(), Request{URL: "http://via.test/x"})
	if err != nil || string(resp.Body) != "env proxy" || got.requestURI != "http://via.test/x" {
		t.Errorf("via proxy: %q %v, proxy saw %s", resp.Body, err, got.requestURI)
	}
	_, err = c.Do(context.Background(), Request{URL: "http://direct.test/x"})
	if err == nil || !strings.Contains(err.Error(), "not dialling direct.test") {
		t.Errorf("NO_PROXY: %v", err)
	}
	if want := []string{strings.TrimPrefix(proxy.URL, "http://"), "direct.test:80"}; fmt.Sprint(dialled) != fmt.Sprint(want) {
		t.Errorf("dialled %v, want %v", dialled, want)
	}
}

func TestParseChunkSize(t *testing.T) {
	for line, want := range map[string]int64{
		"0\r\n": 0, "a\r\n": 10, "FF\r\n": 255, "10;x=y\r\n": 16, "7 ;x\r\n": 7, "7\t\r\n": 7, "1f\n": 31,
		"fffffffffffffff\r\n": 1<<60 - 1,
	} {
		if n, err := parseChunkSize([]byte(line)); err != nil || n != want {
			t.Errorf("%q: %d %v, want %d", line, n, err, want)
		}
	}
	for _, line := range []string{"\r\n", "-1\r\n", "0x10\r\n", " 5\r\n", "5 5\r\n", "1000000000000000\r\n"} {
		if n, err := parseChunkSize([]byte(line)); err == nil {
			t.Errorf("%q: %d, want an error", line, n)
		}
	}
}

func TestRemoveZone(t *testing.T) {
	for in, want := range map[string]string{
		"[fe80::1%en0]:8080": "[fe80::1]:8080", "[fe80::1%25en0]": "[fe80::1]", "[::1]:80": "[::1]:80",
		"example.com:80": "example.com:80", "10.0.0.1": "10.0.0.1",
	} {
		if got := removeZone(in); got != want {
			t.Errorf("removeZone(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResponseGet(t *testing.T) {
	r := Response{Header: []Header{{"X-A", "1"}, {"x-a", "2"}, {"Content-Type", "text/plain"}}}
	if r.Get("x-A") != "1" || r.Get("CONTENT-TYPE") != "text/plain" || r.Get("X-B") != "" {
		t.Errorf("Get: %v", r.Header)
	}
}

func BenchmarkPost(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true,"next_s":300}`)
	}))
	b.Cleanup(srv.Close)
	body := bytes.Repeat([]byte("x"), 300)
	copy(body, `{"lease":"`)
	copy(body[len(body)-2:], `"}`)
	c := &Client{Proxy: noProxy}
	req := Request{Method: "POST", URL: srv.URL + "/v1/heartbeat", Body: body,
		Header: []Header{{"Content-Type", "application/json"}, {"Authorization", "Bearer 0123456789abcdef"}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Do(ctx, req)
		if err != nil || resp.Status != 200 {
			b.Fatal(resp.Status, err)
		}
	}
}
