package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gyrum-labs/warp/client"
)

// fakeWarp stands in for a warp server so the examples run under go test:
// it prints each request it gets, and answers the ones in answers
// ("METHOD /path?query") with the JSON given, copied from a real warp's
// answers; an error body gets its code's status. Anything else is
// answered as warp answers an unknown ticket. The client against the real
// server is tested in warp's own module.
func fakeWarp(answers map[string]string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			key += "?" + r.URL.RawQuery
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("warp got %s", key)
		if len(body) > 0 {
			fmt.Printf(" %s", body)
		}
		if s := r.Header.Get(client.HeaderLeaseSecret); s != "" {
			fmt.Printf(" (%s: %s)", client.HeaderLeaseSecret, s)
		}
		if s := r.Header.Get(client.HeaderProbe); s != "" {
			fmt.Printf(" (%s: %s)", client.HeaderProbe, s)
		}
		fmt.Println()
		answer, ok := answers[key]
		if !ok {
			answer = `{"error":{"code":"not_found","message":"ticket T-2 not found"}}`
		}
		status := http.StatusOK
		var eb client.ErrorBody
		if json.Unmarshal([]byte(answer), &eb) == nil && eb.Error.Code != "" {
			status = client.StatusOf(eb.Error.Code)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
}

// A ticket's answers, as warp gives them.
const (
	openTicket    = `{"id":"T-1","title":"Fix the flaky test","labels":["go"],"state":"open","epoch":0,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-02T15:04:05Z"}`
	claimedTicket = `{"id":"T-1","title":"Fix the flaky test","labels":["go"],"state":"claimed","epoch":1,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-02T15:05:00Z",` +
		`"lease":{"epoch":1,"agent":"claude","host":"h1","state":"held","claimed_at":"2026-01-02T15:05:00Z","last_heartbeat_at":"2026-01-02T15:05:00Z","last_activity_at":"2026-01-02T15:05:00Z","schema_version":0,"refreshed_at":"2026-01-02T15:05:00Z","expires_at":"2026-01-02T15:35:00Z"},"verdict":"active"}`
)

// A heartbeat loop's one step, as a client other than gyrum writes it: the
// lease is over when the answer says so, anything else is retried.
func Example() {
	srv := fakeWarp(map[string]string{
		"POST /v1/heartbeat": `{"error":{"code":"lease_ended","message":"lease 1 of ticket T-1 has ended (released)","detail":{"end_reason":"handing over","lease_state":"released"}}}`,
	})
	defer srv.Close()
	ctx := context.Background()

	c := client.NewClient(srv.URL, "AGENT-TOKEN").WithLeaseSecret("SECRET-FROM-THE-CLAIM")
	_, err := c.Heartbeat(ctx, client.NewHeartbeat("T-1", 1, 12*time.Second))
	var ae *client.APIError
	switch {
	case errors.Is(err, client.ErrLeaseEnded) && errors.As(err, &ae):
		fmt.Printf("the lease was %s (%s): stop and tell the agent\n", ae.DetailValue(client.DetailLeaseState), ae.DetailValue(client.DetailEndReason))
	case errors.Is(err, client.ErrStaleEpoch), errors.Is(err, client.ErrNotHolder):
		fmt.Println("someone else holds the ticket: stop and tell the agent")
	case err != nil:
		fmt.Println("retry within max_retry_gap_s")
	}
	// Output:
	// warp got POST /v1/heartbeat {"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":12} (Warp-Lease-Secret: SECRET-FROM-THE-CLAIM)
	// the lease was released (handing over): stop and tell the agent
}

func ExampleClient_CreateTicket() {
	srv := fakeWarp(map[string]string{"POST /v1/tickets": openTicket})
	defer srv.Close()

	c := client.NewClient(srv.URL, "ADMIN-TOKEN")
	t, err := c.CreateTicket(context.Background(), client.CreateTicketRequest{ID: "T-1", Title: "Fix the flaky test", Labels: []string{"go"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.ID, t.State, t.CreatedAt.Format(time.RFC3339))
	// Output:
	// warp got POST /v1/tickets {"id":"T-1","title":"Fix the flaky test","labels":["go"]}
	// T-1 open 2026-01-02T15:04:05Z
}

func ExampleClient_Ticket() {
	srv := fakeWarp(map[string]string{"GET /v1/tickets/T-1": claimedTicket})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	t, err := c.Ticket(context.Background(), "T-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.State, t.Verdict, "held by", t.Lease.Agent, "on", t.Lease.Host, "until", t.Lease.ExpiresAt.Format(time.Kitchen))

	_, err = c.Ticket(context.Background(), "T-2")
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// warp got GET /v1/tickets/T-1
	// claimed active held by claude on h1 until 3:35PM
	// warp got GET /v1/tickets/T-2
	// true
}

func ExampleClient_ListTickets() {
	srv := fakeWarp(map[string]string{
		"GET /v1/tickets?label=go&limit=50&state=claimed": `{"tickets":[` + claimedTicket + `]}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	page, err := c.ListTickets(context.Background(), client.ListOptions{State: "claimed", Labels: []string{"go"}, Limit: 50})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range page.Tickets {
		fmt.Println(t.ID, t.Verdict)
	}
	fmt.Printf("next page: %q\n", page.NextCursor)
	// Output:
	// warp got GET /v1/tickets?label=go&limit=50&state=claimed
	// T-1 active
	// next page: ""
}

func ExampleClient_AllTickets() {
	srv := fakeWarp(map[string]string{
		"GET /v1/tickets?limit=1":           `{"tickets":[` + claimedTicket + `],"next_cursor":"c1"}`,
		"GET /v1/tickets?cursor=c1&limit=1": `{"tickets":[{"id":"T-2","title":"Bump the Go version","labels":[],"state":"open","epoch":0,"created_at":"2026-01-02T15:06:00Z","updated_at":"2026-01-02T15:06:00Z"}]}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	all, err := c.AllTickets(context.Background(), client.ListOptions{Limit: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range all {
		fmt.Println(t.ID, t.State)
	}
	// Output:
	// warp got GET /v1/tickets?limit=1
	// warp got GET /v1/tickets?cursor=c1&limit=1
	// T-1 claimed
	// T-2 open
}

func ExampleClient_Events() {
	srv := fakeWarp(map[string]string{
		"GET /v1/tickets/T-1/events": `{"events":[` +
			`{"id":1,"ticket":"T-1","kind":"created","at":"2026-01-02T15:04:05Z","data":{"title":"Fix the flaky test"}},` +
			`{"id":2,"ticket":"T-1","epoch":1,"kind":"claimed","at":"2026-01-02T15:05:00Z","data":{"agent":"claude","host":"h1"}},` +
			`{"id":3,"ticket":"T-1","epoch":1,"kind":"first-v2-heartbeat","at":"2026-01-02T15:05:01Z","data":{"host":"h1"}}]}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	events, err := c.Events(context.Background(), "T-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range events {
		fmt.Println(e.At.Format("15:04:05"), e.Epoch, e.Kind, e.Data)
	}
	// Output:
	// warp got GET /v1/tickets/T-1/events
	// 15:04:05 0 created map[title:Fix the flaky test]
	// 15:05:00 1 claimed map[agent:claude host:h1]
	// 15:05:01 1 first-v2-heartbeat map[host:h1]
}

// A claim asks for a lease secret: every later write to the lease sends it
// back (WithLeaseSecret).
func ExampleClient_Claim() {
	srv := fakeWarp(map[string]string{
		"POST /v1/tickets/T-1/claim": claimedTicket[:len(claimedTicket)-1] + `,"lease_secret":"c3410dbd"}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "AGENT-TOKEN")

	t, err := c.Claim(context.Background(), "T-1", client.ClaimRequest{Agent: "claude", Host: "h1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.State, "epoch", t.Lease.Epoch, "secret", t.LeaseSecret)
	// Output:
	// warp got POST /v1/tickets/T-1/claim {"agent":"claude","host":"h1"} (Warp-Lease-Secret: new)
	// claimed epoch 1 secret c3410dbd
}

func ExampleClient_ClaimNext() {
	srv := fakeWarp(map[string]string{
		"POST /v1/claims/next": `{"error":{"code":"no_open_ticket","message":"no open ticket with labels go"}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "AGENT-TOKEN")

	t, err := c.ClaimNext(context.Background(), client.ClaimNextRequest{Agent: "claude", Host: "h1", Labels: []string{"go"}})
	switch {
	case errors.Is(err, client.ErrNoOpenTicket):
		fmt.Println("nothing to do")
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("claimed", t.ID)
	}
	// Output:
	// warp got POST /v1/claims/next {"agent":"claude","host":"h1","labels":["go"]} (Warp-Lease-Secret: new)
	// nothing to do
}

func ExampleClient_Release() {
	srv := fakeWarp(map[string]string{
		"POST /v1/tickets/T-1/release": `{"id":"T-1","title":"Fix the flaky test","labels":["go"],"state":"open","epoch":1,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-02T15:20:00Z",` +
			`"lease":{"epoch":1,"agent":"claude","host":"h1","state":"released","claimed_at":"2026-01-02T15:05:00Z","last_heartbeat_at":"2026-01-02T15:19:00Z","last_activity_at":"2026-01-02T15:19:00Z","schema_version":2,"expires_at":"2026-01-02T15:49:00Z","ended_at":"2026-01-02T15:20:00Z","end_reason":"handing over"}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "AGENT-TOKEN").WithLeaseSecret("c3410dbd")

	t, err := c.Release(context.Background(), "T-1", client.ReleaseRequest{Epoch: 1, Reason: "handing over"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.State, "lease", t.Lease.State, t.Lease.EndReason)
	// Output:
	// warp got POST /v1/tickets/T-1/release {"epoch":1,"reason":"handing over"} (Warp-Lease-Secret: c3410dbd)
	// open lease released handing over
}

func ExampleClient_EditTicket() {
	srv := fakeWarp(map[string]string{
		"PATCH /v1/tickets/T-1": `{"id":"T-1","title":"Fix the flaky login test","labels":["go","ui"],"state":"open","epoch":0,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-02T16:00:00Z"}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	t, err := c.EditTicket(context.Background(), "T-1", client.EditTicketRequest{
		Title: client.Ptr("Fix the flaky login test"), AddLabels: []string{"ui"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Title, t.Labels)
	// Output:
	// warp got PATCH /v1/tickets/T-1 {"title":"Fix the flaky login test","add_labels":["ui"]}
	// Fix the flaky login test [go ui]
}

func ExampleClient_CancelTicket() {
	srv := fakeWarp(map[string]string{
		"POST /v1/tickets/T-1/cancel": `{"id":"T-1","title":"Fix the flaky test","labels":["go"],"state":"cancelled","epoch":1,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-02T15:20:00Z",` +
			`"lease":{"epoch":1,"agent":"claude","host":"h1","state":"released","claimed_at":"2026-01-02T15:05:00Z","last_heartbeat_at":"2026-01-02T15:19:00Z","last_activity_at":"2026-01-02T15:19:00Z","schema_version":2,"expires_at":"2026-01-02T15:49:00Z","ended_at":"2026-01-02T15:20:00Z","end_reason":"cancelled: duplicate of T-9"}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	t, err := c.CancelTicket(context.Background(), "T-1", client.TicketChangeRequest{Reason: "duplicate of T-9"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.State, "lease", t.Lease.State, t.Lease.EndReason)
	_, err = c.ReopenTicket(context.Background(), "T-2", client.TicketChangeRequest{})
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// warp got POST /v1/tickets/T-1/cancel {"reason":"duplicate of T-9"}
	// cancelled lease released cancelled: duplicate of T-9
	// warp got POST /v1/tickets/T-2/reopen {}
	// true
}

func ExampleClient_ReopenTicket() {
	srv := fakeWarp(map[string]string{
		"POST /v1/tickets/T-1/reopen": `{"id":"T-1","title":"Fix the flaky test","labels":["go"],"state":"open","epoch":1,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-03T09:00:00Z",` +
			`"lease":{"epoch":1,"agent":"claude","host":"h1","state":"completed","claimed_at":"2026-01-02T15:05:00Z","last_heartbeat_at":"2026-01-02T15:29:00Z","last_activity_at":"2026-01-02T15:29:00Z","schema_version":2,"expires_at":"2026-01-02T15:59:00Z","ended_at":"2026-01-02T15:30:00Z","pr_url":"https://example.com/pr/7"}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	t, err := c.ReopenTicket(context.Background(), "T-1", client.TicketChangeRequest{Reason: "the fix regressed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.State, "next claim's epoch:", t.Epoch+1)
	// Output:
	// warp got POST /v1/tickets/T-1/reopen {"reason":"the fix regressed"}
	// open next claim's epoch: 2
}

func ExampleClient_Complete() {
	srv := fakeWarp(map[string]string{
		"POST /v1/tickets/T-1/complete": `{"id":"T-1","title":"Fix the flaky test","labels":["go"],"state":"completed","epoch":1,"created_at":"2026-01-02T15:04:05Z","updated_at":"2026-01-02T15:30:00Z",` +
			`"lease":{"epoch":1,"agent":"claude","host":"h1","state":"completed","claimed_at":"2026-01-02T15:05:00Z","last_heartbeat_at":"2026-01-02T15:29:00Z","last_activity_at":"2026-01-02T15:29:00Z","schema_version":2,"expires_at":"2026-01-02T15:59:00Z","ended_at":"2026-01-02T15:30:00Z","pr_url":"https://example.com/pr/7"}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "AGENT-TOKEN").WithLeaseSecret("c3410dbd")

	t, err := c.Complete(context.Background(), "T-1", client.CompleteRequest{Epoch: 1, PRURL: "https://example.com/pr/7"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.State, t.Lease.PRURL)
	// Output:
	// warp got POST /v1/tickets/T-1/complete {"epoch":1,"pr_url":"https://example.com/pr/7"} (Warp-Lease-Secret: c3410dbd)
	// completed https://example.com/pr/7
}

// NewHeartbeat builds the schema version 2 body; Ptr fills the other
// optional fields.
func ExampleClient_Heartbeat() {
	srv := fakeWarp(map[string]string{
		"POST /v1/heartbeat": `{"ticket":"T-1","epoch":1,"expires_at":"2026-01-02T15:35:00Z","verdict":"active","mode":"activity","extended":true,"max_retry_gap_s":540}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "AGENT-TOKEN").WithLeaseSecret("c3410dbd")

	hb := client.NewHeartbeat("T-1", 1, 12*time.Second)
	hb.HookSeen = client.Ptr(true)
	res, err := c.Heartbeat(context.Background(), hb)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Verdict, "extended:", res.Extended, "retry within", time.Duration(res.MaxRetryGapS)*time.Second)
	// Output:
	// warp got POST /v1/heartbeat {"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":12,"hook_seen":true} (Warp-Lease-Secret: c3410dbd)
	// active extended: true retry within 9m0s
}

// A probe checks that warp takes this token's heartbeats and understands
// v2, and leaves no trace: what gyrum doctor sends.
func ExampleClient_ProbeHeartbeat() {
	srv := fakeWarp(map[string]string{
		"POST /v1/heartbeat": `{"probe":true,"schema_version":2,"ticket":"gyrum-doctor-probe"}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "AGENT-TOKEN")

	p, err := c.ProbeHeartbeat(context.Background(), client.NewHeartbeat("gyrum-doctor-probe", 1, 0))
	switch {
	case errors.Is(err, client.ErrUnsupportedSchema):
		fmt.Println("this warp does not speak v2")
	case err != nil && !errors.Is(err, client.ErrNotFound): // an older warp applies it: an unknown ticket
		fmt.Println(err)
	case p.Probe:
		fmt.Println("warp takes v2 heartbeats with this token")
	}
	// Output:
	// warp got POST /v1/heartbeat {"schema_version":2,"ticket":"gyrum-doctor-probe","epoch":1,"activity_age_s":0} (Warp-Probe: 1)
	// warp takes v2 heartbeats with this token
}

func ExampleClient_Adoption() {
	srv := fakeWarp(map[string]string{
		"GET /v1/adoption?window=24h0m0s": `{"window":"24h0m0s","hosts":[{"host":"h1","last_schema_version":2,"last_seen":"2026-01-02T15:05:01Z","v1_count":0,"v2_count":1}],` +
			`"summary":{"hosts":1,"v2_hosts":1,"ready_for_activity_mode":true}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	a, err := c.Adoption(context.Background(), 24*time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range a.Hosts {
		fmt.Println(h.Host, "v1", h.V1Count, "v2", h.V2Count)
	}
	fmt.Println("ready for activity mode:", a.Summary.ReadyForActivityMode)
	// Output:
	// warp got GET /v1/adoption?window=24h0m0s
	// h1 v1 0 v2 1
	// ready for activity mode: true
}

func ExampleClient_Mode() {
	srv := fakeWarp(map[string]string{"GET /v1/mode": `{"mode":"transition"}`})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	mode, err := c.Mode(context.Background())
	fmt.Println(mode, err)
	// Output:
	// warp got GET /v1/mode
	// transition <nil>
}

func ExampleClient_ModeStatus() {
	srv := fakeWarp(map[string]string{"GET /v1/mode": `{"mode":"transition","now":"2026-01-02T15:04:05Z"}`})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	m, err := c.ModeStatus(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	// Judge lease ages by the server's clock, not this host's.
	fmt.Println(m.Mode, m.Now.Format(time.RFC3339))
	// Output:
	// warp got GET /v1/mode
	// transition 2026-01-02T15:04:05Z
}

func ExampleClient_SetMode() {
	srv := fakeWarp(map[string]string{
		"PUT /v1/mode": `{"error":{"code":"adoption_incomplete","message":"refusing activity mode: 1 host(s) sent v1 heartbeats in the last 24h0m0s (h2); migrate them or pass --force"}}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	_, err := c.SetMode(context.Background(), "activity", false)
	fmt.Println(errors.Is(err, client.ErrAdoptionIncomplete))
	fmt.Println(err)
	// Output:
	// warp got PUT /v1/mode {"mode":"activity"}
	// true
	// warp: refusing activity mode: 1 host(s) sent v1 heartbeats in the last 24h0m0s (h2); migrate them or pass --force (409 adoption_incomplete)
}

func ExampleClient_Healthz() {
	srv := fakeWarp(map[string]string{"GET /healthz": `{"status":"ok"}`})
	defer srv.Close()

	fmt.Println(client.NewClient(srv.URL, "").Healthz(context.Background()))
	// Output:
	// warp got GET /healthz
	// <nil>
}

func ExampleClient_Hosts() {
	srv := fakeWarp(map[string]string{
		"GET /v1/hosts?window=1h0m0s": `{"window":"1h0m0s","hosts":[{"host":"h1","leases":1,"verdicts":{"active":1,"exited":0,"silent":0,"stalled":0,"unwired":0},` +
			`"hook":{"seen":1,"not_seen":0,"unknown":0},"adoption":{"host":"h1","last_schema_version":2,"last_seen":"2026-01-02T15:05:01Z","v1_count":0,"v2_count":1},"alarm":null}],"alarms":0}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	l, err := c.Hosts(context.Background(), time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range l.Hosts {
		fmt.Println(h.Host, h.Leases, "leases,", h.Verdicts["active"], "active, alarm:", h.Alarm != nil)
	}
	// Output:
	// warp got GET /v1/hosts?window=1h0m0s
	// h1 1 leases, 1 active, alarm: false
}

func ExampleClient_ModeHistory() {
	srv := fakeWarp(map[string]string{
		"GET /v1/mode/history?limit=10": `{"changes":[{"id":4,"at":"2026-01-02T16:00:00Z","from":"transition","to":"activity","forced":false}]}`,
	})
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	h, err := c.ModeHistory(context.Background(), 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range h.Changes {
		fmt.Println(m.At.Format(time.RFC3339), m.From, "->", m.To, "forced:", m.Forced)
	}
	// Output:
	// warp got GET /v1/mode/history?limit=10
	// 2026-01-02T16:00:00Z transition -> activity forced: false
}

// Do sends any request of the API, for calls the Client has no method for.
func ExampleClient_Do() {
	srv := fakeWarp(map[string]string{"GET /readyz": `{"status":"ok"}`})
	defer srv.Close()
	c := client.NewClient(srv.URL, "")

	var h client.Health
	err := c.Do(context.Background(), http.MethodGet, "/readyz", nil, &h)
	fmt.Println(h.Status, err)
	// Output:
	// warp got GET /readyz
	// ok <nil>
}

// Decode reads an answer fetched by other means than Client.Do.
func ExampleDecode() {
	body := []byte(`{"error":{"code":"stale_epoch","message":"epoch 1 of ticket T-1 is stale: the current epoch is 2"}}`)
	err := client.Decode(http.MethodPost, "/v1/heartbeat", http.StatusConflict, body, nil)
	fmt.Println(errors.Is(err, client.ErrStaleEpoch))

	// A page that is not warp's (a proxy's) has no code of its own: the
	// status's is guessed.
	err = client.Decode(http.MethodPost, "/v1/heartbeat", http.StatusBadGateway, []byte("<html>Bad Gateway</html>"), nil)
	var ae *client.APIError
	if errors.As(err, &ae) {
		fmt.Println(ae.Status, ae.Code, "guessed:", ae.Guessed)
	}
	// Output:
	// true
	// 502 internal guessed: true
}

// Stream follows the server's changes: here a stand-in sends what warp
// sends when a ticket is claimed, then ends the stream as a stopping warp
// does. A client then connects again after Retry and reads its list anew.
func ExampleClient_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("warp got", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "retry: 2000\nevent: hello\ndata: {\"kind\":\"hello\",\"now\":1767366300000}\n\n")
		io.WriteString(w, "event: update\ndata: "+claimedRow+"\n\n")
	}))
	defer srv.Close()
	c := client.NewClient(srv.URL, "ADMIN-TOKEN")

	s, err := c.Stream(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for {
		m, err := s.Next()
		if err != nil {
			fmt.Printf("stream ended (%v): connect again in %s\n", err, s.Retry())
			return
		}
		switch {
		case m.Kind == client.StreamHello:
			fmt.Println("connected; server time", time.UnixMilli(m.Now).UTC().Format(time.RFC3339))
		case m.Ticket != nil:
			t := m.Ticket
			fmt.Println(m.Kind, t.ID, t.State, t.Verdict, "by", t.Agent, "on", t.Host, "until", time.UnixMilli(t.ExpiresAt).UTC().Format(time.Kitchen))
		}
	}
	// Output:
	// warp got GET /v1/events/stream
	// connected; server time 2026-01-02T15:05:00Z
	// claimed T-1 claimed active by claude on h1 until 3:35PM
	// stream ended (EOF): connect again in 2s
}

// An update message as warp sends it for the claim of claimedTicket.
const claimedRow = `{"kind":"claimed","ticket":{"id":"T-1","title":"Fix the flaky test","state":"claimed","epoch":1,"verdict":"active","agent":"claude","host":"h1","schema_version":0,"heartbeat_at":1767366300000,"activity_at":1767366300000,"expires_at":1767368100000},"id":"T-1","now":1767366300000}`
