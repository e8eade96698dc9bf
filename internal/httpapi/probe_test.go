package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/apiobserve"
	"github.com/gyrum-labs/warp/internal/httpapi"
)

// A probe heartbeat (Warp-Probe: 1) is checked like a heartbeat — the
// token, the body, the schema version — and answered, but nothing is
// applied, recorded or counted: gyrum doctor's check leaves no
// warp_heartbeats_total{outcome="not_found"} behind (issue 46).
func TestProbeHeartbeatIsCheckedNotCounted(t *testing.T) {
	outcomes := 0
	o := withTokens()
	o.cfg.OnHeartbeat = func(apiobserve.HeartbeatOutcome) { outcomes++ }
	e := newEnv(t, o)
	e.create("T-1")
	e.claim("T-1", "h1")
	before := e.snapshot()
	ctx := context.Background()

	agent := client.NewClient(e.srv.URL, agentToken)
	p, err := agent.ProbeHeartbeat(ctx, client.NewHeartbeat("gyrum-doctor-probe", 1, 0))
	if err != nil || !p.Probe || p.SchemaVersion != 2 || p.Ticket != "gyrum-doctor-probe" {
		t.Fatalf("v2 probe of an unknown ticket: %+v, %v", p, err)
	}
	// A probe of a held lease, with a body that would extend it, extends
	// nothing either.
	e.clock.Advance(1e9)
	if p, err := agent.ProbeHeartbeat(ctx, client.NewHeartbeat("T-1", 1, 0)); err != nil || !p.Probe {
		t.Fatalf("probe of T-1: %+v, %v", p, err)
	}
	if p, err := agent.ProbeHeartbeat(ctx, client.HeartbeatRequest{Ticket: "T-1", Host: "h1"}); err != nil || p.SchemaVersion != 1 {
		t.Fatalf("v1 probe: %+v, %v", p, err)
	}
	if after := e.snapshot(); after != before {
		t.Errorf("probes changed the database:\nbefore %s\nafter %s", before, after)
	}

	// Refused as a heartbeat would be.
	_, err = agent.ProbeHeartbeat(ctx, client.HeartbeatRequest{SchemaVersion: client.Ptr(3), Ticket: "T-1"})
	if !errors.Is(err, client.ErrUnsupportedSchema) {
		t.Errorf("v3 probe: %v, want unsupported_schema_version", err)
	}
	_, err = agent.ProbeHeartbeat(ctx, client.HeartbeatRequest{SchemaVersion: client.Ptr(2), Ticket: "T-1", Epoch: 1})
	if !errors.Is(err, client.ErrInvalid) {
		t.Errorf("v2 probe without activity_age_s: %v, want invalid", err)
	}
	_, err = client.NewClient(e.srv.URL, "").ProbeHeartbeat(ctx, client.NewHeartbeat("T-1", 1, 0))
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("probe without a token: %v, want unauthorized", err)
	}
	_, err = client.NewClient(e.srv.URL, "wrong").ProbeHeartbeat(ctx, client.NewHeartbeat("T-1", 1, 0))
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("probe with an unknown token: %v, want unauthorized", err)
	}
	if outcomes != 0 {
		t.Errorf("%d probes reached the heartbeat hook (the metrics): want none", outcomes)
	}

	// A probe header with another value is a clear 400.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/heartbeat", nil)
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set(httpapi.HeaderProbe, "yes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("Warp-Probe: yes: status %d, want 400", resp.StatusCode)
	}
	// A real heartbeat still counts.
	if _, err := agent.Heartbeat(ctx, client.HeartbeatRequest{Ticket: "T-1", Host: "h1"}); err != nil || outcomes != 1 {
		t.Errorf("a heartbeat after the probes: %v, %d outcomes", err, outcomes)
	}
}
