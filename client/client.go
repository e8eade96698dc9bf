package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to a warp server. The zero value is not usable: use NewClient.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
	// leaseSecret is sent in HeaderLeaseSecret with every request.
	leaseSecret string
	retry       Retry
	// probe sends HeaderProbe with every request (ProbeHeartbeat).
	probe bool
}

// Retry says how a client retries requests warp refused for now: 429 (too
// many connections, too many hosts) and 503 (a database that does not
// answer, a server at its connection limit). Both come before the request
// is applied, so any request may be sent again.
type Retry struct {
	// Max is how many times a refused request is sent again; 0: never.
	Max int
	// MaxWait caps each wait; the answer's Retry-After (seconds or an
	// HTTP date) sets it, 1 s when it says nothing. 0: 10 s.
	MaxWait time.Duration
	// Notify, when set, is called before each wait: the answer, the wait
	// and the attempt about to be made (2 for the first retry).
	Notify func(err *APIError, wait time.Duration, attempt int)
}

// WithRetry returns a copy of c that retries refused requests as r says.
// Clients that retry on their own schedule (a heartbeat loop) leave it
// off.
func (c *Client) WithRetry(r Retry) *Client {
	cc := *c
	cc.retry = r
	return &cc
}

// retryAfter is the wait an answer asks for: its Retry-After in seconds or
// as an HTTP date, else 1 s, capped at limit.
func retryAfter(h http.Header, now time.Time, limit time.Duration) time.Duration {
	wait := time.Second
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			wait = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			wait = t.Sub(now)
		}
	}
	if wait < 0 {
		wait = 0
	}
	if wait > limit {
		wait = limit
	}
	return wait
}

// NewClient returns a client for the server at baseURL ("" → DefaultURL)
// authenticating with token (none when empty).
func NewClient(baseURL, token string) *Client {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	return &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		token:   token,
		http:    &http.Client{Timeout: 30 * time.Second, CheckRedirect: refuseRedirect},
	}
}

// WithHTTPClient returns a copy of c that sends requests with hc. When hc
// has no CheckRedirect of its own, the copy refuses redirects as
// NewClient's does.
func (c *Client) WithHTTPClient(hc *http.Client) *Client {
	cc := *c
	if hc.CheckRedirect == nil {
		h := *hc
		h.CheckRedirect = refuseRedirect
		hc = &h
	}
	cc.http = hc
	return &cc
}

// refuseRedirect stops the client at a redirect. warp's API never
// redirects, and following one would resend the request's lease secret
// (net/http keeps custom headers across hosts) and, for 307 and 308, its
// body to wherever the answer points.
func refuseRedirect(req *http.Request, via []*http.Request) error {
	return fmt.Errorf("the server redirected to %s; not followed: warp's API never redirects (point the client at the warp server itself)", req.URL.Redacted())
}

// WithLeaseSecret returns a copy of c that proves, with every request,
// that it holds the lease whose claim returned secret (Ticket.LeaseSecret):
// what an agent's writes to its lease need. Empty: none.
func (c *Client) WithLeaseSecret(secret string) *Client {
	cc := *c
	cc.leaseSecret = secret
	return &cc
}

// BaseURL returns the server address the client talks to.
func (c *Client) BaseURL() string { return c.baseURL }

// Do sends a JSON request and decodes a JSON answer into out (when not nil).
// An error answer becomes an *APIError; a transport failure is returned
// wrapped as is.
//
// A client WithRetry sends a request warp answered 429 or 503 again, after
// the wait the answer asks for, up to its Max times while ctx allows; the
// last answer is the error.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var b []byte
	if in != nil {
		var err error
		if b, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	maxWait := c.retry.MaxWait
	if maxWait <= 0 {
		maxWait = 10 * time.Second
	}
	for attempt := 1; ; attempt++ {
		h, err := c.do(ctx, method, path, b, in != nil, out)
		var apiErr *APIError
		if attempt > c.retry.Max || !errors.As(err, &apiErr) ||
			apiErr.Status != http.StatusTooManyRequests && apiErr.Status != http.StatusServiceUnavailable {
			return err
		}
		wait := retryAfter(h, time.Now(), maxWait)
		if c.retry.Notify != nil {
			c.retry.Notify(apiErr, wait, attempt+1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// do sends one request and returns the answer's header (nil without an
// answer).
func (c *Client) do(ctx context.Context, method, path string, b []byte, hasBody bool, out any) (http.Header, error) {
	var body io.Reader
	if hasBody {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.leaseSecret != "" {
		req.Header.Set(HeaderLeaseSecret, c.leaseSecret)
	}
	if c.probe {
		req.Header.Set(HeaderProbe, ProbeValue)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.Header, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return resp.Header, Decode(method, path, resp.StatusCode, data, out)
}

// CreateTicket creates a ticket.
func (c *Client) CreateTicket(ctx context.Context, r CreateTicketRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets", r, &t)
	return t, err
}

// Ticket returns one ticket with its lease and verdict.
func (c *Client) Ticket(ctx context.Context, id string) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodGet, "/v1/tickets/"+url.PathEscape(id), nil, &t)
	return t, err
}

// LeaseStatus returns lease epoch of ticket id and the ticket's state and
// epoch now. An agent token may read it with the lease's secret
// (WithLeaseSecret); an admin token may read any lease.
func (c *Client) LeaseStatus(ctx context.Context, id string, epoch int64) (LeaseStatus, error) {
	var s LeaseStatus
	err := c.Do(ctx, http.MethodGet, "/v1/tickets/"+url.PathEscape(id)+"/leases/"+strconv.FormatInt(epoch, 10), nil, &s)
	return s, err
}

// ListOptions selects tickets for ListTickets.
// Every field is optional: its zero value selects nothing.
type ListOptions struct {
	State   string // open, claimed or completed
	Verdict string // of the held lease: active, stalled, looping, spinning, silent, exited or unwired
	Host    string // the held lease's host
	// Labels selects the tickets that carry every one of them.
	Labels []string
	Limit  int    // tickets per page (0: the server's default)
	Cursor string // TicketList.NextCursor of the previous page
}

// ListTickets returns one page of tickets.
func (c *Client) ListTickets(ctx context.Context, o ListOptions) (TicketList, error) {
	q := url.Values{}
	if o.State != "" {
		q.Set("state", o.State)
	}
	if o.Verdict != "" {
		q.Set("verdict", o.Verdict)
	}
	if o.Host != "" {
		q.Set("host", o.Host)
	}
	for _, l := range o.Labels {
		q.Add("label", l)
	}
	if o.Limit > 0 {
		q.Set("limit", fmt.Sprint(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	path := "/v1/tickets"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l TicketList
	err := c.Do(ctx, http.MethodGet, path, nil, &l)
	return l, err
}

// AllTickets follows the cursor through every page. A server whose
// cursors do not move on (an empty page that names a next one, a cursor
// given twice) or that pages past MaxAllTickets is answered with an error
// and the tickets read so far, never followed for ever.
func (c *Client) AllTickets(ctx context.Context, o ListOptions) ([]Ticket, error) {
	var all []Ticket
	seen := map[string]bool{}
	for {
		page, err := c.ListTickets(ctx, o)
		if err != nil {
			return all, err
		}
		all = append(all, page.Tickets...)
		switch next := page.NextCursor; {
		case next == "":
			return all, nil
		case len(page.Tickets) == 0:
			return all, fmt.Errorf("list tickets: the server answered an empty page with a next cursor: not following it")
		case seen[next]:
			return all, fmt.Errorf("list tickets: the server gave cursor %q twice: not following it round again", next)
		case len(all) > MaxAllTickets:
			return all, fmt.Errorf("list tickets: more than %d tickets: stopped (narrow the list with a state, verdict or host)", MaxAllTickets)
		default:
			seen[next] = true
			o.Cursor = next
		}
	}
}

// MaxAllTickets bounds what AllTickets reads: ten times a fleet of a
// million leases' tickets.
const MaxAllTickets = 10_000_000

// EditTicket changes ticket id's title and labels (admin).
func (c *Client) EditTicket(ctx context.Context, id string, r EditTicketRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPatch, "/v1/tickets/"+url.PathEscape(id), r, &t)
	return t, err
}

// CancelTicket cancels ticket id (admin): open or claimed, its held lease
// released; never claimed again until it is reopened.
func (c *Client) CancelTicket(ctx context.Context, id string, r TicketChangeRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/cancel", r, &t)
	return t, err
}

// ReopenTicket reopens completed or cancelled ticket id (admin).
func (c *Client) ReopenTicket(ctx context.Context, id string, r TicketChangeRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/reopen", r, &t)
	return t, err
}

// Events returns a ticket's history.
func (c *Client) Events(ctx context.Context, id string) ([]Event, error) {
	var l EventList
	err := c.Do(ctx, http.MethodGet, "/v1/tickets/"+url.PathEscape(id)+"/events", nil, &l)
	return l.Events, err
}

// Claim claims ticket id, asking for a lease secret (Ticket.LeaseSecret)
// to send with every later write to the lease (WithLeaseSecret).
func (c *Client) Claim(ctx context.Context, id string, r ClaimRequest) (Ticket, error) {
	var t Ticket
	err := c.WithLeaseSecret(LeaseSecretNew).Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/claim", r, &t)
	return t, err
}

// ClaimNext claims the oldest open ticket carrying every label, asking for
// a lease secret like Claim.
func (c *Client) ClaimNext(ctx context.Context, r ClaimNextRequest) (Ticket, error) {
	var t Ticket
	err := c.WithLeaseSecret(LeaseSecretNew).Do(ctx, http.MethodPost, "/v1/claims/next", r, &t)
	return t, err
}

// Release releases the lease of r.Epoch on ticket id.
func (c *Client) Release(ctx context.Context, id string, r ReleaseRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/release", r, &t)
	return t, err
}

// RecordSnapshot reports the snapshot of attempt epoch of ticket id
// (the lease's holder, held or ended). A second report for the same
// attempt is ErrConflict: the first one stays.
func (c *Client) RecordSnapshot(ctx context.Context, id string, epoch int64, s Snapshot) (Attempt, error) {
	var a Attempt
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/attempts/"+strconv.FormatInt(epoch, 10)+"/snapshot", s, &a)
	return a, err
}

// Complete completes ticket id under the lease of r.Epoch.
func (c *Client) Complete(ctx context.Context, id string, r CompleteRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/complete", r, &t)
	return t, err
}

// Heartbeat sends one heartbeat to /v1/heartbeat.
func (c *Client) Heartbeat(ctx context.Context, r HeartbeatRequest) (HeartbeatResponse, error) {
	var hr HeartbeatResponse
	err := c.Do(ctx, http.MethodPost, "/v1/heartbeat", r, &hr)
	return hr, err
}

// ProbeHeartbeat sends r to /v1/heartbeat as a probe (HeaderProbe): warp
// answers whether it takes the token and understands the body, as it
// would a heartbeat's, and applies and counts nothing. An older server
// applies it as a heartbeat: then the answer's Probe is false, or its
// error is the heartbeat's (a probe of an unknown ticket gets ErrNotFound).
func (c *Client) ProbeHeartbeat(ctx context.Context, r HeartbeatRequest) (HeartbeatProbe, error) {
	var p HeartbeatProbe
	cc := *c
	cc.probe = true
	err := cc.Do(ctx, http.MethodPost, "/v1/heartbeat", r, &p)
	return p, err
}

// Adoption returns the per-host schema adoption over window (0: server default).
func (c *Client) Adoption(ctx context.Context, window time.Duration) (Adoption, error) {
	var all Adoption
	err := getPages(ctx, c, "/v1/adoption", window, func(a Adoption) string {
		hosts := append(all.Hosts, a.Hosts...)
		all, all.Hosts = a, hosts
		return a.NextCursor
	})
	return all, err
}

// getPages GETs path?window= page after page, handing each answer to add,
// which returns the next cursor ("" after the last page).
func getPages[T any](ctx context.Context, c *Client, path string, window time.Duration, add func(T) string) error {
	cursor := ""
	for {
		q := url.Values{}
		if window > 0 {
			q.Set("window", window.String())
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page T
		if err := c.Do(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		if cursor = add(page); cursor == "" {
			return nil
		}
	}
}

// Mode returns the current expiry mode.
func (c *Client) Mode(ctx context.Context) (string, error) {
	m, err := c.ModeStatus(ctx)
	return m.Mode, err
}

// ModeStatus returns the current expiry mode with the server's clock when
// it answered (ModeStatus.Now; nil from servers before it was added).
func (c *Client) ModeStatus(ctx context.Context) (ModeStatus, error) {
	var m ModeStatus
	err := c.Do(ctx, http.MethodGet, "/v1/mode", nil, &m)
	return m, err
}

// SetMode switches the expiry mode.
func (c *Client) SetMode(ctx context.Context, mode string, force bool) (string, error) {
	var m ModeBody
	err := c.Do(ctx, http.MethodPut, "/v1/mode", ModeBody{Mode: mode, Force: force}, &m)
	return m.Mode, err
}

// Healthz reports whether the server answers.
func (c *Client) Healthz(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/healthz", nil, nil)
}

// Hosts returns every host with its leases by verdict, hook health,
// adoption over window (0: server default) and alarm, following every page.
func (c *Client) Hosts(ctx context.Context, window time.Duration) (HostList, error) {
	var all HostList
	err := getPages(ctx, c, "/v1/hosts", window, func(l HostList) string {
		hosts := append(all.Hosts, l.Hosts...)
		all, all.Hosts = l, hosts
		return l.NextCursor
	})
	return all, err
}

// ModeHistory returns the latest limit mode changes, oldest first (0: the
// server's default, its maximum).
func (c *Client) ModeHistory(ctx context.Context, limit int) (ModeHistory, error) {
	path := "/v1/mode/history"
	if limit > 0 {
		path += "?" + url.Values{"limit": {strconv.Itoa(limit)}}.Encode()
	}
	var h ModeHistory
	err := c.Do(ctx, http.MethodGet, path, nil, &h)
	return h, err
}
