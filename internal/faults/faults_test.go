// Package faults_test is the fault catalogue: real warp processes on
// scaled times, one infrastructure fault each, and what it may and may not
// do to the leases of a working fleet (docs/RELIABILITY.md).
package faults_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

var warpBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "warp-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	warpBin = filepath.Join(dir, "warp")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", warpBin, "github.com/gyrum-labs/warp/cmd/warp")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build warp:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Scaled times of the catalogue: a fault of twice the window lasts 6 s.
const (
	window = 3 * time.Second
	sweep  = 200 * time.Millisecond
	grace  = 2 * time.Second
	beat   = 200 * time.Millisecond
)

// serve starts `warp serve` on db with the catalogue's times.
func serve(t *testing.T, db string, extra ...string) *warpclitest.Process {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db,
		"--lease-window", window.String(), "--sweep-interval", sweep.String(), "--startup-grace", grace.String(),
		"--stall-after", "2s", "--silent-after", "2500ms"}, extra...)
	return warpclitest.StartProcess(t, exec.Command(warpBin, args...))
}

// agent is a working agent's loop reduced to what warp sees: a v2
// heartbeat of fresh activity every beat, with its lease secret, for as
// long as it runs; requests that fail (warp frozen or down) are retried
// at the next beat, as the loop does.
type agent struct {
	ticket client.Ticket
	stop   chan struct{}
	done   chan struct{}
}

func claim(t *testing.T, c *client.Client, id string) client.Ticket {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateTicket(ctx, client.CreateTicketRequest{ID: id, Title: id}); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	tk, err := c.Claim(ctx, id, client.ClaimRequest{Agent: "agent-" + id, Host: "host-1"})
	if err != nil {
		t.Fatalf("claim %s: %v", id, err)
	}
	return tk
}

func work(c *client.Client, tk client.Ticket) *agent {
	a := &agent{ticket: tk, stop: make(chan struct{}), done: make(chan struct{})}
	hc := c.WithLeaseSecret(tk.LeaseSecret)
	go func() {
		defer close(a.done)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = hc.Heartbeat(ctx, client.NewHeartbeat(tk.ID, tk.Lease.Epoch, 0))
			cancel()
			select {
			case <-a.stop:
				return
			case <-time.After(beat):
			}
		}
	}()
	return a
}

func (a *agent) Stop() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
}

// leaseOf reads ticket id's lease state and end.
func leaseOf(t *testing.T, c *client.Client, id string) client.Lease {
	t.Helper()
	tk, err := c.Ticket(context.Background(), id)
	if err != nil || tk.Lease == nil {
		t.Fatalf("ticket %s: %+v, %v", id, tk, err)
	}
	return *tk.Lease
}

// poll waits up to 20 s for cond.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Warp frozen (SIGSTOP: a VM suspend, a laptop asleep) for twice the lease
// window while its agents keep working: no healthy lease lapses, and a
// dead one lapses once the gap's grace ends.
func TestFreezeTwiceTheWindow(t *testing.T) {
	p := serve(t, filepath.Join(t.TempDir(), "warp.db"))
	c := client.NewClient(p.URL, "")
	var agents []*agent
	for i := range 4 {
		a := work(c, claim(t, c, fmt.Sprintf("H-%d", i)))
		agents = append(agents, a)
		defer a.Stop()
	}
	claim(t, c, "DEAD") // its agent never beats
	time.Sleep(time.Second)

	if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * window)
	if err := p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()

	var once sync.Once
	poll(t, "the dead lease to lapse", func() bool {
		for _, a := range agents {
			if l := leaseOf(t, c, a.ticket.ID); l.State != "held" {
				once.Do(func() { t.Errorf("healthy lease %s is %s (%s) after the freeze", a.ticket.ID, l.State, l.EndReason) })
			}
		}
		return leaseOf(t, c, "DEAD").State == "lapsed"
	})
	if late := time.Since(resumed); late > grace+2*sweep+time.Second {
		t.Errorf("the dead lease lapsed %v after warp resumed, want within the grace and a sweep (%v)", late, grace+sweep)
	}
	time.Sleep(grace) // past the grace: the working agents' leases hold on
	for _, a := range agents {
		if l := leaseOf(t, c, a.ticket.ID); l.State != "held" {
			t.Errorf("healthy lease %s is %s (%s) after the grace", a.ticket.ID, l.State, l.EndReason)
		}
	}
}

// readyz returns the status of GET /readyz.
func readyz(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// SQLite on a full file system for 1.5× the window while its agents work:
// writes fail cleanly meanwhile, and once space returns no healthy lease
// lapses; a dead one lapses once the gap's grace ends. Needs root (a
// small tmpfs); CI runs as root.
func TestSQLiteDiskFull(t *testing.T) {
	fs := warptest.SmallFS(t, "16m")
	p := serve(t, filepath.Join(fs, "warp.db"))
	c := client.NewClient(p.URL, "")
	var agents []*agent
	for i := range 4 {
		a := work(c, claim(t, c, fmt.Sprintf("H-%d", i)))
		agents = append(agents, a)
		defer a.Stop()
	}
	claim(t, c, "DEAD")
	time.Sleep(time.Second)

	free := warptest.FillDisk(t, fs)
	// SQLite may still have room inside its files: write until it has none.
	n := 0
	for ; n < 5000; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.CreateTicket(ctx, client.CreateTicketRequest{ID: fmt.Sprintf("FILL-%d", n), Title: strings.Repeat("x", 200)})
		cancel()
		if err != nil {
			t.Logf("the database is full after %d more tickets: %v", n, err)
			break
		}
	}
	if n == 5000 {
		t.Fatal("every write still succeeds on the full file system")
	}
	if code := readyz(t, p.URL); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %d while writes fail, want 503", code)
	}
	// A warp started on the full file system says why it cannot.
	start := exec.Command(warpBin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(fs, "new.db"))
	out, err := start.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no space left") {
		t.Errorf("warp serve on a full file system: %v, output:\n%s\nwant a failure that says no space left", err, out)
	}
	time.Sleep(window * 3 / 2)
	free()
	freed := time.Now()

	var once sync.Once
	poll(t, "the dead lease to lapse", func() bool {
		for _, a := range agents {
			if l := leaseOf(t, c, a.ticket.ID); l.State != "held" {
				once.Do(func() {
					t.Errorf("healthy lease %s is %s (%s) after the disk filled", a.ticket.ID, l.State, l.EndReason)
				})
			}
		}
		return leaseOf(t, c, "DEAD").State == "lapsed"
	})
	t.Logf("the dead lease lapsed %v after space returned", time.Since(freed).Round(time.Millisecond))
	if code := readyz(t, p.URL); code != http.StatusOK {
		t.Errorf("/readyz answered %d once writes succeed again, want 200", code)
	}
	time.Sleep(grace)
	for _, a := range agents {
		if l := leaseOf(t, c, a.ticket.ID); l.State != "held" {
			t.Errorf("healthy lease %s is %s (%s) after the grace", a.ticket.ID, l.State, l.EndReason)
		}
	}
}

// cluster is a PostgreSQL server of a test's own, run by the postgres
// user in a fresh data directory, so that stopping it disturbs no other
// test.
type cluster struct {
	bin, dir, user string
	port           int
}

// privatePostgres starts a cluster of t's own on a free loopback port;
// it is stopped and removed when t ends. Needs root (the server runs as
// the postgres user) and Debian's PostgreSQL binaries; CI has both.
func privatePostgres(t *testing.T) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: a private PostgreSQL cluster runs as the postgres user, which needs root")
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Skip("skipping: no /usr/lib/postgresql/*/bin/initdb (Debian's postgresql package)")
	}
	if _, err := user.Lookup("postgres"); err != nil {
		t.Skipf("skipping: no postgres user: %v", err)
	}
	dir, err := os.MkdirTemp("", "warp-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if out, err := exec.Command("chown", "postgres:postgres", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v: %s", err, out)
	}
	c := &cluster{bin: filepath.Dir(bins[0]), dir: dir, user: "postgres"}
	if out, err := c.run("initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c.start(t)
	t.Cleanup(func() { _ = c.run("pg_ctl", "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop").Run() })
	return c
}

func (c *cluster) run(tool string, args ...string) *exec.Cmd {
	return exec.Command("runuser", append([]string{"-u", c.user, "--", filepath.Join(c.bin, tool)}, args...)...)
}

func (c *cluster) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

func (c *cluster) start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off", c.port, c.dir)
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

func (c *cluster) stop(t *testing.T) {
	t.Helper()
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// PostgreSQL stopped for 1.5× the window under two warp replicas while
// their agents keep working: no healthy lease lapses when it comes back,
// and a dead one lapses once the gap's grace ends. The cluster is the
// test's own (privatePostgres), so the outage touches no other test.
func TestPostgresOutageTwoReplicas(t *testing.T) {
	pg := privatePostgres(t)
	var replicas []*warpclitest.Process
	var clients []*client.Client
	for range 2 {
		p := serve(t, pg.dsn())
		replicas = append(replicas, p)
		clients = append(clients, client.NewClient(p.URL, ""))
	}
	var agents []*agent
	for i := range 6 {
		c := clients[i%2] // each replica serves half the fleet
		a := work(c, claim(t, c, fmt.Sprintf("H-%d", i)))
		agents = append(agents, a)
		defer a.Stop()
	}
	claim(t, clients[0], "DEAD")
	time.Sleep(time.Second)

	pg.stop(t)
	down := time.Now()
	time.Sleep(window * 3 / 2)
	for i, p := range replicas {
		if code := readyz(t, p.URL); code != http.StatusServiceUnavailable {
			t.Errorf("replica %d: /readyz answered %d with its database down, want 503", i, code)
		}
	}
	pg.start(t)
	back := time.Now()
	t.Logf("PostgreSQL was down for %v", back.Sub(down).Round(time.Millisecond))

	var once sync.Once
	poll(t, "the dead lease to lapse", func() bool {
		for _, a := range agents {
			if l := leaseOf(t, clients[1], a.ticket.ID); l.State != "held" {
				once.Do(func() {
					t.Errorf("healthy lease %s is %s (%s) after the outage", a.ticket.ID, l.State, l.EndReason)
				})
			}
		}
		return leaseOf(t, clients[1], "DEAD").State == "lapsed"
	})
	late := time.Since(back)
	t.Logf("the dead lease lapsed %v after PostgreSQL came back", late.Round(time.Millisecond))
	// The pools reconnect within a few sweeps: the bound is the grace,
	// a sweep, and that reconnection.
	if late > grace+2*sweep+2*time.Second {
		t.Errorf("the dead lease lapsed %v after PostgreSQL came back, want within the grace and a sweep (%v) plus reconnection", late, grace+sweep)
	}
	time.Sleep(grace)
	for _, a := range agents {
		if l := leaseOf(t, clients[0], a.ticket.ID); l.State != "held" {
			t.Errorf("healthy lease %s is %s (%s) after the grace", a.ticket.ID, l.State, l.EndReason)
		}
	}
}
