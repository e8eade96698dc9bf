package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

const childDBEnv = "WARP_SQLITE_TEST_CHILD_DB"

// TestChildWriter is not a test on its own: TestAcknowledgedWritesSurviveSIGKILL
// runs the test binary again with only this test and childDBEnv set. It
// creates and claims tickets K-1, K-2, ... forever, printing "ack K-n" on
// stdout after each claim returned.
func TestChildWriter(t *testing.T) {
	path := os.Getenv(childDBEnv)
	if path == "" {
		t.Skip("helper process of TestAcknowledgedWritesSurviveSIGKILL")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		fmt.Println("service:", err)
		os.Exit(2)
	}
	for i := 1; ; i++ {
		id := fmt.Sprintf("K-%d", i)
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			fmt.Println("create:", err)
			os.Exit(2)
		}
		v, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "child", Host: "h"})
		if err != nil {
			fmt.Println("claim:", err)
			os.Exit(2)
		}
		if _, err := svc.Heartbeat(ctx, warp.Heartbeat{SchemaVersion: 2, Ticket: id, Epoch: v.Lease.Epoch, Host: "h", ActivityAge: 1}); err != nil {
			fmt.Println("heartbeat:", err)
			os.Exit(2)
		}
		fmt.Println("ack", id)
	}
}

// TestAcknowledgedWritesSurviveSIGKILL kills a real writer process with
// SIGKILL while it writes, then checks that every write it acknowledged
// is in the file (WAL with synchronous=NORMAL: a commit is in the WAL when
// Update returns; only an OS crash could lose it).
func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	if os.Getenv(childDBEnv) != "" {
		t.Skip("inside the helper process")
	}
	path := filepath.Join(t.TempDir(), "warp.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDBEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	const want = 300
	var acked []string
	sc := bufio.NewScanner(out)
	for len(acked) < want && sc.Scan() {
		line := sc.Text()
		id, ok := strings.CutPrefix(line, "ack ")
		if !ok {
			t.Fatalf("child: %s", line)
		}
		acked = append(acked, id)
	}
	if len(acked) < want {
		t.Fatalf("child stopped after %d acknowledgements: %v", len(acked), sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL, mid-write
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("child exit: got %v, want killed by a signal", err)
	}
	// Lines the child printed before the kill but we had not read yet are
	// acknowledged too.
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked = append(acked, id)
		}
	}

	db := mustOpenPath(t, path)
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range acked {
		v, err := svc.Ticket(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged %s lost after SIGKILL: %v", id, err)
		}
		if v.Ticket.State != warp.TicketClaimed || v.Lease == nil || v.Lease.SchemaVersion != 2 {
			t.Errorf("acknowledged %s after SIGKILL: got %+v %+v, want claimed with its v2 heartbeat", id, v.Ticket, v.Lease)
		}
	}
	t.Logf("%d acknowledged writes, all present after SIGKILL", len(acked))
}

// TestTwoHandlesOneFile races claims through two stores on one file, as
// two warp processes would: the write lock (BEGIN IMMEDIATE with the busy
// timeout) still gives every ticket exactly one holder.
func TestTwoHandlesOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warp.db")
	clock := storetest.NewClock(storetest.T0())
	var svcs []*warp.Service
	for range 2 {
		svc, err := warp.NewService(mustOpenPath(t, path), warp.Config{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	const tickets = 100
	for i := range tickets {
		if _, err := svcs[i%2].CreateTicket(ctx, warp.NewTicket{ID: fmt.Sprintf("T-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	wins := map[string]int{}
	var other []error
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			svc := svcs[g%2]
			for i := range tickets {
				id := fmt.Sprintf("T-%d", (i+g*7)%tickets)
				_, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: fmt.Sprint(g)})
				mu.Lock()
				switch {
				case err == nil:
					wins[id]++
				case !errors.Is(err, warp.ErrConflict):
					other = append(other, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range other {
		t.Errorf("claim: %v, want success or conflict", err)
	}
	for i := range tickets {
		if n := wins[fmt.Sprintf("T-%d", i)]; n != 1 {
			t.Errorf("T-%d: %d holders, want 1", i, n)
		}
	}
}

// TestLockedDatabase holds the write lock from another connection: an
// Update bounded by its context fails with an error instead of hanging,
// and works again once the lock is gone.
func TestLockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warp.db")
	db := mustOpenPath(t, path)
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	lock, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = svc.CreateTicket(ctx, warp.NewTicket{ID: "T-1"})
	if err == nil {
		t.Fatal("create while another connection holds the write lock: got no error")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, warp.ErrUnavailable) {
		t.Errorf("create while locked: got %v, want the deadline or ErrUnavailable", err)
	}
	t.Logf("create while locked: %v", err)
	if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	if _, err := svc.CreateTicket(context.Background(), warp.NewTicket{ID: "T-1"}); err != nil {
		t.Errorf("create after the lock is gone: %v", err)
	}
	// Readers were never blocked (WAL); a View works throughout.
	if err := db.Ping(context.Background()); err != nil {
		t.Errorf("ping: %v", err)
	}
}
