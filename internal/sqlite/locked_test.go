package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// reply is what one request got: its status, Retry-After, error code,
// and how long it took.
type reply struct {
	status     int
	retryAfter string
	code       string
	took       time.Duration
}

func send(t *testing.T, method, url, body string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: no answer: %v", method, url, err)
		return reply{took: time.Since(start)}
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(start)}
	var eb client.ErrorBody
	if json.NewDecoder(resp.Body).Decode(&eb) == nil {
		r.code = eb.Error.Code
	}
	return r
}

// The SQLite file locked by another process's write transaction (a backup
// tool, a sqlite3 shell left in BEGIN IMMEDIATE): every heartbeat gets
// 503 unavailable with Retry-After: 1 within the request's database bound
// (not 500 internal, not an answer that waits behind every batch before
// it), /readyz answers within a second throughout, and says not ready
// once a write failed on the lock (after SQLite's busy timeout). When the
// lock goes, heartbeats and /readyz are back.
func TestLockedDatabaseAnswers503(t *testing.T) {
	const bound = time.Second
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
	beat := func(tk client.Ticket) reply {
		return send(t, "POST", srv.URL()+"/v1/heartbeat",
			fmt.Sprintf(`{"schema_version":2,"ticket":%q,"epoch":%d,"host":"h","agent":"a","activity_age_s":0}`, tk.ID, tk.Lease.Epoch))
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
		replies := make([]reply, agents)
		for i, tk := range tickets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = beat(tk)
			}()
		}
		wg.Wait()
		for i, r := range replies {
			if r.status != http.StatusServiceUnavailable || r.code != "unavailable" || r.retryAfter != "1" || r.took > bound+time.Second {
				t.Errorf("round %d, heartbeat %d: %d %q (Retry-After %q) after %v, want 503 unavailable with Retry-After: 1 within %v",
					round, i, r.status, r.code, r.retryAfter, r.took, bound+time.Second)
			}
		}
		ready := send(t, "GET", srv.URL()+"/readyz", "")
		if ready.took > time.Second {
			t.Errorf("/readyz answered %d after %v, want within a second", ready.status, ready.took)
		}
		t.Logf("%v locked: heartbeats %d %s after %v; /readyz %d after %v", time.Since(locked).Round(100*time.Millisecond),
			replies[0].status, replies[0].code, replies[0].took.Round(time.Millisecond), ready.status, ready.took.Round(time.Millisecond))
		notReady = notReady || ready.status == http.StatusServiceUnavailable
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
		if r.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat after the lock went: %d %s", r.status, r.code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := send(t, "GET", srv.URL()+"/readyz", ""); r.status != http.StatusOK {
		t.Errorf("/readyz after the lock went: %d %s", r.status, r.code)
	}
}
