package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// TestPostgresRestart restarts the real PostgreSQL server under a light
// load on a running warp: while it is down warp answers 503 with a clear
// message, afterwards it serves again by itself (same process, no restart),
// every acknowledged write is in the database, and the sweep resumes.
//
// It disturbs every other test using the server, so it runs only when asked:
//
//	WARP_TEST_PG_RESTART=1 go test ./internal/postgres -run TestPostgresRestart -count=1
func TestPostgresRestart(t *testing.T) {
	admin := adminURL(t)
	if os.Getenv("WARP_TEST_PG_RESTART") != "1" {
		t.Skip("restarts the PostgreSQL server and disturbs other tests: run it alone with " +
			"WARP_TEST_PG_RESTART=1 go test ./internal/postgres -run TestPostgresRestart -count=1")
	}
	if pu, err := url.Parse(admin); err != nil || (pu.Hostname() != "127.0.0.1" && pu.Hostname() != "localhost") {
		t.Skip("WARP_TEST_POSTGRES is not a local server: the restart test only restarts a cluster on this machine")
	}
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) != 1 {
		t.Skipf("want exactly one cluster version under /etc/postgresql for pg_ctlcluster, got %d (%v)", len(versions), err)
	}
	version := versions[0].Name()

	_, u := newSchema(t)
	w := startWarp(t, u, "--lease-window", "1h", "--sweep-interval", "100ms", "--startup-grace", "0s")
	ctx := context.Background()

	// Light load: 4 workers create, claim and heartbeat tickets, one request
	// every 20 ms each, recording what was acknowledged and every failure.
	type acked struct {
		id    string
		epoch int64 // 0 until the claim was acknowledged
	}
	var (
		mu        sync.Mutex
		acks      []acked
		failures  = map[string]int{} // "status code" → count
		messages  = map[string]bool{}
		okAfter   int // successes after the restart returned
		restarted bool
	)
	record := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			if restarted {
				okAfter++
			}
			return
		}
		var ae *client.APIError
		if errors.As(err, &ae) {
			failures[fmt.Sprintf("%d %s", ae.Status, ae.Code)]++
			messages[ae.Message] = true
			return
		}
		failures["transport: "+err.Error()]++
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				id := fmt.Sprintf("R-%d-%d", g, k)
				_, err := w.client.CreateTicket(ctx, client.CreateTicketRequest{ID: id})
				record(err)
				if err != nil {
					continue
				}
				mu.Lock()
				acks = append(acks, acked{id: id})
				i := len(acks) - 1
				mu.Unlock()
				tk, err := w.client.Claim(ctx, id, client.ClaimRequest{Agent: "a", Host: "h"})
				record(err)
				if err != nil {
					continue
				}
				mu.Lock()
				acks[i].epoch = tk.Epoch
				mu.Unlock()
				age := 1.0
				v2 := 2
				_, err = w.client.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: &v2, Ticket: id, Epoch: tk.Epoch, Host: "h", ActivityAgeS: &age})
				record(err)
			}
		}()
	}
	waitFor(t, 10*time.Second, "some load before the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acks) >= 20
	})

	// Watch readiness while the server restarts.
	var readyFailures []string
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			resp, err := http.Get(w.url + "/readyz")
			if err == nil {
				if resp.StatusCode != http.StatusOK {
					mu.Lock()
					readyFailures = append(readyFailures, resp.Status)
					mu.Unlock()
				}
				resp.Body.Close()
			}
		}
	}()

	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_ctlcluster restart: %v\n%s", err, out)
	}
	mu.Lock()
	restarted = true
	mu.Unlock()
	waitFor(t, 30*time.Second, "warp to serve again after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return okAfter >= 20
	})
	close(stop)
	wg.Wait()
	<-readyDone

	mu.Lock()
	defer mu.Unlock()
	t.Logf("acknowledged tickets %d; failures %v; messages %v; readyz failures %d", len(acks), failures, keys(messages), len(readyFailures))
	for _, line := range strings.Split(w.log.String(), "\n") {
		if strings.Contains(line, "status=503") {
			t.Logf("warp logged: %s", line)
			break
		}
	}
	for k := range failures {
		if k != "503 unavailable" {
			t.Errorf("during the restart warp answered %q: want only 503 unavailable", k)
		}
	}
	if failures["503 unavailable"] == 0 && len(readyFailures) == 0 {
		t.Error("no request saw the database down: the restart was not observed")
	}
	for m := range messages {
		if !strings.Contains(m, "database is unavailable") {
			t.Errorf("503 message %q does not say the database is unavailable", m)
		}
	}

	// Every acknowledged write is there.
	conn := connect(t, u)
	for _, a := range acks {
		var state string
		var epoch int64
		if err := conn.QueryRow(ctx, "SELECT state, epoch FROM tickets WHERE id = $1", a.id).Scan(&state, &epoch); err != nil {
			t.Errorf("acknowledged ticket %s: %v", a.id, err)
			continue
		}
		if a.epoch > 0 && (state != string(warp.TicketClaimed) || epoch != a.epoch) {
			t.Errorf("acknowledged claim of %s at epoch %d: database has %s at epoch %d", a.id, a.epoch, state, epoch)
		}
	}

	// The sweep resumes: the replica wins the sweep lock again and sweeps.
	waitFor(t, 10*time.Second, "the sweep lock to be held again", func() bool { return sweeper(t, conn, w) == w })
	var first string
	_ = conn.QueryRow(ctx, "SELECT value FROM meta WHERE key = $1", warp.MetaLastSweep).Scan(&first)
	waitFor(t, 10*time.Second, "a sweep after the restart", func() bool {
		var v string
		_ = conn.QueryRow(ctx, "SELECT value FROM meta WHERE key = $1", warp.MetaLastSweep).Scan(&v)
		return v != first
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
