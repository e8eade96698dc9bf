package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Scaled time: ticks of 100 ms, staleness 600 ms, in-flight cap 1.5 s.
var scaled = heartbeat.Durations{Interval: 100 * time.Millisecond, Staleness: 600 * time.Millisecond, InFlightMax: 1500 * time.Millisecond}

type running struct {
	t      testing.TB
	loop   *heartbeat.Loop
	dir    gyrumdir.Dir
	reg    gyrumdir.Registry
	cancel context.CancelFunc
	done   chan struct{}
	exit   heartbeat.Exit
	err    error

	mu     sync.Mutex
	sleeps []time.Duration
}

func (r *running) sleepCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sleeps)
}

func (r *running) sleepLog() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sleeps...)
}

// wait waits for the loop to end and returns its exit.
func (r *running) wait() heartbeat.Exit {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.t.Fatal("loop did not exit within 10 s")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		r.t.Fatalf("Run: %v", r.err)
	}
	return r.exit
}

func (r *running) state() gyrumdir.LoopState {
	s, _ := r.dir.ReadState()
	return s
}

func startLoop(t *testing.T, d gyrumdir.Dir, mod func(*heartbeat.Config)) *running {
	t.Helper()
	r := prepareLoop(t, d, mod)
	r.start()
	return r
}

// prepareLoop builds the loop without starting it, so server hooks can
// refer to it before its first POST.
func prepareLoop(t testing.TB, d gyrumdir.Dir, mod func(*heartbeat.Config)) *running {
	t.Helper()
	r := &running{t: t, dir: d, reg: gyrumdir.NewRegistry(t.TempDir()), done: make(chan struct{})}
	cfg := heartbeat.Config{Dir: d, Registry: r.reg, Durations: scaled, Logger: slog.New(slog.DiscardHandler)}
	cfg.Sleep = func(ctx context.Context, dur time.Duration) error {
		r.mu.Lock()
		r.sleeps = append(r.sleeps, dur)
		r.mu.Unlock()
		tm := time.NewTimer(dur)
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tm.C:
			return nil
		}
	}
	if mod != nil {
		mod(&cfg)
	}
	loop, err := heartbeat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.loop = loop
	return r
}

func (r *running) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		exit, err := r.loop.Run(ctx)
		r.mu.Lock()
		r.exit, r.err = exit, err
		r.mu.Unlock()
	}()
	r.t.Cleanup(func() { cancel(); <-r.done })
}

// exited returns the exit so far ("" while running).
func (r *running) exited() heartbeat.Exit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exit
}

// mark is a value set by a server hook and read by the test.
type mark struct {
	mu     sync.Mutex
	n, aux int
	set    bool
}

func (m *mark) put(n, aux int) {
	m.mu.Lock()
	m.n, m.aux, m.set = n, aux, true
	m.mu.Unlock()
}

func (m *mark) get() (n, aux int, set bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n, m.aux, m.set
}

// assertUnregistered checks that the loop removed its pid file and
// registry entry.
func assertUnregistered(t *testing.T, r *running) {
	t.Helper()
	if _, err := r.dir.ReadPID(gyrumdir.LoopPIDFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("heartbeat.pid after exit: %v", err)
	}
	es, bad, err := r.reg.List()
	if err != nil || len(es) != 0 || len(bad) != 0 {
		t.Errorf("registry after exit: %v %v %v", es, bad, err)
	}
}

func TestRegistersWhileRunning(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-reg", ws.Claim("T-reg", "A"), parent)
	r := startLoop(t, d, nil)
	waitFor(t, "two heartbeats", func() bool { return ws.Count() >= 2 })
	self, _ := proc.Self()
	if id, err := d.ReadPID(gyrumdir.LoopPIDFile); err != nil || id != self {
		t.Fatalf("heartbeat.pid: %v, %v, want %v", id, err, self)
	}
	es, _, _ := r.reg.List()
	if len(es) != 1 || es[0].Identity() != self || es[0].Dir != d.Worktree || es[0].Ticket != "T-reg" {
		t.Fatalf("registry: %+v", es)
	}
	b := ws.Beats()[0]
	if b.Body.SchemaVersion == nil || *b.Body.SchemaVersion != 2 || b.Body.Epoch != 1 || b.Body.ActivityAgeS == nil || b.Status != 200 {
		t.Fatalf("first heartbeat: %+v", b)
	}
	// SIGTERM (the context) ends the loop and cleans up.
	r.cancel()
	if exit := r.wait(); exit != heartbeat.ExitSignal {
		t.Fatalf("exit %q, want signal", exit)
	}
	assertUnregistered(t, r)
	if st := r.state(); st.LastOutcome != "exit: signal" || st.Posts < 2 {
		t.Fatalf("state: %+v", st)
	}
}

func TestOrphanExitsWithinOneTick(t *testing.T) {
	ws := newWarp(t)
	cmd, parent := watched(t)
	d := worktree(t, ws, "T-orphan", ws.Claim("T-orphan", "A"), parent)
	r := prepareLoop(t, d, nil)
	var killed mark
	ws.SetBefore(func(n int, b client.HeartbeatRequest) {
		if n == 3 { // the agent dies while the loop's third POST is in flight
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			waitFor(t, "the agent to die", func() bool { return !parent.Alive() })
			killed.put(n, r.sleepCount())
		}
	})
	r.start()
	if exit := r.wait(); exit != heartbeat.ExitParentExited {
		t.Fatalf("exit %q, want parent-exited", exit)
	}
	killedAt, sleepsAtKill, _ := killed.get()
	after := ws.Beats()[killedAt:]
	if len(after) != 1 || after[0].Body.Exit != "parent-exited" || after[0].Status != 200 {
		t.Fatalf("after the kill the server got %+v, want exactly one exit report", after)
	}
	if n := r.sleepCount() - sleepsAtKill; n != 1 {
		t.Fatalf("loop slept %d times after the kill, want 1 (exit on the next tick)", n)
	}
	assertUnregistered(t, r)
	if l := ws.Lease("T-orphan"); l.Exit != "parent-exited" {
		t.Fatalf("server lease exit %q", l.Exit)
	}
	// Nothing else arrives later.
	n := ws.Count()
	time.Sleep(3 * scaled.Interval)
	if ws.Count() != n {
		t.Fatal("heartbeats after the loop exited")
	}
}

func TestRecycledParentPIDIsDead(t *testing.T) {
	ws := newWarp(t)
	_, live := watched(t)
	// A live pid with the wrong start time is what a recycled pid looks like.
	d := worktree(t, ws, "T-reuse", ws.Claim("T-reuse", "A"), proc.Identity{PID: live.PID, StartTime: live.StartTime + 1})
	r := startLoop(t, d, nil)
	if exit := r.wait(); exit != heartbeat.ExitParentExited {
		t.Fatalf("exit %q, want parent-exited", exit)
	}
	bs := ws.Beats()
	if len(bs) != 1 || bs[0].Body.Exit != "parent-exited" {
		t.Fatalf("server got %+v, want only the exit report", bs)
	}
	if !live.Alive() {
		t.Fatal("the process that owns the pid was harmed")
	}
	assertUnregistered(t, r)
}

// A wedged agent: once its activity is stale the loop keeps POSTing, but
// stale reports — the lease shows "stalled", not "silent", and is not
// extended. Activity resumes the heartbeats proper.
func TestWedgedAgentReportsStaleAndResumes(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-wedged", ws.Claim("T-wedged", "A"), parent)
	lastTouch, _ := d.LastActivity()
	r := startLoop(t, d, nil)
	stale := func() int {
		n := 0
		for _, b := range ws.Answered() {
			if b.Body.Stale {
				n++
			}
		}
		return n
	}
	waitFor(t, "a stale report", func() bool { return stale() >= 1 })
	waitFor(t, "three more stale reports", func() bool { return stale() >= 4 })
	for _, b := range ws.Answered() {
		// The loop decides on the age at the tick's start and sends that
		// age plus the tick's own time (so warp credits no more than the
		// evidence): a report decided just under the limit may carry an
		// age a few milliseconds over it.
		age, limit := *b.Body.ActivityAgeS, scaled.Staleness.Seconds()
		const tickSlack = 0.05
		if (b.Body.Stale && age <= limit) || (!b.Body.Stale && age > limit+tickSlack) {
			t.Errorf("heartbeat with age %.3fs (limit %.1fs) has stale=%v", age, limit, b.Body.Stale)
		}
		if b.Status != 200 {
			t.Errorf("heartbeat answered %d", b.Status)
		}
	}
	// The server credits the evidence and nothing more: the ages are
	// measured on the loop, so each POST's latency is all it may add. A
	// server that took a stale report for activity would have moved it a
	// whole staleness limit (and the ticks since) past the touch; half the
	// limit tells the two apart and leaves a loaded host's POSTs 300 ms.
	l := ws.Lease("T-wedged")
	if l.LastActivityAt.After(lastTouch.Add(scaled.Staleness / 2)) {
		t.Errorf("stale reports moved last_activity_at to %v, past the last touch %v", l.LastActivityAt, lastTouch)
	}
	expires := l.ExpiresAt
	if st := r.state(); st.LastOutcome != "stale-report" || st.Skips != 0 {
		t.Fatalf("state %+v, want last outcome stale-report and no skips", st)
	}
	// The hook touches last-activity: heartbeats proper resume.
	n := len(ws.Answered())
	touched := time.Now()
	if err := d.TouchActivity(touched); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a fresh heartbeat", func() bool {
		bs := ws.Answered()
		return len(bs) > n && !bs[len(bs)-1].Body.Stale
	})
	if l := ws.Lease("T-wedged"); l.LastActivityAt.Before(touched.Add(-50*time.Millisecond)) || !l.ExpiresAt.After(expires) {
		t.Fatalf("server last_activity_at %v (touch at %v), expires_at %v (was %v)", l.LastActivityAt, touched, l.ExpiresAt, expires)
	}
}

// A tool call backed by a live process of the agent (its Bash shell)
// counts as in flight until the in-flight cap, then the reports go stale.
func TestBackedToolCallCountsUntilTheCap(t *testing.T) {
	ws := newWarp(t)
	ag := startAgent(t)
	d := worktree(t, ws, "T-long", ws.Claim("T-long", "A"), ag.id)
	d.TouchActivity(time.Now().Add(-time.Hour)) // already stale
	start := time.Now()
	if err := d.StartInFlight("toolu_long", "Bash", start); err != nil {
		t.Fatal(err)
	}
	ag.run("sleep 100") // the call's process
	r := startLoop(t, d, nil)
	waitFor(t, "stale reports after the cap", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	past := 0
	for _, b := range ws.Answered() {
		if b.Body.Stale {
			if b.At.Sub(start) < scaled.InFlightMax {
				t.Errorf("stale report %v after the call started, before the %v cap", b.At.Sub(start), scaled.InFlightMax)
			}
			continue
		}
		if b.Body.InFlight != "Bash" || *b.Body.ActivityAgeS != 0 {
			t.Fatalf("heartbeat while in flight: %+v", b.Body)
		}
		if b.At.Sub(start) > scaled.Staleness {
			past++
		}
	}
	if past < 3 {
		t.Fatalf("%d heartbeats past the staleness limit, want the long step to keep POSTing", past)
	}
	if l := ws.Lease("T-long"); !l.LastActivityAt.After(start.Add(scaled.Staleness)) {
		t.Fatalf("server credited activity only up to %v (step started %v)", l.LastActivityAt, start)
	}
	// PostToolUse at last: removes the marker, touches, heartbeats resume.
	n := len(ws.Answered())
	d.EndInFlight("toolu_long")
	d.TouchActivity(time.Now())
	waitFor(t, "a fresh heartbeat", func() bool {
		bs := ws.Answered()
		return len(bs) > n && !bs[len(bs)-1].Body.Stale
	})
	if bs := ws.Answered(); bs[len(bs)-1].Body.InFlight != "" {
		t.Fatalf("in_flight after the call ended: %q", bs[len(bs)-1].Body.InFlight)
	}
	_ = r
}

// A call that nothing backs — denied, or blocked by another PreToolUse
// hook, so no Post event ever removes its marker — proves only that it
// started: the lease goes stale one staleness limit after it, not after
// the in-flight cap.
func TestUnbackedMarkerCountsOnlyItsStart(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t) // a process without children
	d := worktree(t, ws, "T-denied", ws.Claim("T-denied", "A"), parent)
	d.TouchActivity(time.Now().Add(-time.Hour))
	start := time.Now()
	if err := d.StartInFlight("toolu_denied", "Bash", start); err != nil {
		t.Fatal(err)
	}
	startLoop(t, d, func(c *heartbeat.Config) { c.Durations.InFlightMax = time.Hour })
	waitFor(t, "stale reports", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	for _, b := range ws.Answered() {
		if b.Body.InFlight != "" {
			t.Errorf("an unbacked marker was reported in flight: %+v", b.Body)
		}
		want := b.At.Sub(start).Seconds()
		if got := *b.Body.ActivityAgeS; got < want-0.05 || got > want+0.05 {
			t.Errorf("activity age %.3fs at %.3fs after the call started: want the call's start", got, want)
		}
	}
	if l := ws.Lease("T-denied"); l.LastActivityAt.After(start.Add(50 * time.Millisecond)) {
		t.Fatalf("server last_activity_at %v is after the denied call's start %v", l.LastActivityAt, start)
	}
}

// Work the agent's own processes do in the background counts: a CPU-bound
// job keeps the heartbeats fresh past the staleness limit, but no longer
// than the in-flight cap after the agent's own last tool call.
func TestBackgroundWorkCountsUpToTheCap(t *testing.T) {
	ws := newWarp(t)
	ag := startAgent(t)
	d := worktree(t, ws, "T-bg", ws.Claim("T-bg", "A"), ag.id)
	last := time.Now()
	d.TouchActivity(last) // the tool call that started the job
	ag.run("exec timeout 30 sh -c 'while :; do :; done'")
	lim := scaled
	lim.InFlightMax = 2 * time.Second
	startLoop(t, d, func(c *heartbeat.Config) { c.Durations = lim })
	stopBy := last.Add(lim.InFlightMax + lim.Staleness + 2*lim.Interval)
	waitFor(t, "stale reports after the cap", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	fresh, early := 0, 0
	for _, b := range ws.Answered() {
		since := b.At.Sub(last)
		switch {
		case !b.Body.Stale && since > lim.Staleness+lim.Interval:
			fresh++
			if !strings.HasPrefix(b.Body.InFlight, heartbeat.BackgroundPrefix) {
				t.Errorf("in_flight %q while only the background job works, want %q + its name", b.Body.InFlight, heartbeat.BackgroundPrefix)
			}
			if b.At.After(stopBy) {
				t.Errorf("fresh heartbeat %v after the last tool call: the cap is %v", since, lim.InFlightMax)
			}
		case b.Body.Stale && since < lim.InFlightMax:
			// On a starved machine the job may get less CPU than the busy
			// threshold in one sampling window (it failed CI once with the
			// machine loaded): one such report is tolerated, a pattern is not.
			early++
			t.Logf("stale report %v after the last tool call while the job was busy", since)
		}
	}
	if early > 1 {
		t.Errorf("%d stale reports before the cap while the job was busy, want the busy job to keep the lease", early)
	}
	if fresh < 3 {
		t.Fatalf("%d fresh heartbeats past the staleness limit, want the busy job to keep the lease", fresh)
	}
}

// An idle background process (a dev server at rest, a call hung on the
// network) is not work.
func TestIdleBackgroundDoesNotCount(t *testing.T) {
	ws := newWarp(t)
	ag := startAgent(t)
	d := worktree(t, ws, "T-idle", ws.Claim("T-idle", "A"), ag.id)
	last := time.Now()
	d.TouchActivity(last)
	ag.run("sleep 100")
	startLoop(t, d, nil)
	waitFor(t, "a stale report", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	for _, b := range ws.Answered() {
		if !b.Body.Stale && b.At.Sub(last) > scaled.Staleness+scaled.Interval {
			t.Errorf("fresh heartbeat %v after the last tool call with only an idle child", b.At.Sub(last))
		}
	}
}

func TestDeclaredWaitCounts(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-wait", ws.Claim("T-wait", "A"), parent)
	d.TouchActivity(time.Now().Add(-time.Hour))
	now := time.Now()
	d.WriteWait(gyrumdir.Wait{Reason: "CI", DeclaredAt: now, Until: now.Add(time.Hour)})
	startLoop(t, d, nil)
	waitFor(t, "stale reports after the cap", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	fresh := 0
	for _, b := range ws.Answered() {
		if b.Body.Stale || b.At.After(now.Add(scaled.InFlightMax)) {
			continue // after the cap the wait counts as activity at its end
		}
		fresh++
		if b.Body.InFlight != "wait: CI" || *b.Body.ActivityAgeS != 0 {
			t.Fatalf("heartbeat during the wait: %+v", b.Body)
		}
	}
	if fresh < 3 {
		t.Fatalf("only %d heartbeats during the wait", fresh)
	}
}

// A wait.json declared in the future (committed by a repository, dated
// 2099) counts for nothing: the wedged agent's lease goes stale.
func TestFutureWaitDoesNotCount(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-wait99", ws.Claim("T-wait99", "A"), parent)
	d.TouchActivity(time.Now().Add(-time.Hour))
	far := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := d.WriteWait(gyrumdir.Wait{Reason: "forever", DeclaredAt: far, Until: far.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	startLoop(t, d, nil)
	waitFor(t, "a stale report", func() bool {
		bs := ws.Answered()
		return len(bs) > 0 && bs[len(bs)-1].Body.Stale
	})
	for _, b := range ws.Answered() {
		if b.Body.InFlight != "" {
			t.Fatalf("heartbeat %+v: the future wait counted as in flight", b.Body)
		}
	}
	if a, err := d.Activity(time.Now(), time.Hour); err != nil || a.InFlight != "" || a.Age < 30*time.Minute {
		t.Fatalf("Activity = %+v, %v: the future wait counted", a, err)
	}
}

func TestEndedElsewhereExitsOn410(t *testing.T) {
	for _, how := range []string{"complete", "release"} {
		t.Run(how, func(t *testing.T) {
			ws := newWarp(t)
			_, parent := watched(t)
			id := "T-" + how
			epoch := ws.Claim(id, "A")
			d := worktree(t, ws, id, epoch, parent)
			r := prepareLoop(t, d, nil)
			var ended mark
			ws.SetBefore(func(n int, b client.HeartbeatRequest) {
				if n != 2 {
					return
				}
				var err error
				if how == "complete" {
					_, err = ws.Svc.Complete(context.Background(), id, epoch, "https://example.com/pr/1")
				} else {
					_, err = ws.Svc.Release(context.Background(), id, epoch, "operator")
				}
				if err != nil {
					t.Error(err)
				}
				ended.put(n, r.sleepCount())
			})
			r.start()
			if exit := r.wait(); exit != heartbeat.ExitLeaseEnded {
				t.Fatalf("exit %q, want lease-ended", exit)
			}
			at, sleepsAt, _ := ended.get()
			after := ws.Beats()[at-1:]
			if len(after) != 1 || after[0].Status != http.StatusGone {
				t.Fatalf("beats from the ending one on: %+v, want a single 410", after)
			}
			if r.sleepCount() != sleepsAt {
				t.Fatalf("loop slept %d more times after the 410", r.sleepCount()-sleepsAt)
			}
			assertUnregistered(t, r)
			// The agent will be told how, from the 410's own detail.
			want := map[string]string{"complete": gyrumdir.EndCompleted, "release": gyrumdir.EndReleased}[how]
			n, err := d.ReadNotice()
			if err != nil || n.Ticket != id || n.How != want || (how == "release" && n.Reason != "operator") {
				t.Errorf("notice %+v (%v), want %s of %s", n, err, want, id)
			}
		})
	}
}

func TestReclaimedElsewhereExitsOn409(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	epoch := ws.Claim("T-steal", "A")
	d := worktree(t, ws, "T-steal", epoch, parent)
	ws.SetBefore(func(n int, b client.HeartbeatRequest) {
		if n == 2 {
			ws.Svc.Release(context.Background(), "T-steal", epoch, "operator")
			ws.Claim("T-steal", "B")
		}
	})
	r := startLoop(t, d, nil)
	if exit := r.wait(); exit != heartbeat.ExitStaleEpoch {
		t.Fatalf("exit %q, want stale-epoch", exit)
	}
	bs := ws.Beats()
	if last := bs[len(bs)-1]; last.Status != http.StatusConflict || len(bs) != 2 {
		t.Fatalf("beats %+v, want the second answered 409 and nothing after", bs)
	}
	if l := ws.Lease("T-steal"); l.Agent != "B" || l.Epoch != epoch+1 || !l.Held() {
		t.Fatalf("new lease disturbed: %+v", l)
	}
}

func TestServerDownBacksOffAndCreditsActivity(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-down", ws.Claim("T-down", "A"), parent)
	r := startLoop(t, d, func(c *heartbeat.Config) {
		c.Durations.Staleness = 30 * time.Second // the outage must not look like a wedge
	})
	waitFor(t, "two heartbeats", func() bool { return ws.Count() >= 2 })
	ws.Down()
	sleepsAtDown := r.sleepCount()
	waitFor(t, "a failed POST", func() bool { return r.state().Failures >= 1 })
	touched := time.Now()
	d.TouchActivity(touched) // the agent works on during the outage
	waitFor(t, "four failed POSTs", func() bool { return r.state().Failures >= 4 })
	n := ws.Count()
	ws.Up()
	waitFor(t, "heartbeats to resume", func() bool {
		bs := ws.Answered()
		return len(bs) > n && bs[len(bs)-1].Status == 200
	})
	if r.exited() != "" {
		t.Fatalf("loop exited during the outage: %q", r.exited())
	}
	// Backoff: the waits after failures grow, never beyond four intervals.
	sl := r.sleepLog()[sleepsAtDown:]
	longest := time.Duration(0)
	for _, s := range sl {
		longest = max(longest, s)
		if s > 4*scaled.Interval {
			t.Fatalf("wait %v exceeds four intervals", s)
		}
	}
	if longest < 3*scaled.Interval {
		t.Fatalf("longest wait during the outage %v, want backoff towards 4 intervals (waits %v)", longest, sl)
	}
	// The server credits the activity that happened while it was down.
	l := ws.Lease("T-down")
	if l.LastActivityAt.Before(touched.Add(-50 * time.Millisecond)) {
		t.Fatalf("last_activity_at %v, before the touch during the outage at %v", l.LastActivityAt, touched)
	}
	b := ws.Beats()[n]
	if *b.Body.ActivityAgeS <= 0 {
		t.Fatalf("first heartbeat after the outage reports age %v, want the time since the touch", *b.Body.ActivityAgeS)
	}
	// And the wait is back to one interval.
	waitFor(t, "a normal wait", func() bool {
		s := r.sleepLog()
		return len(s) > 0 && s[len(s)-1] <= scaled.Interval*11/10
	})
}

func TestFallsBackToV1OnUnsupportedSchema(t *testing.T) {
	ws := newWarp(t)
	cmd, parent := watched(t)
	d := worktree(t, ws, "T-old", ws.Claim("T-old", "A"), parent)
	// An old server: it rejects schema_version 2 the way warp does for an
	// unknown version; v1 bodies reach the real server.
	speakV1Only(ws)
	r := startLoop(t, d, nil)
	waitFor(t, "four heartbeats", func() bool { return len(ws.Answered()) >= 4 })
	bs := ws.Answered()
	if bs[0].Body.SchemaVersion == nil || bs[0].Status != 400 {
		t.Fatalf("first heartbeat %+v, want a rejected v2", bs[0])
	}
	for _, b := range bs[1:] {
		if b.Body.SchemaVersion != nil || b.Status != 200 || b.Body.Ticket != "T-old" {
			t.Fatalf("after the fallback: %+v, want v1 bodies only", b)
		}
	}
	if l := ws.Lease("T-old"); l.SchemaVersion != 1 {
		t.Fatalf("server saw schema %d", l.SchemaVersion)
	}
	// The checks stay: the agent's death still ends the loop, with no
	// exit report (v1 has none).
	n := ws.Count()
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	if exit := r.wait(); exit != heartbeat.ExitParentExited {
		t.Fatalf("exit %q", exit)
	}
	for _, b := range ws.Beats()[n:] {
		if b.Body.Exit != "" || b.Body.SchemaVersion != nil {
			t.Fatalf("after death: %+v", b)
		}
	}
	if st := r.state(); st.SchemaVersion != 1 {
		t.Fatalf("state schema %d, want 1", st.SchemaVersion)
	}
}

func TestV1LoopBehavesLikeThePreADRLoop(t *testing.T) {
	ws := newWarp(t)
	cmd, parent := watched(t)
	epoch := ws.Claim("T-v1", "A")
	d := worktree(t, ws, "T-v1", epoch, parent)
	d.TouchActivity(time.Now().Add(-time.Hour)) // stale: a v1 loop does not care
	r := startLoop(t, d, func(c *heartbeat.Config) { c.SchemaVersion = 1 })
	waitFor(t, "two heartbeats", func() bool { return ws.Count() >= 2 })
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	waitFor(t, "the agent to die", func() bool { return !parent.Alive() })
	os.Remove(d.File(gyrumdir.LeaseFile))
	ws.Svc.Complete(context.Background(), "T-v1", epoch, "")
	n := ws.Count()
	waitFor(t, "three more heartbeats", func() bool { return len(ws.Answered()) >= n+3 })
	for _, b := range ws.Answered() {
		if b.Body.SchemaVersion != nil || b.Body.Exit != "" {
			t.Fatalf("v1 loop sent %+v", b.Body)
		}
	}
	if bs := ws.Answered(); bs[len(bs)-1].Status != http.StatusGone {
		t.Fatalf("spam after completion answered %d, want 410", bs[len(bs)-1].Status)
	}
	if r.exited() != "" {
		t.Fatal("v1 loop exited by itself")
	}
	r.cancel()
	if exit := r.wait(); exit != heartbeat.ExitSignal {
		t.Fatalf("exit %q", exit)
	}
	assertUnregistered(t, r)
}

func TestWorktreeGone(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-gone", ws.Claim("T-gone", "A"), parent)
	r := startLoop(t, d, nil)
	waitFor(t, "two heartbeats", func() bool { return ws.Count() >= 2 })
	// rm -rf may race the loop's state write: retry like a user would.
	waitFor(t, "the worktree to be deleted", func() bool { return os.RemoveAll(d.Worktree) == nil })
	if exit := r.wait(); exit != heartbeat.ExitWorktreeGone {
		t.Fatalf("exit %q, want worktree-gone", exit)
	}
	bs := ws.Beats()
	if last := bs[len(bs)-1]; last.Body.Exit != "worktree-gone" {
		t.Fatalf("last heartbeat %+v, want the exit report", last.Body)
	}
	reports := 0
	for _, b := range bs {
		if b.Body.Exit != "" {
			reports++
		}
	}
	if reports != 1 {
		t.Fatalf("%d exit reports", reports)
	}
	if _, err := os.Stat(d.Worktree); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the loop recreated the deleted worktree")
	}
	es, _, _ := r.reg.List()
	if len(es) != 0 {
		t.Fatalf("registry %v", es)
	}
}

func TestExitReportRetriedOnceOnly(t *testing.T) {
	ws := newWarp(t)
	cmd, parent := watched(t)
	d := worktree(t, ws, "T-retry", ws.Claim("T-retry", "A"), parent)
	ws.SetAnswer(func(b client.HeartbeatRequest, w http.ResponseWriter) bool {
		if b.Exit == "" {
			return false
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	r := startLoop(t, d, nil)
	waitFor(t, "a heartbeat", func() bool { return ws.Count() >= 1 })
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	if exit := r.wait(); exit != heartbeat.ExitParentExited {
		t.Fatalf("exit %q", exit)
	}
	var reports []float64
	for _, b := range ws.Beats() {
		if b.Body.Exit != "" {
			reports = append(reports, *b.Body.ActivityAgeS)
		}
	}
	if len(reports) != 2 {
		t.Fatalf("%d exit report attempts, want 2 (one retry)", len(reports))
	}
	// The retry waits (min(interval, 1 s)) and says so in its age: warp
	// subtracts the age from when the report arrives.
	if wait := r.sleepLog()[len(r.sleepLog())-1]; reports[1]-reports[0] < wait.Seconds() {
		t.Errorf("exit report ages %v s, then %v s after a %v wait: the retry must age by the wait", reports[0], reports[1], wait)
	}
}

// A lease.json found unreadable is skipped once (a write in progress
// cannot look so, but a tick is cheap); unreadable for more than a tick,
// the loop puts it back from memory and heartbeats on. Before, it skipped
// every tick and the lease lapsed in silence (37 skips, lapsed 19.7 s
// into a 20 s window, nothing said in 30 tool calls).
func TestCorruptLeaseIsRestoredAndSuperseded(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-c", ws.Claim("T-c", "A"), parent)
	r := startLoop(t, d, nil)
	waitFor(t, "a heartbeat", func() bool { return ws.Count() >= 1 })
	want, err := d.ReadLease()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(d.File(gyrumdir.LeaseFile), []byte("{torn"), 0o600)
	waitFor(t, "a corrupt-lease skip", func() bool { return r.state().LastOutcome == "corrupt-lease" })
	if !strings.Contains(r.state().LastError, "lease.json") {
		t.Fatalf("state error %q does not name the file", r.state().LastError)
	}
	n := ws.Count()
	waitFor(t, "lease.json restored and heartbeats going on", func() bool {
		got, err := d.ReadLease()
		return err == nil && ws.Count() > n && got.Ticket == want.Ticket && got.Epoch == want.Epoch && got.LeaseSecret == want.LeaseSecret
	})
	if r.exited() != "" {
		t.Fatalf("loop exited: %s", r.exited())
	}
	// A newer start-work wrote another lease: this loop leaves quietly.
	l, _ := d.ReadLease()
	l.Epoch++
	d.WriteLease(l)
	if exit := r.wait(); exit != heartbeat.ExitSuperseded {
		t.Fatalf("exit %q", exit)
	}
}

// A lease.json that stays unreadable (here a directory: it can be neither
// read nor replaced) does not end the lease in silence: the loop
// heartbeats the lease it knows, and when an operator releases it the
// agent is told on its next tool call.
func TestUnrestorableLeaseFileStillTellsTheAgent(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-cd", ws.Claim("T-cd", "A"), parent)
	r := startLoop(t, d, nil)
	waitFor(t, "a heartbeat", func() bool { return ws.Count() >= 1 })
	lease, err := d.ReadLease()
	if err != nil {
		t.Fatal(err)
	}
	p := d.File(gyrumdir.LeaseFile)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	n := ws.Count()
	waitFor(t, "heartbeats from memory", func() bool { return ws.Count() >= n+3 })
	if _, err := ws.Svc.Release(context.Background(), "T-cd", lease.Epoch, "operator"); err != nil {
		t.Fatal(err)
	}
	if exit := r.wait(); exit != heartbeat.ExitLeaseEnded {
		t.Fatalf("exit %q, want %q", exit, heartbeat.ExitLeaseEnded)
	}
	nt, err := d.ReadNotice()
	if err != nil || nt.How != gyrumdir.EndReleased || nt.Ticket != "T-cd" {
		t.Fatalf("notice %+v, %v: want the release told to the agent", nt, err)
	}
}

func TestRefusesSecondLoop(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-two", ws.Claim("T-two", "A"), parent)
	_, other := watched(t)
	d.WritePID(gyrumdir.LoopPIDFile, other) // a live loop of another process
	reg := gyrumdir.NewRegistry(t.TempDir())
	loop, err := heartbeat.New(heartbeat.Config{Dir: d, Registry: reg, Durations: scaled})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loop.Run(context.Background()); !errors.Is(err, heartbeat.ErrAlreadyRunning) {
		t.Fatalf("got %v, want ErrAlreadyRunning", err)
	}
	if id, _ := d.ReadPID(gyrumdir.LoopPIDFile); id != other {
		t.Fatal("the other loop's pid file was replaced")
	}
	if es, _, _ := reg.List(); len(es) != 0 {
		t.Fatalf("registered anyway: %v", es)
	}
	if ws.Count() != 0 {
		t.Fatal("POSTed anyway")
	}
}

func TestNewRefusesBadFiles(t *testing.T) {
	ws := newWarp(t)
	_, parent := watched(t)
	d := worktree(t, ws, "T-bad", 1, parent)
	os.WriteFile(d.File(gyrumdir.ParentPIDFile), []byte("garbage"), 0o600)
	if _, err := heartbeat.New(heartbeat.Config{Dir: d}); !errors.Is(err, gyrumdir.ErrCorrupt) {
		t.Fatalf("corrupt parent pid: got %v", err)
	}
	os.Remove(d.File(gyrumdir.ParentPIDFile))
	if _, err := heartbeat.New(heartbeat.Config{Dir: d}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing parent pid: got %v", err)
	}
	// A v1 loop does not watch a process.
	if _, err := heartbeat.New(heartbeat.Config{Dir: d, SchemaVersion: 1}); err != nil {
		t.Fatalf("v1 without parent pid: %v", err)
	}
	os.Remove(d.File(gyrumdir.LeaseFile))
	if _, err := heartbeat.New(heartbeat.Config{Dir: d, SchemaVersion: 1}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing lease: got %v", err)
	}
	if _, err := heartbeat.New(heartbeat.Config{Dir: d, SchemaVersion: 3}); err == nil {
		t.Fatal("schema 3 accepted")
	}
}

// An agent killed in the middle of a tool call leaves its in-flight marker
// behind. The exit report must not credit that marker as a call running
// now: the server's last_activity_at stays where the last regular
// heartbeat put it, so the lease lapses one window after the death at most.
func TestOrphanMidToolCallCreditsNoActivityAfterDeath(t *testing.T) {
	ws := newWarp(t)
	cmd, parent := watched(t)
	d := worktree(t, ws, "T-midcall", ws.Claim("T-midcall", "A"), parent)
	started := time.Now()
	if err := d.StartInFlight("toolu_dies", "Bash", started); err != nil {
		t.Fatal(err)
	}
	r := prepareLoop(t, d, nil)
	var killedAt time.Time
	var mu sync.Mutex
	ws.SetBefore(func(n int, b client.HeartbeatRequest) {
		if n == 3 {
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			waitFor(t, "the agent to die", func() bool { return !parent.Alive() })
			mu.Lock()
			killedAt = time.Now()
			mu.Unlock()
		}
	})
	r.start()
	if exit := r.wait(); exit != heartbeat.ExitParentExited {
		t.Fatalf("exit %q, want parent-exited", exit)
	}
	bs := ws.Beats()
	last := bs[len(bs)-1]
	if last.Body.Exit != "parent-exited" {
		t.Fatalf("last POST %+v, want the exit report", last.Body)
	}
	mu.Lock()
	died := killedAt
	mu.Unlock()
	// The report's age reaches back to the call's start, not to "now".
	if age := *last.Body.ActivityAgeS; age < last.At.Sub(started).Seconds()-0.05 {
		t.Fatalf("exit report activity_age_s %.3f, want about %.3f (since the call started)", age, last.At.Sub(started).Seconds())
	}
	// The POST that was on the wire at the kill carried age 0 and lands
	// just after it; the exit report, a tick later, must add nothing.
	if l := ws.Lease("T-midcall"); l.LastActivityAt.After(died.Add(scaled.Interval / 4)) {
		t.Fatalf("server last_activity_at %v is %v after the agent died at %v", l.LastActivityAt, l.LastActivityAt.Sub(died), died)
	}
}

// WARP_TOKEN goes only to the warp WARP_URL names: a lease.json (which a
// repository can commit) naming another server gets the lease's secret
// alone, and a server that wants the token answers 401.
func TestTokenOnlyForItsServer(t *testing.T) {
	const tok = "agent-token-for-the-real-warp"
	ws := warptest.StartWithTokens(t, warp.DefaultPolicy(), []httpapi.Token{{Role: httpapi.RoleAgent, Secret: tok}})
	for _, c := range []struct {
		server string
		status int
	}{{ws.URL() + "/", 200}, {"http://127.0.0.1:1", 401}} {
		_, parent := watched(t)
		ticket := fmt.Sprintf("T-tok%d", c.status)
		ws.Create(ticket)
		tk, err := client.NewClient(ws.URL(), tok).Claim(context.Background(), ticket, client.ClaimRequest{Agent: "A", Host: "test-host"})
		if err != nil {
			t.Fatal(err)
		}
		d := worktree(t, ws, ticket, tk.Lease.Epoch, parent)
		l, _ := d.ReadLease()
		l.LeaseSecret = tk.LeaseSecret
		if err := d.WriteLease(l); err != nil {
			t.Fatal(err)
		}
		// This ticket's first heartbeat: the previous loop's last request,
		// cut off by its cancel, may be answered after this one starts.
		first := func() (warptest.Beat, bool) {
			for _, b := range ws.Beats() {
				if b.Body.Ticket == ticket {
					return b, true
				}
			}
			return warptest.Beat{}, false
		}
		r := startLoop(t, d, func(cfg *heartbeat.Config) { cfg.Token, cfg.Server = tok, c.server })
		// Answered, not just arrived: the status is recorded as the answer
		// leaves, and cancelling the loop earlier could cut it off.
		waitFor(t, "an answered heartbeat", func() bool { b, ok := first(); return ok && b.Status != 0 })
		r.cancel()
		r.wait()
		if b, _ := first(); b.Status != c.status {
			t.Errorf("WARP_URL %s, lease on %s: heartbeat answered %d, want %d", c.server, ws.URL(), b.Status, c.status)
		}
	}
}

// $GYRUM_HOME deleted under a live loop (rm -rf ~/.gyrum): the loop
// restores its registry entry, the prepared worktree and its agent's index
// entry at its next tick, so the hook keeps crediting the worktree and can
// tell the agent when the lease ends, and gyrum status lists the loop.
func TestHomeLostUnderTheLoopIsRestored(t *testing.T) {
	ws := newWarp(t)
	ws.Create("T-home")
	_, parent := watched(t)
	d := worktree(t, ws, "T-home", ws.Claim("T-home", "A"), parent)
	home := filepath.Join(t.TempDir(), "gyrum-home")
	reg, agents, prepared := gyrumdir.NewRegistry(home), gyrumdir.NewAgentIndex(home), gyrumdir.NewPrepared(home)
	// What start-work records before it spawns the loop.
	if err := prepared.Add(d.Worktree); err != nil {
		t.Fatal(err)
	}
	if err := agents.Add(parent, d.Worktree); err != nil {
		t.Fatal(err)
	}
	r := startLoop(t, d, func(cfg *heartbeat.Config) {
		cfg.Registry, cfg.Agents, cfg.Prepared = reg, agents, prepared
	})
	defer func() { r.cancel(); r.wait() }()
	waitFor(t, "the loop's first heartbeat", func() bool { return len(ws.Beats()) > 0 })
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	restored := func() bool {
		entries, _, _ := reg.List()
		wts, _ := agents.Worktrees(parent)
		return len(entries) == 1 && entries[0].Dir == d.Worktree && prepared.Has(d.Worktree) &&
			len(wts) == 1 && wts[0] == d.Worktree
	}
	waitFor(t, "the registry entry, the prepared worktree and the agent index entry to come back", restored)
}

// A tool call that an app server runs for the agent (Codex's app-server
// daemon, named by heartbeat.server.pid) is backed by the server's child
// as it would be by the agent's own: a quiet call keeps the lease fresh
// past the staleness limit. A heartbeat.server.pid that cannot be read
// costs that backing only: the loop still runs, and the same call goes
// stale one staleness limit after it started.
func TestCallOnTheAppServerIsBacked(t *testing.T) {
	for _, corrupt := range []bool{false, true} {
		t.Run(map[bool]string{false: "server named", true: "server pid file corrupt"}[corrupt], func(t *testing.T) {
			ws := newWarp(t)
			ag := startAgent(t)  // the TUI: watched, runs nothing itself
			srv := startAgent(t) // the daemon: runs the call
			d := worktree(t, ws, "T-srv", ws.Claim("T-srv", "A"), ag.id)
			if corrupt {
				os.WriteFile(d.File(gyrumdir.ServerPIDFile), []byte("garbage"), 0o600)
			} else if err := d.WritePID(gyrumdir.ServerPIDFile, srv.id); err != nil {
				t.Fatal(err)
			}
			d.TouchActivity(time.Now().Add(-time.Hour)) // already stale
			start := time.Now()
			if err := d.StartInFlight("call_srv", "Bash", start); err != nil {
				t.Fatal(err)
			}
			srv.run("sleep 100")
			// No in-flight cap within the test: every fresh heartbeat is the call's.
			startLoop(t, d, func(c *heartbeat.Config) { c.Durations.InFlightMax = time.Hour })
			past := start.Add(scaled.Staleness + scaled.Interval)
			waitFor(t, "heartbeats past the staleness limit", func() bool {
				n := 0
				for _, b := range ws.Answered() {
					if b.At.After(past) {
						n++
					}
				}
				return n >= 3
			})
			for _, b := range ws.Answered() {
				if !b.At.After(past) {
					continue
				}
				if corrupt && !b.Body.Stale {
					t.Errorf("heartbeat %v after the call began: fresh (%q in flight), want stale: nothing names the server", b.At.Sub(start), b.Body.InFlight)
				}
				if !corrupt && (b.Body.Stale || b.Body.InFlight != "Bash") {
					t.Errorf("heartbeat %v after the call began: stale %v in_flight %q, want fresh, Bash", b.At.Sub(start), b.Body.Stale, b.Body.InFlight)
				}
			}
		})
	}
}

// The agent's exit cuts the loop's wait short: with an hour between ticks,
// the exit report still arrives as soon as the agent dies (proc.Watch's
// Exited), not at the next tick. On a platform without exit notification
// the loop would wait out the hour, and this test fails at wait's bound.
func TestExitReportDoesNotWaitForTheTick(t *testing.T) {
	ws := newWarp(t)
	cmd, parent := watched(t)
	d := worktree(t, ws, "T-wake", ws.Claim("T-wake", "A"), parent)
	r := startLoop(t, d, func(c *heartbeat.Config) {
		c.Durations = heartbeat.Durations{Interval: time.Hour, Staleness: 2 * time.Hour, InFlightMax: 3 * time.Hour}
	})
	waitFor(t, "the first heartbeat and the loop's sleep", func() bool { return ws.Count() >= 1 && r.sleepCount() >= 1 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if exit := r.wait(); exit != heartbeat.ExitParentExited {
		t.Fatalf("exit %q, want parent-exited", exit)
	}
	if l := ws.Lease("T-wake"); l.Exit != "parent-exited" {
		t.Fatalf("server lease exit %q, want parent-exited", l.Exit)
	}
	if n := r.sleepCount(); n != 1 {
		t.Errorf("the loop slept %d times, want 1 (cut short by the exit)", n)
	}
}
