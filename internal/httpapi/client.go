package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultURL is where clients look for warp when WARP_URL is unset.
const DefaultURL = "http://127.0.0.1:7077"

// Client talks to a warp server. The zero value is not usable: use NewClient.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
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
		http:    &http.Client{Timeout: 30 * time.Second},
	}
}

// WithHTTPClient returns a copy of c that sends requests with hc.
func (c *Client) WithHTTPClient(hc *http.Client) *Client {
	cc := *c
	cc.http = hc
	return &cc
}

// BaseURL returns the server address the client talks to.
func (c *Client) BaseURL() string { return c.baseURL }

// Do sends a JSON request and decodes a JSON answer into out (when not nil).
// An error answer becomes an *APIError; a transport failure is returned
// wrapped as is.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &APIError{Status: resp.StatusCode, Code: codeForStatus(resp.StatusCode), Message: fmt.Sprintf("%s %s: %s", method, path, msg)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func codeForStatus(status int) string {
	for _, r := range errorTable {
		if r.status == status {
			return r.code
		}
	}
	return CodeInternal
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

// ListOptions selects tickets for ListTickets.
type ListOptions struct {
	State   string
	Verdict string
	Host    string
	Limit   int
	Cursor  string
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

// AllTickets follows the cursor through every page.
func (c *Client) AllTickets(ctx context.Context, o ListOptions) ([]Ticket, error) {
	var all []Ticket
	for {
		page, err := c.ListTickets(ctx, o)
		if err != nil {
			return all, err
		}
		all = append(all, page.Tickets...)
		if page.NextCursor == "" {
			return all, nil
		}
		o.Cursor = page.NextCursor
	}
}

// Events returns a ticket's history.
func (c *Client) Events(ctx context.Context, id string) ([]Event, error) {
	var l EventList
	err := c.Do(ctx, http.MethodGet, "/v1/tickets/"+url.PathEscape(id)+"/events", nil, &l)
	return l.Events, err
}

// Claim claims ticket id.
func (c *Client) Claim(ctx context.Context, id string, r ClaimRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/claim", r, &t)
	return t, err
}

// ClaimNext claims the oldest open ticket carrying every label.
func (c *Client) ClaimNext(ctx context.Context, r ClaimNextRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/claims/next", r, &t)
	return t, err
}

// Release releases the lease of r.Epoch on ticket id.
func (c *Client) Release(ctx context.Context, id string, r ReleaseRequest) (Ticket, error) {
	var t Ticket
	err := c.Do(ctx, http.MethodPost, "/v1/tickets/"+url.PathEscape(id)+"/release", r, &t)
	return t, err
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

// Adoption returns the per-host schema adoption over window (0: server default).
func (c *Client) Adoption(ctx context.Context, window time.Duration) (Adoption, error) {
	path := "/v1/adoption"
	if window > 0 {
		path += "?window=" + url.QueryEscape(window.String())
	}
	var a Adoption
	err := c.Do(ctx, http.MethodGet, path, nil, &a)
	return a, err
}

// Mode returns the current expiry mode.
func (c *Client) Mode(ctx context.Context) (string, error) {
	var m ModeBody
	err := c.Do(ctx, http.MethodGet, "/v1/mode", nil, &m)
	return m.Mode, err
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
