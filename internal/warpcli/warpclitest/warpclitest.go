// Package warpclitest starts warp servers for tests and stops them when
// the test ends: in-process with Start (warpcli.Main on 127.0.0.1:0, a
// fresh SQLite file, a clock in the test's hands), or as a `warp serve`
// process with StartProcess.
package warpclitest

import (
	"bufio"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// T0 is where the clock of a server started by Start begins.
var T0 = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

// Server is a warp server run in-process by Start.
type Server struct {
	*warpcli.Main
	// Clock is the service clock (ServeConfig.Now), at T0 when the server
	// starts; it stands still until the test moves it. An edit that sets
	// ServeConfig.Now replaces it, and then Clock drives nothing.
	Clock *storetest.Clock
}

// Start runs a warp server in-process for tb and returns once it accepts
// connections. Its configuration is warpcli.DefaultServeConfig with the
// address 127.0.0.1:0, a fresh SQLite file in tb.TempDir(), a sweep
// interval of an hour (the expiry job sweeps once at start; tests sweep
// with Expiry.RunOnce) and Clock as the service clock; edit, when not nil,
// changes it before the start (a postgres:// URL as DB, tokens, policy,
// logger, dashboard...). The server is closed when tb ends; an error
// closing it fails the test.
func Start(tb testing.TB, edit func(*warpcli.ServeConfig)) *Server {
	tb.Helper()
	clk := storetest.NewClock(T0)
	cfg := warpcli.DefaultServeConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = filepath.Join(tb.TempDir(), "warp.db")
	cfg.SweepInterval = time.Hour
	cfg.Now = clk.Now
	if edit != nil {
		edit(&cfg)
	}
	m := warpcli.NewMain(cfg)
	if err := m.Run(context.Background()); err != nil {
		tb.Fatalf("start warp: %v", err)
	}
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Errorf("close warp: %v", err)
		}
	})
	// The job's sweep at start runs on its own goroutine: on a loaded
	// machine it could land after the test has moved the clock and sent
	// heartbeats, and record what the test's own sweep is to find.
	select {
	case <-m.Expiry.FirstSweep():
	case <-time.After(30 * time.Second):
		tb.Fatalf("warp's first sweep did not run within 30 s")
	}
	return &Server{Main: m, Clock: clk}
}

// Metrics reads the server's /metrics with token and parses it: every
// metric family by name. A failed read or parse fails tb.
func (s *Server) Metrics(tb testing.TB, token string) map[string]*dto.MetricFamily {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("scrape: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		tb.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// Client returns an API client of the server with token ("" for none).
func (s *Server) Client(token string) *client.Client {
	return client.NewClient(s.URL(), token)
}

// ProcessStartTimeout bounds how long StartProcess waits for a process
// to announce its address.
const ProcessStartTimeout = 20 * time.Second

// listening is the log line of warp serve announcing its address.
var listening = regexp.MustCompile(`warp listening on (http://127\.0\.0\.1:\d+)`)

// Process is a `warp serve` process started by StartProcess.
type Process struct {
	// Cmd is the running command; signal it through Cmd.Process.
	Cmd *exec.Cmd
	// URL is the base URL the process announced.
	URL string

	log  logBuffer
	done chan struct{}
}

// StartProcess starts cmd, a `warp serve` command line listening on
// 127.0.0.1 (port 0 is fine), collects its log from stderr and waits up
// to ProcessStartTimeout for the line that announces its address. The
// process is killed when tb ends, and its log is logged when tb failed.
func StartProcess(tb testing.TB, cmd *exec.Cmd) *Process {
	tb.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.log.writeLine(sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if tb.Failed() {
			tb.Logf("log of warp pid %d:\n%s", cmd.Process.Pid, p.Log())
		}
	})
	select {
	case p.URL = <-found:
	case <-p.done:
		tb.Fatalf("warp serve exited before listening: %s", p.Log())
	case <-time.After(ProcessStartTimeout):
		tb.Fatalf("warp serve not listening within %s: %s", ProcessStartTimeout, p.Log())
	}
	return p
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Log returns what the process logged so far.
func (p *Process) Log() string { return p.log.String() }

// logBuffer collects a process's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *logBuffer) writeLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
	b.b.WriteByte('\n')
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
