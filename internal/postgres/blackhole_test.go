package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// answer is what one request got: its status, Retry-After, error code,
// and how long it took.
type answer struct {
	status     int
	retryAfter string
	code       string
	took       time.Duration
}

// ask sends a request to url (a JSON body when body is not empty) and
// waits up to 10 s for the answer; a request that got none fails t.
func ask(t *testing.T, method, url, body string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: no answer: %v", method, url, err)
		return answer{took: time.Since(start)}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(start)}
	var eb client.ErrorBody
	if json.NewDecoder(resp.Body).Decode(&eb) == nil {
		a.code = eb.Error.Code
	}
	return a
}

// PostgreSQL blackholed under a real warp (a partition that drops
// packets: connections stay open, nothing is answered): heartbeats get
// 503 unavailable with Retry-After within the request's database bound,
// never 500 internal, and /readyz answers 503 within a second. Once the
// path is back, heartbeats go through again. Before: 500 internal (the
// requests' contexts ended while the batch waited on the database for
// good) and a /readyz that hung.
func TestBlackholedDatabaseAnswers503(t *testing.T) {
	_, u := newSchema(t)
	p := startProxy(t, pgHostPort(t, u))
	const bound = time.Second
	srv := warpclitest.Start(t, func(c *warpcli.ServeConfig) {
		c.DB = p.via(t, u)
		c.DatabaseTimeout = bound
	})
	ctx := context.Background()
	c := srv.Client("")
	const agents = 8
	var tickets []client.Ticket
	for i := range agents {
		id := fmt.Sprintf("T-%d", i)
		if _, err := c.CreateTicket(ctx, client.CreateTicketRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
		tk, err := c.Claim(ctx, id, client.ClaimRequest{Agent: "a", Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	beat := func(tk client.Ticket) answer {
		return ask(t, "POST", srv.URL()+"/v1/heartbeat",
			fmt.Sprintf(`{"schema_version":2,"ticket":%q,"epoch":%d,"host":"h","agent":"a","activity_age_s":0}`, tk.ID, tk.Lease.Epoch))
	}
	if a := beat(tickets[0]); a.status != http.StatusOK {
		t.Fatalf("heartbeat before the blackhole: %d %s", a.status, a.code)
	}

	p.setBlackhole(true)
	for round := range 3 { // the requests that find the batch stuck, and the later ones
		var wg sync.WaitGroup
		answers := make([]answer, agents)
		for i, tk := range tickets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = beat(tk)
			}()
		}
		wg.Wait()
		for i, a := range answers {
			if a.status != http.StatusServiceUnavailable || a.code != "unavailable" || a.retryAfter != "1" {
				t.Errorf("round %d, heartbeat %d: %d %q (Retry-After %q) after %v, want 503 unavailable with Retry-After: 1",
					round, i, a.status, a.code, a.retryAfter, a.took)
			}
			if a.took > bound+time.Second {
				t.Errorf("round %d, heartbeat %d: answered after %v, want within the bound (%v) and a second", round, i, a.took, bound)
			}
		}
		t.Logf("round %d: heartbeats answered %d %s after %v to %v", round, answers[0].status, answers[0].code,
			minTook(answers).Round(time.Millisecond), maxTook(answers).Round(time.Millisecond))
	}
	for range 3 {
		a := ask(t, "GET", srv.URL()+"/readyz", "")
		if a.status != http.StatusServiceUnavailable || a.code != "unavailable" || a.took > time.Second {
			t.Errorf("/readyz with the database blackholed: %d %q after %v, want 503 unavailable within a second", a.status, a.code, a.took)
		}
		t.Logf("/readyz: %d after %v", a.status, a.took.Round(time.Millisecond))
	}

	p.setBlackhole(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		a := beat(tickets[0])
		if a.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat 15 s after the path came back: %d %s", a.status, a.code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if a := ask(t, "GET", srv.URL()+"/readyz", ""); a.status != http.StatusOK {
		t.Errorf("/readyz after the path came back: %d %s", a.status, a.code)
	}
	for _, m := range srv.Metrics(t, "")["warp_heartbeats_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "outcome" && l.GetValue() != "ok" && l.GetValue() != "unavailable" {
				t.Errorf("warp_heartbeats_total counts %v heartbeats with outcome %s, want ok or unavailable", m.GetCounter().GetValue(), l.GetValue())
			}
		}
	}
}

func minTook(as []answer) time.Duration {
	m := as[0].took
	for _, a := range as {
		m = min(m, a.took)
	}
	return m
}

func maxTook(as []answer) time.Duration {
	m := as[0].took
	for _, a := range as {
		m = max(m, a.took)
	}
	return m
}
