package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

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
	// The database never answers: without the bounds, neither would warp.
	const hung = 10 * time.Second
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
	beat := func(tk client.Ticket) warptest.Answer {
		return warptest.Ask(t, "POST", srv.URL()+"/v1/heartbeat",
			fmt.Sprintf(`{"schema_version":2,"ticket":%q,"epoch":%d,"host":"h","agent":"a","activity_age_s":0}`, tk.ID, tk.Lease.Epoch), hung)
	}
	if a := beat(tickets[0]); a.Status != http.StatusOK {
		t.Fatalf("heartbeat before the blackhole: %d %s", a.Status, a.Code)
	}

	p.setBlackhole(true)
	for round := range 3 { // the requests that find the batch stuck, and the later ones
		var wg sync.WaitGroup
		answers := make([]warptest.Answer, agents)
		for i, tk := range tickets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = beat(tk)
			}()
		}
		wg.Wait()
		for i, a := range answers {
			if a.Status != http.StatusServiceUnavailable || a.Code != "unavailable" || a.RetryAfter != "1" {
				t.Errorf("round %d, heartbeat %d: %d %q (Retry-After %q) after %v, want 503 unavailable with Retry-After: 1",
					round, i, a.Status, a.Code, a.RetryAfter, a.Took)
			}
		}
		t.Logf("round %d: heartbeats answered %d %s after %v to %v", round, answers[0].Status, answers[0].Code,
			minTook(answers).Round(time.Millisecond), maxTook(answers).Round(time.Millisecond))
	}
	for range 3 {
		a := warptest.Ask(t, "GET", srv.URL()+"/readyz", "", hung)
		if a.Status != http.StatusServiceUnavailable || a.Code != "unavailable" {
			t.Errorf("/readyz with the database blackholed: %d %q after %v, want 503 unavailable", a.Status, a.Code, a.Took)
		}
		t.Logf("/readyz: %d after %v", a.Status, a.Took.Round(time.Millisecond))
	}

	p.setBlackhole(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		a := beat(tickets[0])
		if a.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat 15 s after the path came back: %d %s", a.Status, a.Code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if a := warptest.Ask(t, "GET", srv.URL()+"/readyz", "", hung); a.Status != http.StatusOK {
		t.Errorf("/readyz after the path came back: %d %s", a.Status, a.Code)
	}
	for _, m := range srv.Metrics(t, "")["warp_heartbeats_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			// Every known outcome is there from the first scrape, at 0.
			if l.GetName() == "outcome" && l.GetValue() != "ok" && l.GetValue() != "unavailable" && m.GetCounter().GetValue() > 0 {
				t.Errorf("warp_heartbeats_total counts %v heartbeats with outcome %s, want ok or unavailable", m.GetCounter().GetValue(), l.GetValue())
			}
		}
	}
}

func minTook(as []warptest.Answer) time.Duration {
	m := as[0].Took
	for _, a := range as {
		m = min(m, a.Took)
	}
	return m
}

func maxTook(as []warptest.Answer) time.Duration {
	m := as[0].Took
	for _, a := range as {
		m = max(m, a.Took)
	}
	return m
}
