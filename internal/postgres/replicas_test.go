package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// The warp binary, built once per test run by the first test that needs it.
var warpBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if adminDB.pool != nil {
		adminDB.pool.Close()
	}
	if warpBin.dir != "" {
		os.RemoveAll(warpBin.dir)
	}
	os.Exit(code)
}

func warpBinary(t *testing.T) string {
	t.Helper()
	warpBin.once.Do(func() {
		warpBin.dir, warpBin.err = os.MkdirTemp("", "warp-postgres-test-")
		if warpBin.err != nil {
			return
		}
		warpBin.path = filepath.Join(warpBin.dir, "warp")
		cmd := exec.Command("go", "build", "-o", warpBin.path, "github.com/gyrum-labs/warp/cmd/warp")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			warpBin.err = fmt.Errorf("go build ./cmd/warp: %v\n%s", err, out)
		}
	})
	if warpBin.err != nil {
		t.Fatal(warpBin.err)
	}
	return warpBin.path
}

// warpProc is one running `warp serve` with a client of it.
type warpProc struct {
	*warpclitest.Process
	url    string     // Process.URL
	log    processLog // Process.Log
	client *client.Client
}

// startWarp runs `warp serve --db dbURL --addr 127.0.0.1:0 args...` and
// waits until it listens. The process is killed when the test ends.
func startWarp(t *testing.T, dbURL string, args ...string) *warpProc {
	t.Helper()
	cmd := exec.Command(warpBinary(t), append([]string{"serve", "--db", dbURL, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "WARP_TOKEN=")
	p := warpclitest.StartProcess(t, cmd)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return &warpProc{Process: p, url: p.URL, log: processLog{p}, client: client.NewClient(p.URL, "").WithHTTPClient(hc)}
}

// processLog is a process's log as a fmt.Stringer.
type processLog struct{ p *warpclitest.Process }

func (l processLog) String() string { return l.p.Log() }

// sweeper returns which of procs holds the sweep lock, from pg_locks and
// the application_name each warp process gives its sessions; nil when none.
func sweeper(t *testing.T, conn *pgx.Conn, procs ...*warpProc) *warpProc {
	t.Helper()
	names := make([]string, len(procs))
	for i, p := range procs {
		names[i] = "warp pid " + strconv.Itoa(p.Pid())
	}
	var name string
	err := conn.QueryRow(context.Background(), `SELECT a.application_name FROM pg_locks l
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = ANY($1)`, names).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		if n == name {
			return procs[i]
		}
	}
	return nil
}

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryInt(t *testing.T, conn *pgx.Conn, q string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// Two warp processes on one database; 64 claimers spread over both claim
// 500 tickets with claim-next and claim: exactly one holder each.
func TestReplicasClaimEachTicketOnce(t *testing.T) {
	_, u := newSchema(t)
	a := startWarp(t, u, "--lease-window", "1h")
	b := startWarp(t, u, "--lease-window", "1h")
	ctx := context.Background()
	const tickets, claimers = 500, 64
	for i := range tickets {
		if _, err := a.client.CreateTicket(ctx, client.CreateTicketRequest{ID: fmt.Sprintf("T-%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	holders := map[string][]string{}
	var wg sync.WaitGroup
	errc := make(chan error, claimers)
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := []*client.Client{a.client, b.client}[c%2]
			agent := fmt.Sprintf("agent-%d", c)
			rng := rand.New(rand.NewPCG(uint64(c), 11))
			misses := 0
			for {
				var tk client.Ticket
				var err error
				if c%4 == 3 {
					tk, err = cl.Claim(ctx, fmt.Sprintf("T-%03d", rng.IntN(tickets)), client.ClaimRequest{Agent: agent, Host: "h"})
					if errors.Is(err, client.ErrConflict) {
						if misses++; misses%10 == 0 {
							open, lerr := cl.ListTickets(ctx, client.ListOptions{State: "open", Limit: 1})
							if lerr != nil {
								errc <- lerr
								return
							}
							if len(open.Tickets) == 0 {
								return
							}
						}
						continue
					}
				} else {
					tk, err = cl.ClaimNext(ctx, client.ClaimNextRequest{Agent: agent, Host: "h"})
					if errors.Is(err, client.ErrNoOpenTicket) {
						return
					}
				}
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				holders[tk.ID] = append(holders[tk.ID], agent)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("claimer: %v", err)
	}
	if len(holders) != tickets {
		t.Errorf("claimed %d distinct tickets, want %d", len(holders), tickets)
	}
	for id, hs := range holders {
		if len(hs) != 1 {
			t.Errorf("ticket %s claimed by %v, want exactly one holder", id, hs)
		}
	}
	conn := connect(t, u)
	if n := queryInt(t, conn, "SELECT count(*) FROM leases"); n != tickets {
		t.Errorf("%d leases in the database, want %d", n, tickets)
	}
	if n := queryInt(t, conn, "SELECT count(*) FROM tickets WHERE state = 'claimed' AND epoch = 1"); n != tickets {
		t.Errorf("%d tickets claimed at epoch 1, want %d", n, tickets)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM (SELECT ticket FROM events WHERE kind = 'claimed'
		GROUP BY ticket HAVING count(*) = 1) x`); n != tickets {
		t.Errorf("%d tickets with exactly one claimed event, want %d", n, tickets)
	}
	if n := queryInt(t, conn, "SELECT count(*) FROM events WHERE kind = 'claimed'"); n != tickets {
		t.Errorf("%d claimed events, want %d", n, tickets)
	}
}

// Two warp processes with scaled-down durations: every lease lapses exactly
// once while both run, one replica sweeps, and when it is SIGKILLed the
// other expires the next due lease.
func TestReplicasLapseOnceAndSurviveSweeperKill(t *testing.T) {
	_, u := newSchema(t)
	args := []string{"--lease-window", "500ms", "--sweep-interval", "100ms", "--startup-grace", "0s"}
	a := startWarp(t, u, args...)
	b := startWarp(t, u, args...)
	ctx := context.Background()
	conn := connect(t, u)
	const n = 100
	for i := range n {
		cl := []*client.Client{a.client, b.client}[i%2]
		id := fmt.Sprintf("L-%03d", i)
		if _, err := cl.CreateTicket(ctx, client.CreateTicketRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Claim(ctx, id, client.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "every lease to lapse", func() bool {
		return queryInt(t, conn, "SELECT count(*) FROM leases WHERE state = 'lapsed'") == n
	})
	if k := queryInt(t, conn, "SELECT count(*) FROM events WHERE kind = 'lapsed'"); k != n {
		t.Errorf("%d lapsed events for %d leases, want one each", k, n)
	}
	if k := queryInt(t, conn, `SELECT count(*) FROM (SELECT ticket FROM events WHERE kind = 'lapsed'
		GROUP BY ticket HAVING count(*) = 1) x`); k != n {
		t.Errorf("%d tickets with exactly one lapsed event, want %d", k, n)
	}
	if k := queryInt(t, conn, "SELECT count(*) FROM tickets WHERE state = 'open'"); k != n {
		t.Errorf("%d tickets reopened, want %d", k, n)
	}

	dead := sweeper(t, conn, a, b)
	if dead == nil {
		t.Fatal("no warp process holds the sweep lock (pg_locks)")
	}
	survivor := a
	if dead == a {
		survivor = b
	}
	if err := dead.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-dead.Done()
	t.Logf("SIGKILLed the sweeper, warp pid %d; pid %d stays", dead.Pid(), survivor.Pid())

	if _, err := survivor.client.CreateTicket(ctx, client.CreateTicketRequest{ID: "NEXT"}); err != nil {
		t.Fatal(err)
	}
	if _, err := survivor.client.Claim(ctx, "NEXT", client.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the surviving replica to lapse the next due lease", func() bool {
		return queryInt(t, conn, "SELECT count(*) FROM events WHERE kind = 'lapsed' AND ticket = 'NEXT'") == 1
	})
	if got := sweeper(t, conn, a, b); got != survivor {
		t.Errorf("sweep lock holder after the kill: got %v, want the survivor pid %d", got, survivor.Pid())
	}
	// Three more sweeps (last_sweep moves each time) must not lapse it again.
	var seen []string
	waitFor(t, 10*time.Second, "three more sweeps", func() bool {
		var v string
		_ = conn.QueryRow(ctx, "SELECT value FROM meta WHERE key = $1", warp.MetaLastSweep).Scan(&v)
		if len(seen) == 0 || seen[len(seen)-1] != v {
			seen = append(seen, v)
		}
		return len(seen) > 3
	})
	if k := queryInt(t, conn, "SELECT count(*) FROM events WHERE kind = 'lapsed' AND ticket = 'NEXT'"); k != 1 {
		t.Errorf("NEXT has %d lapsed events, want 1", k)
	}
}

// warp serve with a PostgreSQL --db it cannot use exits at once with an
// error that says what is wrong with the database, not a hang or a stack.
func TestServeRejectsUnusablePostgres(t *testing.T) {
	admin := adminURL(t)
	sep := "?"
	if strings.Contains(admin, "?") {
		sep = "&"
	}
	for _, c := range []struct{ db, want string }{
		{"postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", `cannot reach PostgreSQL at 127.0.0.1:1 (database "postgres")`},
		{"postgres://postgres@127.0.0.1:notaport/postgres", "invalid PostgreSQL connection string"},
		{"postgresql://postgres@127.0.0.1:5432/postgres?pool_max_conns=0", "invalid PostgreSQL connection string"},
		{admin + sep + "search_path=warp_no_such_schema", "no schema of the search_path (warp_no_such_schema) exists"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, warpBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", c.db).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || timedOut {
			t.Errorf("--db %s: got %v, want a quick non-zero exit; output:\n%s", c.db, err, out)
			continue
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("--db %s: output %q does not say %q", c.db, out, c.want)
		}
	}
}

// The replica that sweeps is frozen (SIGSTOP) for ten sweep intervals: its
// session keeps the advisory lock, but goes idle, and PostgreSQL ends it
// after three intervals (idle_session_timeout); the other replica takes
// the lock and sweeps, so a dead lease due during the freeze lapses on
// time. Resumed, the old sweeper does not hold the lock.
func TestFrozenSweeperHandsOver(t *testing.T) {
	_, u := newSchema(t)
	const interval = 200 * time.Millisecond
	args := []string{"--lease-window", "1s", "--sweep-interval", interval.String(), "--startup-grace", "0",
		"--stall-after", "500ms", "--silent-after", "800ms"}
	a := startWarp(t, u, args...)
	b := startWarp(t, u, args...)
	conn := connect(t, u)
	var old *warpProc
	poll := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > limit {
				t.Fatalf("timed out after %v waiting for %s", limit, what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	poll("a replica to hold the sweep lock", 10*time.Second, func() bool { old = sweeper(t, conn, a, b); return old != nil })
	other := a
	if old == a {
		other = b
	}
	ctx := context.Background()
	if _, err := other.client.CreateTicket(ctx, client.CreateTicketRequest{ID: "DEAD"}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.client.Claim(ctx, "DEAD", client.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer old.Cmd.Process.Signal(syscall.SIGCONT)
	took := poll("the other replica to take the sweep lock", 10*interval, func() bool { return sweeper(t, conn, a, b) == other })
	t.Logf("the other replica swept %v after the sweeper froze", took.Round(time.Millisecond))
	if took > 3*interval+time.Second {
		t.Errorf("hand-over took %v, want within three sweep intervals (%v) and a second's slack", took, 3*interval)
	}
	poll("the dead lease to lapse", 5*time.Second, func() bool {
		tk, err := other.client.Ticket(ctx, "DEAD")
		return err == nil && tk.Lease != nil && tk.Lease.State == "lapsed"
	})
	if err := old.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * interval) // the resumed replica's next ticks
	if s := sweeper(t, conn, a, b); s != other {
		t.Errorf("after the old sweeper resumed the lock is held by %v, want the replica that took over", s)
	}
	t.Logf("frozen for %v", time.Since(frozen).Round(time.Millisecond))
}
