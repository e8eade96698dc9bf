package main_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warp"
)

// warpBin is the real warp binary, built once for the package's tests.
var warpBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "warp-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	warpBin = filepath.Join(dir, "warp")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", warpBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// process is one running `warp serve`.
type process struct {
	cmd  *exec.Cmd
	url  string
	log  *syncBuffer
	done chan error
}

var listening = regexp.MustCompile(`warp listening on (http://127\.0\.0\.1:\d+)`)

// startServe runs the binary with args and waits (up to 10 s) for the
// line announcing the bound address. The process is killed at cleanup if
// the test did not stop it.
func startServe(t *testing.T, args ...string) *process {
	t.Helper()
	cmd := exec.Command(warpBin, append([]string{"serve"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no WARP_* from the caller
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, log: &syncBuffer{}, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.log.Write([]byte(line + "\n"))
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.url = <-found:
	case err := <-p.done:
		p.done <- err
		t.Fatalf("warp serve exited before listening (%v):\n%s", err, p.log.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("warp serve not listening within 10s:\n%s", p.log.String())
	}
	return p
}

// wait waits up to 10 s for the process to exit and returns its error.
func (p *process) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("warp serve did not exit within 10s:\n%s", p.log.String())
	}
	return nil
}

// ack is the latest acknowledged write on one ticket.
type ack struct {
	epoch int64
	sent  time.Time // taken before the request left: the server's now is later
	exp   time.Time // expires_at the server answered
}

// TestRestartAfterSIGKILLLosesNothingAndHonoursGrace puts claims and
// heartbeats on a real warp process, SIGKILLs it mid-load and starts it
// again on the same file: every acknowledged write is there, no lease
// lapses within the startup grace, and they all lapse after it (nobody
// heartbeats any more).
func TestRestartAfterSIGKILLLosesNothingAndHonoursGrace(t *testing.T) {
	const grace = 2 * time.Second
	db := filepath.Join(t.TempDir(), "warp.db")
	args := []string{"--addr", "127.0.0.1:0", "--db", db, "--startup-grace", grace.String(),
		"--lease-window", "1s", "--sweep-interval", "100ms"}
	first := startServe(t, args...)
	ctx := context.Background()
	admin := client.NewClient(first.url, "")
	const tickets = 40
	for i := range tickets {
		if _, err := admin.CreateTicket(ctx, client.CreateTicketRequest{ID: fmt.Sprintf("R-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu    sync.Mutex
		acked = map[string]ack{}
		count atomic.Int64
		wg    sync.WaitGroup
	)
	record := func(ticket string, a ack) {
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := acked[ticket]; !ok || a.epoch > prev.epoch || (a.epoch == prev.epoch && a.sent.After(prev.sent)) {
			acked[ticket] = a
		}
		count.Add(1)
	}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client.NewClient(first.url, "")
			host := fmt.Sprintf("load-%d", g)
			held := map[string]int64{}
			for {
				if len(held) < 5 {
					sent := time.Now()
					tk, err := cl.ClaimNext(ctx, client.ClaimNextRequest{Agent: host, Host: host})
					switch {
					case err == nil:
						held[tk.ID] = tk.Lease.Epoch
						record(tk.ID, ack{epoch: tk.Lease.Epoch, sent: sent, exp: tk.Lease.ExpiresAt})
					case errors.Is(err, client.ErrNoOpenTicket):
					default:
						return // the server is gone
					}
				}
				for id, epoch := range held {
					sent := time.Now()
					hb, err := cl.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: ptr(2), Ticket: id, Epoch: epoch, Host: host, ActivityAgeS: ptr(0.0)})
					switch {
					case err == nil:
						record(id, ack{epoch: epoch, sent: sent, exp: hb.ExpiresAt})
					case errors.Is(err, client.ErrLeaseEnded) || errors.Is(err, client.ErrStaleEpoch):
						delete(held, id) // lapsed under load: let it go
					default:
						return
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for count.Load() < 500 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d acknowledged writes in 20s", count.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	first.wait(t)
	wg.Wait()
	mu.Lock()
	final := acked
	mu.Unlock()
	t.Logf("%d acknowledged writes on %d tickets before SIGKILL", count.Load(), len(final))

	restarted := time.Now() // the new process's start, hence its grace, is later
	second := startServe(t, args...)
	cl := client.NewClient(second.url, "")
	for id, a := range final {
		tk, err := cl.Ticket(ctx, id)
		if err != nil {
			t.Fatalf("%s after restart: %v", id, err)
		}
		if tk.Epoch < a.epoch || tk.Lease == nil {
			t.Fatalf("%s: epoch %d after restart, acknowledged %d", id, tk.Epoch, a.epoch)
		}
		if tk.Epoch == a.epoch {
			if tk.Lease.LastHeartbeatAt.Before(a.sent) {
				t.Errorf("%s: last_heartbeat_at %s is before an acknowledged write sent at %s", id, tk.Lease.LastHeartbeatAt, a.sent)
			}
			if tk.Lease.ExpiresAt.Before(a.exp) {
				t.Errorf("%s: expires_at %s is before the acknowledged %s", id, tk.Lease.ExpiresAt, a.exp)
			}
		}
	}

	// Every lease was refreshed before the restart, so none may lapse
	// before restart + grace; with nobody heartbeating, all lapse after it.
	deadline = time.Now().Add(15 * time.Second)
	for {
		claimed, err := cl.ListTickets(ctx, client.ListOptions{State: "claimed"})
		if err != nil {
			t.Fatal(err)
		}
		if len(claimed.Tickets) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d leases still held 15s after the restart (grace %s, window 1s)", len(claimed.Tickets), grace)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lapsedAfterKill := 0
	for id := range final {
		evs, err := cl.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind != string(warp.EventLapsed) || e.At.Before(killed) {
				continue
			}
			lapsedAfterKill++
			if e.At.Before(restarted.Add(grace)) {
				t.Errorf("%s lapsed at %s, inside the startup grace (restart %s + %s)", id, e.At, restarted, grace)
			}
		}
	}
	if lapsedAfterKill == 0 {
		t.Fatal("no lease lapsed after the restart: the test exercised nothing")
	}
	t.Logf("%d leases lapsed after the grace", lapsedAfterKill)
}

// TestSIGTERMShutsDownGracefully: a real SIGTERM ends the process with
// exit 0 after it logs its shutdown, and the database opens again.
func TestSIGTERMShutsDownGracefully(t *testing.T) {
	db := filepath.Join(t.TempDir(), "warp.db")
	p := startServe(t, "--addr", "127.0.0.1:0", "--db", db)
	if _, err := client.NewClient(p.url, "").CreateTicket(context.Background(), client.CreateTicketRequest{ID: "KEEP"}); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log.String())
	}
	if !strings.Contains(p.log.String(), "warp stopped") {
		t.Errorf("no shutdown line in the log:\n%s", p.log.String())
	}
	q := startServe(t, "--addr", "127.0.0.1:0", "--db", db)
	if _, err := client.NewClient(q.url, "").Ticket(context.Background(), "KEEP"); err != nil {
		t.Fatalf("ticket after a graceful restart: %v", err)
	}
}

// TestTicketListWatchEndsOnSignals: `warp ticket list --watch`, stopped by
// Ctrl-C (SIGINT) or a service manager (SIGTERM), exits 0 and says nothing.
func TestTicketListWatchEndsOnSignals(t *testing.T) {
	p := startServe(t, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "warp.db"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(warpBin, "ticket", "list", "--watch", "-o", "json")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "WARP_URL=" + p.url}
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(stdout.String(), `"type":"snapshot"`) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("%s: no snapshot within 10 s; stdout %q, stderr %q", sig, stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil || stderr.String() != "" {
				t.Errorf("%s: exit %v, stderr %q; want 0 and nothing", sig, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: the watch did not end within 10 s", sig)
		}
	}
}

// TestUsageErrorsExit2 runs the binary itself: exit codes are the process's.
func TestUsageErrorsExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"serve", "--lease-window", "soon"}, 2},
		{[]string{"bogus"}, 2},
		{[]string{"mode", "--url", "http://127.0.0.1:1"}, 1},
		{[]string{"--help"}, 0},
	} {
		cmd := exec.Command(warpBin, c.args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("warp %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.code, out)
		}
		if c.code != 0 && !strings.HasPrefix(string(out), "warp: ") {
			t.Errorf("warp %s: output %q does not start with \"warp: \"", strings.Join(c.args, " "), out)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The server binary carries no simulator: nothing of internal/tools/sim is linked
// into it, so no argument or environment variable can turn it into the
// simulator's fake agent; 'warp simulate' says in one line where the
// simulator went.
func TestNoSimulatorInTheServerBinary(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasSuffix(pkg, "/internal/sim") || strings.HasSuffix(pkg, "/internal/simcli") {
			t.Errorf("warp links %s", pkg)
		}
	}
	cmd := exec.Command(warpBin, "simulate", "--agents", "8")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "WARP_SIM_HELPER=agent"}
	cmd.Stdin = strings.NewReader("fg 1 0\n")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("warp simulate: %v, want exit 2\n%s", err, b)
	}
	if got := strings.TrimSpace(string(b)); strings.Count(got, "\n") != 0 || !strings.HasPrefix(got, "warp: ") || !strings.Contains(got, "run warpsim") {
		t.Errorf("warp simulate printed %q, want one line that points to warpsim", got)
	}
}
