package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/warp"
)

// LoopResult is the cost of one heartbeat loop while it sends Ticks heartbeats.
type LoopResult struct {
	Loop  string `json:"loop"`
	Ticks int    `json:"ticks"`
	// RSSKiB is the loop's resident memory at the end (bash: the shell; a
	// curl runs beside it each tick, see CurlRSSKiB).
	RSSKiB int64 `json:"rss_kib"`
	// AnonKiB is the part of RSSKiB that is the loop's own (RssAnon): the
	// rest are pages of its binary and libraries, shared by every loop
	// of a host.
	AnonKiB int64 `json:"anon_kib"`
	// CPUPerTickMs is CPU per heartbeat sent: for a gyrum loop the time
	// its threads spent on a CPU (schedstat, in ns); for bash the shell
	// and the curl children it waited for, from /proc/PID/stat in clock
	// ticks of 10 ms (resolution 10 ms / Ticks).
	CPUPerTickMs float64 `json:"cpu_per_tick_ms"`
	// CurlRSSKiB is the RSS of one curl while it waits for an answer (bash
	// loop only), sampled from /proc.
	CurlRSSKiB int64 `json:"curl_rss_kib,omitempty"`
}

// tickCounter counts heartbeats per ticket in front of the API.
type tickCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// byTicket counts each heartbeat under the ticket its body names, after
// the API answered it with 200.
func byTicket(c *tickCounter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == slowPath {
			// Holds a curl open so its RSS can be sampled.
			time.Sleep(300 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Method != http.MethodPost || (r.URL.Path != "/heartbeat" && r.URL.Path != "/v1/heartbeat") {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, httpapi.MaxBodyBytes+1))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var hb struct {
			Ticket string `json:"ticket"`
		}
		_ = json.Unmarshal(body, &hb)
		sw := &okWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		if sw.status == http.StatusOK {
			c.mu.Lock()
			c.n[hb.Ticket]++
			c.mu.Unlock()
		}
	})
}

type okWriter struct {
	http.ResponseWriter
	status int
}

func (w *okWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (c *tickCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// benchLoops measures gyrum's loop as start-work spawns it (gyrum
// heartbeat run, POSTing v2 every TickInterval with fresh activity) and
// the pre-ADR bash loop (sleep; curl the v1 body) at the same interval,
// from /proc.
func benchLoops(ctx context.Context, cfg Config, root string) ([]LoopResult, error) {
	dir := filepath.Join(root, "loops")
	if err := mkdir(dir); err != nil {
		return nil, err
	}
	tc := &tickCounter{n: map[string]int{}}
	// Heartbeats are told apart by ticket: B-1 gyrum, B-2 bash.
	ws, err := startWarp(ctx, dir, warp.Config{}, 2, 1, false, func(h http.Handler) http.Handler { return byTicket(tc, h) })
	if err != nil {
		return nil, err
	}
	defer ws.close()
	if _, err := ws.svc.Claim(ctx, "B-2", warp.ClaimRequest{Agent: "bash", Host: "bench"}); err != nil {
		return nil, fmt.Errorf("bench: claim B-2: %w", err)
	}
	g, err := gyrumLoop(ctx, cfg, dir, ws.url(), tc, "B-1")
	if err != nil {
		return nil, err
	}
	b, err := bashLoop(ctx, cfg, dir, ws.url(), tc)
	if err != nil {
		return nil, err
	}
	return []LoopResult{g, b}, nil
}

func gyrumLoop(ctx context.Context, cfg Config, dir, url string, tc *tickCounter, ticket string) (LoopResult, error) {
	wt := filepath.Join(dir, "worktree-"+ticket)
	if err := mkdir(wt); err != nil {
		return LoopResult{}, err
	}
	watched := exec.Command("sleep", "1000000")
	if err := watched.Start(); err != nil {
		return LoopResult{}, fmt.Errorf("bench: %w", err)
	}
	wid, _ := proc.Lookup(watched.Process.Pid)
	defer func() {
		_ = proc.Signal(wid, syscall.SIGKILL)
		_ = watched.Wait()
	}()
	iv := secs(cfg.TickInterval)
	sw := exec.CommandContext(ctx, cfg.Gyrum, "start-work", ticket, "--dir", wt, "--watch-pid", strconv.Itoa(watched.Process.Pid))
	sw.Env = append(os.Environ(), "WARP_URL="+url, "GYRUM_HOME="+filepath.Join(dir, "home"),
		"HEARTBEAT_INTERVAL_SECS="+iv, "HEARTBEAT_ACTIVITY_STALENESS_SECS=100000", "HEARTBEAT_INFLIGHT_MAX_SECS=100000")
	if out, err := sw.CombinedOutput(); err != nil {
		return LoopResult{}, fmt.Errorf("bench: gyrum start-work: %w: %s", err, strings.TrimSpace(string(out)))
	}
	d := gyrumdir.Dir{Worktree: wt, Path: filepath.Join(wt, gyrumdir.DirName)}
	_ = d.TouchActivity(time.Now())
	var loop proc.Identity
	deadline := time.Now().Add(5 * time.Second)
	for {
		id, err := d.ReadPID(gyrumdir.LoopPIDFile)
		if err == nil {
			loop = id
			break
		}
		if time.Now().After(deadline) {
			return LoopResult{}, fmt.Errorf("bench: no heartbeat.pid after start-work: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = proc.Stop(sctx, loop, 2*time.Second)
	}()
	// Keep the activity fresh as a working agent's hook would.
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for tctx.Err() == nil {
			_ = d.TouchActivity(time.Now())
			select {
			case <-tctx.Done():
			case <-time.After(cfg.TickInterval):
			}
		}
	}()
	r, err := measure(ctx, cfg, loop.PID, ticket, tc, false)
	r.Loop = "gyrum heartbeat run (v2, activity-gated, as start-work spawns it)"
	if dynamicallyLinked(loop.PID) {
		r.Loop += " — linked dynamically (cgo): a release is static, build with CGO_ENABLED=0 to measure what ships"
	}
	return r, err
}

func bashLoop(ctx context.Context, cfg Config, dir, url string, tc *tickCounter) (LoopResult, error) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		return LoopResult{}, fmt.Errorf("bench: the bash loop needs curl: %w", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return LoopResult{}, fmt.Errorf("bench: %w", err)
	}
	// lib/heartbeat.sh of the v1 heartbeat contract, as the decision record describes it.
	script := `while sleep "$IV"; do curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"ticket":"B-2","host":"bench","agent":"bash"}' "$URL/heartbeat"; done`
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), "IV="+secs(cfg.TickInterval), "URL="+url, "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return LoopResult{}, fmt.Errorf("bench: start the bash loop: %w", err)
	}
	id, _ := proc.Lookup(cmd.Process.Pid)
	defer func() {
		// The whole group: the shell and a curl it may be running.
		_ = proc.Signal(id, syscall.SIGTERM)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	r, err := measure(ctx, cfg, cmd.Process.Pid, "B-2", tc, true)
	r.Loop = "bash: while sleep; do curl (v1); done"
	if err != nil {
		return r, err
	}
	r.CurlRSSKiB, err = curlRSS(ctx, curl, url)
	if err != nil {
		return r, err
	}
	return r, nil
}

// slowPath answers after a pause, so a client's RSS can be sampled.
const slowPath = "/bench/slow"

// curlRSS runs the bash loop's curl against slowPath and returns the
// largest VmRSS seen while it waits, over a few runs.
func curlRSS(ctx context.Context, curl, url string) (int64, error) {
	var best int64
	for range 3 {
		c := exec.CommandContext(ctx, curl, "-s", "-o", "/dev/null", "-X", "POST", "-H", "Content-Type: application/json",
			"-d", `{"ticket":"B-2"}`, url+slowPath)
		if err := c.Start(); err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		for waiting := true; waiting; {
			if v, err := rssKiB(c.Process.Pid); err == nil {
				best = max(best, v)
			}
			select {
			case err := <-done:
				if err != nil {
					return 0, fmt.Errorf("bench: curl: %w", err)
				}
				waiting = false
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("bench: could not sample curl's RSS")
	}
	return best, nil
}

// goLoopWarmup is how many heartbeats a Go loop sends before it is measured.
const goLoopWarmup = 40

// measure waits for a few warm-up heartbeats of ticket, then samples the
// CPU time of pid (with its waited-for children when children) across
// Ticks heartbeats, and its RSS at the end.
func measure(ctx context.Context, cfg Config, pid int, ticket string, tc *tickCounter, children bool) (LoopResult, error) {
	wait := func(n int) error {
		deadline := time.Now().Add(time.Duration(n+5)*cfg.TickInterval*4 + 10*time.Second)
		for tc.get(ticket) < n {
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: loop of %s sent %d heartbeats, want %d", ticket, tc.get(ticket), n)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	}
	warm := 5
	if !children {
		// A Go loop: past its first garbage collection (its heap grows to
		// the collector's ~1 MB minimum goal first, ~25 ticks), so the RSS
		// is the one it keeps at rest, not a young process's.
		warm = goLoopWarmup
	}
	if err := wait(warm); err != nil {
		return LoopResult{}, err
	}
	c0 := tc.get(ticket)
	cpu0, err := cpuTime(pid, children)
	if err != nil {
		return LoopResult{}, err
	}
	if err := wait(c0 + cfg.Ticks); err != nil {
		return LoopResult{}, err
	}
	cpu1, err := cpuTime(pid, children)
	if err != nil {
		return LoopResult{}, err
	}
	ticks := tc.get(ticket) - c0
	rss, err := rssKiB(pid)
	if err != nil {
		return LoopResult{}, err
	}
	anon, err := anonKiB(pid)
	if err != nil {
		return LoopResult{}, err
	}
	return LoopResult{Ticks: ticks, RSSKiB: rss, AnonKiB: anon, CPUPerTickMs: ms(cpu1-cpu0) / float64(ticks)}, nil
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
