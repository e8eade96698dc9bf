package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// The ticket page lists the attempts beside the lease timeline, each
// with how it ended, its last note and its snapshot; the index lists the
// tickets the attempt cap blocked before the claimed ones (issue 45).
func TestAttemptsAndBlockedTickets(t *testing.T) {
	s := startServer(t, func(c *warpcli.ServeConfig) { c.MaxAttempts = 2 })
	ctx := context.Background()
	hc := &http.Client{}
	s.create(t, "K", "flaky migration")
	s.create(t, "L", "other work")
	commit := strings.Repeat("1f", 20)
	for epoch := int64(1); epoch <= 2; epoch++ {
		s.claim(t, "K", "agent-K", "h-K")
		note := "tried approach " + string(rune('A'+epoch-1))
		if _, err := s.client.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: "K", Epoch: epoch, Host: "h-K",
			ActivityAgeS: ptr(1.0), Note: &note}); err != nil {
			t.Fatal(err)
		}
		s.clk.Advance(time.Minute)
		if _, err := s.client.Release(ctx, "K", client.ReleaseRequest{Epoch: epoch, Reason: "dead end"}); err != nil {
			t.Fatal(err)
		}
		if epoch == 1 {
			if _, err := s.client.RecordSnapshot(ctx, "K", 1, client.Snapshot{State: client.SnapshotSaved, Commit: commit,
				Ref: "refs/gyrum/K/1", Branch: "gyrum/K", Host: "h-K"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.claim(t, "L", "agent-L", "h-L")
	if got, err := s.client.Ticket(ctx, "K"); err != nil || got.State != "blocked" || len(got.Attempts) != 2 {
		t.Fatalf("K: %+v %v, want blocked with 2 attempts", got, err)
	}

	_, body, _ := get(t, hc, s.url+"/")
	bi, ci := strings.Index(body, `id="blocked"`), strings.Index(body, `id="claimed"`)
	if bi < 0 || ci < 0 || bi > ci {
		t.Fatalf("index: blocked table at %d, claimed at %d: want blocked first", bi, ci)
	}
	mustContain(t, "blocked table", body[bi:ci], `<a href="/tickets/K">K</a>`, "flaky migration")
	if strings.Contains(body[bi:ci], "/tickets/L") {
		t.Error("the claimed ticket L is listed as blocked")
	}

	_, body, _ = get(t, hc, s.url+"/tickets/K")
	ai := strings.Index(body, `id="attempts"`)
	if ai < 0 || ai < strings.Index(body, `id="lease-timeline"`) {
		t.Fatalf("ticket page: no attempts table after the lease timeline:\n%s", body)
	}
	mustContain(t, "attempts", body[ai:], `id="attempt-2"`, `id="attempt-1"`, "tried approach A", "tried approach B",
		"released (dead end)", "commit 1f1f1f1f1f1f (refs/gyrum/K/1, from branch gyrum/K, on h-K)", "none reported")
	if strings.Index(body, `id="attempt-2"`) > strings.Index(body, `id="attempt-1"`) {
		t.Error("attempts are not newest first")
	}
}
