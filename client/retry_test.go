package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// refusing answers its first n requests with status (warp's error body,
// Retry-After: after), then 200 with a ticket; it records each request's
// body.
type refusing struct {
	mu     sync.Mutex
	n      int
	status int
	after  string
	bodies []string
}

func (r *refusing) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	refuse := len(r.bodies) <= r.n
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if refuse {
		if r.after != "" {
			w.Header().Set("Retry-After", r.after)
		}
		w.WriteHeader(r.status)
		code := "too_many_connections"
		if r.status == http.StatusServiceUnavailable {
			code = "unavailable"
		}
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": "try later"}})
		return
	}
	json.NewEncoder(w).Encode(client.Ticket{ID: "T-1", State: "open", Epoch: 2})
}

func (r *refusing) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// A client WithRetry sends a request refused with 429 or 503 again, body
// and all, after the Retry-After the answer asks for (seconds or an HTTP
// date), as many times as it may; then the refusal is the error. Without
// it, the first refusal is.
func TestRetryRefusedRequests(t *testing.T) {
	ctx := context.Background()
	req := client.ReleaseRequest{Epoch: 1, Reason: "done"}
	for _, c := range []struct {
		name        string
		status, n   int
		after       string
		retry       client.Retry
		wantErr     bool
		wantTries   int
		wantNotices int
	}{
		{"429 twice, then served", http.StatusTooManyRequests, 2, "0", client.Retry{Max: 3}, false, 3, 2},
		{"503 with an HTTP date", http.StatusServiceUnavailable, 1, time.Now().Add(-time.Second).UTC().Format(http.TimeFormat), client.Retry{Max: 3}, false, 2, 1},
		{"more refusals than retries", http.StatusTooManyRequests, 5, "0", client.Retry{Max: 2}, true, 3, 2},
		{"no retry", http.StatusServiceUnavailable, 1, "0", client.Retry{}, true, 1, 0},
		{"a 500 is not retried", http.StatusInternalServerError, 1, "0", client.Retry{Max: 3}, true, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &refusing{n: c.n, status: c.status, after: c.after}
			srv := httptest.NewServer(h)
			defer srv.Close()
			notices := 0
			c.retry.Notify = func(err *client.APIError, wait time.Duration, attempt int) {
				notices++
				if err.Status != c.status || wait != 0 || attempt != notices+1 {
					t.Errorf("notice %d: %v, wait %v, attempt %d", notices, err, wait, attempt)
				}
			}
			_, err := client.NewClient(srv.URL, "").WithRetry(c.retry).Release(ctx, "T-1", req)
			var apiErr *client.APIError
			if c.wantErr != (err != nil) || err != nil && (!errors.As(err, &apiErr) || apiErr.Status != c.status) {
				t.Fatalf("error %v, want an error: %v (status %d)", err, c.wantErr, c.status)
			}
			got := h.requests()
			if len(got) != c.wantTries || notices != c.wantNotices {
				t.Fatalf("%d requests and %d notices, want %d and %d", len(got), notices, c.wantTries, c.wantNotices)
			}
			for i, b := range got {
				if b != got[0] || b == "" {
					t.Fatalf("request %d sent %q, the first %q", i+1, b, got[0])
				}
			}
		})
	}
}

// A wait is capped by MaxWait, and ends with the context.
func TestRetryWaitIsBounded(t *testing.T) {
	h := &refusing{n: 10, status: http.StatusTooManyRequests, after: "3600"}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var waits []time.Duration
	c := client.NewClient(srv.URL, "").WithRetry(client.Retry{Max: 1, MaxWait: time.Millisecond,
		Notify: func(_ *client.APIError, wait time.Duration, _ int) { waits = append(waits, wait) }})
	if _, err := c.Ticket(context.Background(), "T-1"); err == nil || len(waits) != 1 || waits[0] != time.Millisecond {
		t.Fatalf("err %v, waits %v: want the refusal after one wait of 1ms (Retry-After 3600 capped)", err, waits)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c = client.NewClient(srv.URL, "").WithRetry(client.Retry{Max: 5, MaxWait: time.Hour,
		Notify: func(*client.APIError, time.Duration, int) { cancel() }})
	if _, err := c.Ticket(ctx, "T-1"); err == nil || len(h.requests()) != 3 {
		t.Fatalf("err %v after %d requests: want the refusal, with no request after the context ended", err, len(h.requests()))
	}
}
