package warptest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// Answer is what one request got: its status, Retry-After, warp's error
// code, and how long it took.
type Answer struct {
	Status     int
	RetryAfter string
	Code       string
	Took       time.Duration
}

// Ask sends a request to url (body, when not empty, as is) and waits up to
// wait for the answer; a request that got none is an error of t (the
// Answer then has only Took).
func Ask(t testing.TB, method, url, body string, wait time.Duration) Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: no answer: %v", method, url, err)
		return Answer{Took: time.Since(start)}
	}
	defer resp.Body.Close()
	a := Answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Took: time.Since(start)}
	var eb client.ErrorBody
	if json.NewDecoder(resp.Body).Decode(&eb) == nil {
		a.Code = eb.Error.Code
	}
	return a
}
