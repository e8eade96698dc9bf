package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// withParams returns u with the query parameters kv added.
func withParams(t *testing.T, u string, kv ...string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	p.RawQuery = q.Encode()
	return p.String()
}

func show(t *testing.T, db *postgres.DB, setting string) string {
	t.Helper()
	var v string
	if err := db.Pool().QueryRow(context.Background(), "SHOW "+setting).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Every connection gets the lock and idle-in-transaction bounds, unless
// the connection string sets its own.
func TestSessionTimeoutsDefaultAndOverride(t *testing.T) {
	ctx := context.Background()
	_, u := newSchema(t)
	db, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := show(t, db, "lock_timeout"); got != "30s" {
		t.Errorf("lock_timeout %q, want 30s", got)
	}
	if got := show(t, db, "idle_in_transaction_session_timeout"); got != "1min" {
		t.Errorf("idle_in_transaction_session_timeout %q, want 1min", got)
	}
	db.Close()
	db, err = postgres.Open(ctx, withParams(t, u, "lock_timeout", "5s"), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := show(t, db, "lock_timeout"); got != "5s" {
		t.Errorf("lock_timeout given in the URL: %q, want 5s", got)
	}
	if got := show(t, db, "idle_in_transaction_session_timeout"); got != "1min" {
		t.Errorf("idle_in_transaction_session_timeout %q, want the default 1min", got)
	}
}

// A replica that freezes inside a transaction holding a lease's row (a
// paused VM, a stopped process) does not hold the fleet for good: its
// session ends after the idle bound, and another replica's heartbeat of
// that lease then goes through. While the row is held longer than the lock
// bound, the heartbeat fails as unavailable (503, retried by loops)
// instead of waiting without end.
func TestAFrozenReplicasLocksAreBounded(t *testing.T) {
	ctx := context.Background()
	_, u := newSchema(t)
	frozen, err := postgres.Open(ctx, withParams(t, u, "idle_in_transaction_session_timeout", "1500ms"), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()
	live, err := postgres.Open(ctx, withParams(t, u, "lock_timeout", "300ms"), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	svc, err := warp.NewService(live, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Claim(ctx, "T-1", warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	locked, thaw := make(chan struct{}), make(chan struct{})
	var thawOnce sync.Once
	thawed := func() { thawOnce.Do(func() { close(thaw) }) }
	defer thawed() // before the stores close: a pool waits for its connections
	done := make(chan error, 1)
	go func() {
		done <- frozen.Update(ctx, func(tx warp.Tx) error {
			if _, err := tx.Ticket(ctx, "T-1"); err != nil { // locks the ticket and its lease
				return err
			}
			select {
			case <-locked:
			default:
				close(locked)
			}
			<-thaw
			return nil
		})
	}()
	<-locked
	hb := warp.Heartbeat{SchemaVersion: 2, Ticket: "T-1", Epoch: 1, Host: "h"}
	_, err = svc.Heartbeat(ctx, hb)
	if !errors.Is(err, warp.ErrUnavailable) {
		t.Fatalf("heartbeat while another replica holds the row: %v, want unavailable after the lock bound", err)
	}
	var ok bool
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err = svc.Heartbeat(ctx, hb); err == nil {
			ok = true
			break
		}
		if !errors.Is(err, warp.ErrUnavailable) {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	if !ok {
		t.Fatalf("the frozen replica's lock was never freed: %v", err)
	}
	thawed()
	if err := <-done; err == nil {
		t.Error("the frozen replica's transaction committed after its session was ended")
	}
}
