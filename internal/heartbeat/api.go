package heartbeat

import (
	"context"
	"net/http"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// API is the part of warp's HTTP API a loop uses. Errors are the client
// package's: an answer of 300 or more is a *client.APIError.
type API interface {
	Heartbeat(ctx context.Context, r client.HeartbeatRequest) (client.HeartbeatResponse, error)
	Ticket(ctx context.Context, id string) (client.Ticket, error)
	LeaseStatus(ctx context.Context, id string, epoch int64) (client.LeaseStatus, error)
}

// NewAPI returns the loop's client for the server at baseURL: token
// authenticates (none when empty), secret is the lease secret sent with
// every request (none when empty), timeout bounds each exchange. It is the
// public client over net/http: redirects are refused, proxies come from
// the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) and https from the
// system's roots. Connections are not kept: a loop asks once an interval,
// minutes apart, and an idle connection per agent would only hold a
// socket open on warp.
func NewAPI(baseURL, token, secret string, timeout time.Duration) API {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	return client.NewClient(baseURL, token).WithLeaseSecret(secret).
		WithHTTPClient(&http.Client{Timeout: timeout, Transport: t})
}
