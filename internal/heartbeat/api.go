package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/quiet"
	"github.com/gyrum-labs/warp/internal/rawhttp"
)

// API is the part of warp's HTTP API a loop uses. Errors are the wire
// package's: an answer of 300 or more is a *client.APIError.
type API interface {
	Heartbeat(ctx context.Context, r client.HeartbeatRequest) (client.HeartbeatResponse, error)
	Ticket(ctx context.Context, id string) (client.Ticket, error)
}

// TLSFunc secures a connection for https (rawhttp.Client.TLS; rawtls
// has one over crypto/tls).
type TLSFunc = func(ctx context.Context, conn net.Conn, serverName string) (net.Conn, error)

// NeedsTLS reports whether a loop for the server at baseURL needs TLS
// (an https URL): the small gyrum-loop has none.
func NeedsTLS(baseURL string) bool {
	return strings.HasPrefix(strings.ToLower(baseURL), "https:")
}

// NewAPI returns the loop's own API client for the server at baseURL:
// token authenticates (none when empty), secret is the lease secret sent
// with every request (none when empty), timeout bounds each exchange, tls
// makes https possible (nil: plain http only).
//
// It speaks HTTP/1.1 through rawhttp, one connection per request, rather
// than through net/http: a loop lives as long as its agent, one per agent
// on a host, and linking net/http would about double its resident memory.
// Proxies from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) are
// honoured as net/http would. On Linux it connects, writes and reads
// through package quiet, so a tick's exchange does not wake the runtime's
// monitor thread.
func NewAPI(baseURL, token, secret string, timeout time.Duration, tls TLSFunc) API {
	return &rawAPI{base: strings.TrimRight(baseURL, "/"), token: token, secret: secret,
		c: rawhttp.Client{Timeout: timeout, MaxBody: 1 << 20, TLS: tls, Dial: quiet.Dialer()}}
}

type rawAPI struct {
	base, token, secret string
	c                   rawhttp.Client
}

func (a *rawAPI) Heartbeat(ctx context.Context, r client.HeartbeatRequest) (client.HeartbeatResponse, error) {
	var res client.HeartbeatResponse
	err := a.do(ctx, "POST", "/v1/heartbeat", r, &res)
	return res, err
}

func (a *rawAPI) Ticket(ctx context.Context, id string) (client.Ticket, error) {
	var t client.Ticket
	err := a.do(ctx, "GET", "/v1/tickets/"+url.PathEscape(id), nil, &t)
	return t, err
}

func (a *rawAPI) do(ctx context.Context, method, path string, in, out any) error {
	req := rawhttp.Request{Method: method, URL: a.base + path,
		Header: make([]rawhttp.Header, 0, 4)}
	req.Header = append(req.Header, rawhttp.Header{Key: "Accept", Value: "application/json"})
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		req.Body = b
		req.Header = append(req.Header, rawhttp.Header{Key: "Content-Type", Value: "application/json"})
	}
	if a.token != "" {
		req.Header = append(req.Header, rawhttp.Header{Key: "Authorization", Value: "Bearer " + a.token})
	}
	if a.secret != "" {
		req.Header = append(req.Header, rawhttp.Header{Key: client.HeaderLeaseSecret, Value: a.secret})
	}
	resp, err := a.c.Do(ctx, req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return client.Decode(method, path, resp.Status, resp.Body, out)
}
