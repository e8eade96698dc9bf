package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// The SQLite file locked by another process's write transaction (a backup
// tool, a sqlite3 shell left in BEGIN IMMEDIATE): every heartbeat gets
// 503 unavailable with Retry-After: 1 within the request's database bound
// (not 500 internal, not an answer that waits behind every batch before
// it), /readyz answers within a second throughout, and says not ready
// once a write failed on the lock (after SQLite's busy timeout). When the
// lock goes, heartbeats and /readyz are back.
func TestLockedDatabaseAnswers503(t *testing.T) {
	const bound = time.Second
	// An answer that has not come by then waits behind the lock (SQLite's
	// busy timeout, 5 s): what the bounds exist to prevent. (The machine's
	// load only adds to an answer's time; the bound is 1 s, the ping's
	// 0.5 s.)
	const hung = sqlite.BusyTimeout * 4 / 5
	srv := warpclitest.Start(t, func(c *warpcli.ServeConfig) { c.DatabaseTimeout = bound })
	ctx := context.Background()
	c := srv.Client("")
	const agents = 4
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

	other, err := sql.Open("sqlite", srv.Config.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()

	notReady := false
	for round := 0; time.Since(locked) < sqlite.BusyTimeout+3*time.Second; round++ {
		var wg sync.WaitGroup
		replies := make([]warptest.Answer, agents)
		for i, tk := range tickets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = beat(tk)
			}()
		}
		wg.Wait()
		for i, r := range replies {
			if r.Status != http.StatusServiceUnavailable || r.Code != "unavailable" || r.RetryAfter != "1" {
				t.Errorf("round %d, heartbeat %d: %d %q (Retry-After %q) after %v, want 503 unavailable with Retry-After: 1",
					round, i, r.Status, r.Code, r.RetryAfter, r.Took)
			}
		}
		ready := warptest.Ask(t, "GET", srv.URL()+"/readyz", "", hung)
		t.Logf("%v locked: heartbeats %d %s after %v; /readyz %d after %v", time.Since(locked).Round(100*time.Millisecond),
			replies[0].Status, replies[0].Code, replies[0].Took.Round(time.Millisecond), ready.Status, ready.Took.Round(time.Millisecond))
		notReady = notReady || ready.Status == http.StatusServiceUnavailable
	}
	if !notReady {
		t.Errorf("/readyz never said not ready in %v of a locked database, want 503 once a write failed on the lock", time.Since(locked))
	}

	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * sqlite.BusyTimeout)
	for {
		r := beat(tickets[0])
		if r.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat after the lock went: %d %s", r.Status, r.Code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := warptest.Ask(t, "GET", srv.URL()+"/readyz", "", hung); r.Status != http.StatusOK {
		t.Errorf("/readyz after the lock went: %d %s", r.Status, r.Code)
	}
}
