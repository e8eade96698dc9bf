package doctor_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/doctor"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/setup"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// fakeLoopEnv makes the test binary act as a heartbeat loop, started as
// <dir>/gyrum heartbeat run --dir D (a symlink to the test binary).
const fakeLoopEnv = "GYRUM_DOCTOR_FAKE_LOOP"

func TestMain(m *testing.M) {
	// Run as <dir>/gyrum touch-activity (the symlink the hook names), the
	// test binary is the real hook: internal/hook, as cmd/gyrum runs it.
	if filepath.Base(os.Args[0]) == "gyrum" && len(os.Args) >= 2 && os.Args[1] == "touch-activity" {
		wd, _ := os.Getwd()
		_, _ = hook.Run(os.Stdin, hook.Options{Cwd: wd, Now: time.Now()})
		os.Exit(0)
	}
	if os.Getenv(fakeLoopEnv) != "" {
		fmt.Println("ready")
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

// warpServer is a real warp API on 127.0.0.1:0 over a real SQLite file.
func warpServer(t *testing.T, tokens []httpapi.Token) string {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "warp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.NewServer(svc, httpapi.ServerConfig{Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPort returns a URL on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// scratchUser creates a throwaway user whose crontab the tests own.
func scratchUser(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for useradd and crontab -u")
	}
	for _, p := range []string{"crontab", "useradd"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (Debian package cron; .ci/run installs it)", p)
		}
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "gyrumd" + hex.EncodeToString(b)
	// useradd fails while another process holds the lock of /etc/passwd
	// (tests of other packages create users too): retry a little.
	var out []byte
	var err error
	for i := 0; i < 50; i++ {
		if out, err = exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err == nil || !strings.Contains(string(out), "lock") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Skipf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("crontab", "-u", name, "-r").Run()
		for i := 0; i < 50; i++ {
			out, err := exec.Command("userdel", name).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "lock") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return name
}

// host is a throwaway developer host: home, project, registry, a gyrum
// binary (the test binary behind a symlink named gyrum).
type host struct {
	t        *testing.T
	home     string
	project  string
	bin      string
	registry gyrumdir.Registry
	opts     doctor.Options
}

func newHost(t *testing.T, warpURL string) *host {
	t.Helper()
	root := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "gyrum")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, home: filepath.Join(root, "home"), project: filepath.Join(root, "project"), bin: bin}
	os.MkdirAll(h.home, 0o755)
	os.MkdirAll(h.project, 0o755)
	h.registry = gyrumdir.NewRegistry(filepath.Join(root, "gyrum-home"))
	h.opts = doctor.Options{
		Home:     h.home,
		Cwd:      h.project,
		WarpURL:  warpURL,
		Registry: h.registry,
		// A systemctl that does not exist: doctor must not look at the
		// real user manager of whoever runs the tests.
		Systemd: setup.Systemd{Systemctl: filepath.Join(root, "no-systemctl")},
		Cron:    setup.Cron{Crontab: filepath.Join(root, "no-crontab")},
		Timeout: 5 * time.Second,
		// Nor at the administrator's settings of the machine.
		ManagedSettings: []string{filepath.Join(root, "managed-settings.json")},
	}
	return h
}

// wire runs the real setup for the user settings, and the crontab of user
// when it is not "".
func (h *host) wire(user string) {
	h.t.Helper()
	o := setup.Options{Binary: h.bin, Home: h.home, Watchdog: setup.WatchdogNone, Systemd: h.opts.Systemd}
	if user != "" {
		o.Watchdog = setup.WatchdogCron
		o.Cron = setup.Cron{User: user}
		h.opts.Cron = o.Cron
	}
	if _, err := setup.Run(context.Background(), o); err != nil {
		h.t.Fatal(err)
	}
}

// lease makes a worktree with a lease; with loop set it starts a loop for
// it, registers it and writes its heartbeat.pid.
func (h *host) lease(name, ticket string, loop bool) (string, proc.Identity) {
	h.t.Helper()
	return h.leaseAt(filepath.Join(filepath.Dir(h.project), name), ticket, loop)
}

// leaseAt is lease in the worktree wt.
func (h *host) leaseAt(wt, ticket string, loop bool) (string, proc.Identity) {
	h.t.Helper()
	os.MkdirAll(wt, 0o755)
	d, err := gyrumdir.Create(wt)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := d.WriteLease(gyrumdir.Lease{Ticket: ticket, Epoch: 1, WarpURL: "http://127.0.0.1:7077", Agent: "O", Host: "h", ClaimedAt: time.Now()}); err != nil {
		h.t.Fatal(err)
	}
	if !loop {
		return wt, proc.Identity{}
	}
	id := h.start([]string{fakeLoopEnv + "=1"}, true, h.bin, "heartbeat", "run", "--dir", wt)
	if err := h.registry.Add(gyrumdir.Entry{PID: id.PID, StartTime: id.StartTime, Dir: wt, Ticket: ticket}); err != nil {
		h.t.Fatal(err)
	}
	if err := d.WritePID(gyrumdir.LoopPIDFile, id); err != nil {
		h.t.Fatal(err)
	}
	return wt, id
}

// start runs a real process, killed and reaped at cleanup.
func (h *host) start(env []string, ready bool, argv ...string) proc.Identity {
	h.t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out *bufio.Reader
	if ready {
		pipe, _ := cmd.StdoutPipe()
		out = bufio.NewReader(pipe)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	h.t.Cleanup(func() { cmd.Process.Kill(); <-done })
	if ready {
		if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
			h.t.Fatalf("%v not ready: %q %v", argv, line, err)
		}
	}
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

func (h *host) run() doctor.Report {
	h.t.Helper()
	return doctor.Run(context.Background(), h.opts)
}

func check(t *testing.T, rep doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, rep.Checks)
	return doctor.Check{}
}

func wantStatus(t *testing.T, rep doctor.Report, name, status, detail string) doctor.Check {
	t.Helper()
	c := check(t, rep, name)
	if c.Status != status || !strings.Contains(c.Detail, detail) {
		t.Errorf("check %s = %s %q, want %s containing %q", name, c.Status, c.Detail, status, detail)
	}
	if status == doctor.StatusFail && c.Fix == "" {
		t.Errorf("check %s fails without a fix", name)
	}
	return c
}

func text(rep doctor.Report) string {
	var b bytes.Buffer
	doctor.WriteText(&b, rep)
	return b.String()
}

func TestHealthyHost(t *testing.T) {
	user := scratchUser(t)
	h := newHost(t, warpServer(t, nil))
	h.wire(user)
	wt, id := h.lease("wt-1", "T-1", true)
	rep := h.run()
	if !rep.OK {
		t.Fatalf("healthy host reported problems:\n%s", text(rep))
	}
	wantStatus(t, rep, "hook", doctor.StatusOK, "PreToolUse, PostToolUse, PostToolUseFailure")
	wantStatus(t, rep, "hook-binary", doctor.StatusOK, h.bin)
	wantStatus(t, rep, "watchdog", doctor.StatusOK, "# gyrum-watchdog")
	wantStatus(t, rep, "warp", doctor.StatusOK, "accepts schema_version 2")
	wantStatus(t, rep, "loop T-1", doctor.StatusOK, fmt.Sprintf("in %s (pid %d) is alive", wt, id.PID))
	if out := text(rep); !strings.HasSuffix(out, "doctor: everything is in order\n") {
		t.Errorf("text:\n%s", out)
	}
	var js bytes.Buffer
	doctor.WriteJSON(&js, rep)
	var back doctor.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !back.OK || len(back.Checks) != len(rep.Checks) {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

func TestHookMissing(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	rep := h.run()
	if rep.OK {
		t.Fatalf("no hook, but OK:\n%s", text(rep))
	}
	c := wantStatus(t, rep, "hook", doctor.StatusFail, "not wired for PreToolUse, PostToolUse, PostToolUseFailure")
	if !strings.Contains(c.Fix, "gyrum setup") {
		t.Errorf("fix = %q", c.Fix)
	}
	wantStatus(t, rep, "hook-binary", doctor.StatusSkip, "no hook command")
	if out := text(rep); !strings.Contains(out, "fix: run gyrum setup") || !strings.Contains(out, "problem(s) found") {
		t.Errorf("text:\n%s", out)
	}

	// Only one event wired, by hand: the others are named.
	os.MkdirAll(filepath.Join(h.home, ".claude"), 0o755)
	os.WriteFile(filepath.Join(h.home, ".claude", "settings.json"), []byte(`{"hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"`+h.bin+` touch-activity"}]}]}}`), 0o644)
	rep = h.run()
	wantStatus(t, rep, "hook", doctor.StatusFail, "not wired for PreToolUse, PostToolUseFailure")
}

// The effective settings merge user, project and project-local files.
func TestHookInProjectLocalSettingsCounts(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	if _, err := setup.Run(context.Background(), setup.Options{Binary: h.bin, Home: h.home, Project: h.project, Watchdog: setup.WatchdogNone}); err != nil {
		t.Fatal(err)
	}
	// Move the project settings to settings.local.json.
	p := filepath.Join(h.project, ".claude")
	if err := os.Rename(filepath.Join(p, "settings.json"), filepath.Join(p, "settings.local.json")); err != nil {
		t.Fatal(err)
	}
	rep := h.run()
	wantStatus(t, rep, "hook", doctor.StatusOK, filepath.Join(p, "settings.local.json"))
	wantStatus(t, rep, "hook-binary", doctor.StatusOK, h.bin)
}

func TestHookBinaryMissing(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	gone := filepath.Join(t.TempDir(), "old", "gyrum")
	if _, err := setup.Run(context.Background(), setup.Options{Binary: gone, Home: h.home, Watchdog: setup.WatchdogNone}); err != nil {
		t.Fatal(err)
	}
	rep := h.run()
	wantStatus(t, rep, "hook", doctor.StatusOK, "wired")
	wantStatus(t, rep, "hook-binary", doctor.StatusFail, gone+" does not exist")
	if rep.OK {
		t.Errorf("missing binary, but OK")
	}

	// A file that is not executable fails too.
	os.MkdirAll(filepath.Dir(gone), 0o755)
	os.WriteFile(gone, []byte("#!/bin/sh\n"), 0o644)
	rep = h.run()
	wantStatus(t, rep, "hook-binary", doctor.StatusFail, "is not executable")
}

func TestMalformedSettings(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	p := filepath.Join(h.project, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("{\n  \"model\": \"opus\",\n}\n"), 0o644)
	rep := h.run()
	wantStatus(t, rep, "hook", doctor.StatusFail, p+":3:1")
}

func TestServerDown(t *testing.T) {
	url := closedPort(t)
	h := newHost(t, url)
	h.wire("")
	rep := h.run()
	c := wantStatus(t, rep, "warp", doctor.StatusFail, "cannot reach warp at "+url)
	if !strings.Contains(c.Fix, "warp serve") {
		t.Errorf("fix = %q", c.Fix)
	}
	if rep.OK {
		t.Errorf("server down, but OK")
	}
}

func TestServerRefusesToken(t *testing.T) {
	h := newHost(t, warpServer(t, []httpapi.Token{{Role: httpapi.RoleAgent, Secret: "s3cret"}}))
	h.opts.WarpToken = "wrong"
	rep := h.run()
	c := wantStatus(t, rep, "warp", doctor.StatusFail, "refused the token")
	if !strings.Contains(c.Fix, "WARP_TOKEN") {
		t.Errorf("fix = %q", c.Fix)
	}
	h.opts.WarpToken = "s3cret"
	wantStatus(t, h.run(), "warp", doctor.StatusOK, "accepts schema_version 2")
}

// A warp from before ADR-138 answers v2 with unsupported_schema_version.
// No such server exists in this repository, so a real HTTP server on
// 127.0.0.1:0 answers the way that one does.
func TestServerWithoutV2(t *testing.T) {
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if r.URL.Path != "/v1/heartbeat" || body["schema_version"] == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(client.ErrorBody{Error: client.ErrorDetail{Code: client.CodeUnsupportedSchema, Message: "schema_version 2 is not supported"}})
	}))
	t.Cleanup(old.Close)
	h := newHost(t, old.URL)
	rep := h.run()
	wantStatus(t, rep, "warp", doctor.StatusFail, "does not speak heartbeat v2")
}

func TestLoopDead(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wire("")
	wt, _ := h.lease("wt-dead", "T-dead", false)
	// A real process that ran and died: its identity is in the registry
	// and the pid file.
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	h.registry.Add(gyrumdir.Entry{PID: id.PID, StartTime: id.StartTime, Dir: wt, Ticket: "T-dead"})
	d, _ := gyrumdir.Open(wt)
	d.WritePID(gyrumdir.LoopPIDFile, id)

	rep := h.run()
	c := wantStatus(t, rep, "loop T-dead", doctor.StatusFail, "is not running")
	if !strings.Contains(c.Fix, "gyrum watchdog sweep") {
		t.Errorf("fix = %q", c.Fix)
	}
	if rep.OK {
		t.Errorf("dead loop, but OK")
	}
}

func TestLoopNotMatchingPidFile(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	wt, id := h.lease("wt-x", "T-x", true)
	d, _ := gyrumdir.Open(wt)
	d.WritePID(gyrumdir.LoopPIDFile, proc.Identity{PID: id.PID, StartTime: id.StartTime + 7})
	rep := h.run()
	wantStatus(t, rep, "loop T-x", doctor.StatusFail, "heartbeat.pid names")

	os.Remove(d.File(gyrumdir.LoopPIDFile))
	wantStatus(t, h.run(), "loop T-x", doctor.StatusFail, "is missing")

	// Its lease gone: an orphan.
	os.Remove(d.File(gyrumdir.LeaseFile))
	wantStatus(t, h.run(), "loop T-x", doctor.StatusFail, "orphan")
}

// A live loop that warp refuses (a revoked token) is not healthy: doctor
// reads what its last tick got. A transient failure is only mentioned.
func TestLoopWhoseHeartbeatsAreRefused(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	wt, id := h.lease("wt-r", "T-r", true)
	d, _ := gyrumdir.Open(wt)
	st := gyrumdir.LoopState{PID: id.PID, StartTime: id.StartTime, LastOutcome: "error", LastStatus: 401,
		LastError: "warp: unknown token (401 unauthorized)", Failures: 12}
	if err := d.WriteState(st); err != nil {
		t.Fatal(err)
	}
	c := wantStatus(t, h.run(), "loop T-r", doctor.StatusFail, "warp refuses its heartbeats (HTTP 401")
	if !strings.Contains(c.Fix, "WARP_TOKEN") {
		t.Errorf("fix %q does not name the token", c.Fix)
	}
	st.LastStatus, st.LastError = 503, "warp: the database is unavailable (503 unavailable)"
	d.WriteState(st)
	wantStatus(t, h.run(), "loop T-r", doctor.StatusOK, "its last heartbeat failed")
	st.LastOutcome = "corrupt-lease"
	d.WriteState(st)
	wantStatus(t, h.run(), "loop T-r", doctor.StatusWarn, "writes it back from memory")
}

// A loop on a full disk cannot write its state or a lease-ended notice:
// doctor says "disk full" (before, it said every loop was fine while the
// state it read was minutes old). A loop whose state stopped moving for
// another reason is named too.
func TestLoopOnAFullDisk(t *testing.T) {
	fs := warptest.SmallFS(t, "4m")
	h := newHost(t, warpServer(t, nil))
	wt, id := h.leaseAt(filepath.Join(fs, "wt-f"), "T-f", true)
	d, _ := gyrumdir.Open(wt)
	now := time.Now()
	if err := d.WriteState(gyrumdir.LoopState{PID: id.PID, StartTime: id.StartTime, LastOutcome: "ok", UpdatedAt: now, NextTickAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, h.run(), "loop T-f", doctor.StatusOK, "alive")
	free := warptest.FillDisk(t, fs)
	c := wantStatus(t, h.run(), "loop T-f", doctor.StatusFail, "disk full")
	if !strings.Contains(c.Fix, "df -h") {
		t.Errorf("fix %q does not say how to see the space", c.Fix)
	}
	free()
	wantStatus(t, h.run(), "loop T-f", doctor.StatusOK, "alive")
	old := now.Add(-10 * time.Minute)
	if err := d.WriteState(gyrumdir.LoopState{PID: id.PID, StartTime: id.StartTime, LastOutcome: "ok", UpdatedAt: old, NextTickAt: old.Add(4 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, h.run(), "loop T-f", doctor.StatusFail, "state has not moved")
}

// A registry entry whose pid now runs something else.
func TestLoopEntryPointsElsewhere(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	wt, _ := h.lease("wt-s", "T-s", false)
	id := h.start(nil, false, "sleep", "1000")
	h.registry.Add(gyrumdir.Entry{PID: id.PID, StartTime: id.StartTime, Dir: wt, Ticket: "T-s"})
	wantStatus(t, h.run(), "loop T-s", doctor.StatusFail, "not the loop")
}

// The lease of the current worktree counts even when no loop registered.
func TestLeaseOfCwdWithoutLoop(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	wt, _ := h.lease("wt-here", "T-here", false)
	h.opts.Cwd = filepath.Join(wt)
	wantStatus(t, h.run(), "loop (this worktree)", doctor.StatusFail, "no heartbeat loop runs for it")
}

// A fix names the worktree as one shell word, so it runs as printed.
func TestFixQuotesTheWorktree(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	wt, _ := h.lease("wt of jane's", "T-here", false)
	h.opts.Cwd = wt
	c := wantStatus(t, h.run(), "loop (this worktree)", doctor.StatusFail, "no heartbeat loop runs for it")
	// Detached, so that pasted into a terminal it neither blocks it nor
	// ends with it.
	if want := "nohup gyrum heartbeat run --dir " + shellquote.Quote(wt) + " >/dev/null 2>&1 &"; !strings.Contains(c.Fix, want) || !strings.Contains(wt, " ") {
		t.Errorf("fix %q lacks %q", c.Fix, want)
	}
}

func TestWatchdogNotScheduled(t *testing.T) {
	user := scratchUser(t)
	h := newHost(t, warpServer(t, nil))
	h.opts.Cron = setup.Cron{User: user}
	exec.Command("crontab", "-u", user, "-r").Run()
	c := wantStatus(t, h.run(), "watchdog", doctor.StatusWarn, "no # gyrum-watchdog line")
	if !strings.Contains(c.Fix, "gyrum setup") || !strings.Contains(c.Fix, "gyrum watchdog sweep") {
		t.Errorf("fix = %q", c.Fix)
	}
	h.wire(user) // what "gyrum setup" does here: the fix line works
	wantStatus(t, h.run(), "watchdog", doctor.StatusOK, "crontab line")
}

// A host with no scheduler at all (a container, CI): a warning that says
// what the watchdog adds and how to run the sweep by hand, never a failure
// that "gyrum setup" cannot fix.
func TestWatchdogWithoutScheduler(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	missing := filepath.Join(t.TempDir(), "none")
	h.opts.Cron = setup.Cron{Crontab: missing}
	h.opts.Systemd = setup.Systemd{Systemctl: missing}
	c := wantStatus(t, h.run(), "watchdog", doctor.StatusWarn, "not scheduled")
	if !strings.Contains(c.Fix, "no scheduler") || !strings.Contains(c.Fix, "gyrum watchdog sweep") {
		t.Errorf("fix %q", c.Fix)
	}
	var b strings.Builder
	if err := doctor.WriteText(&b, doctor.Report{OK: true, Checks: []doctor.Check{c}}); err != nil {
		t.Fatal(err)
	}
	if want := "warn  watchdog"; !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "fix: this host has no scheduler") ||
		!strings.Contains(b.String(), "doctor: no problem, 1 warning(s)") {
		t.Errorf("text:\n%s", b.String())
	}
}

func TestNoLoopsIsFine(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	wantStatus(t, h.run(), "loops", doctor.StatusOK, "no heartbeat loop registered")
}

// script writes an executable sh script named gyrum in a directory of its
// own, so the hook command "<path> touch-activity" is recognised as ours.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gyrum")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// wireHook writes user settings with the hook command of bin for every
// event, with timeout secs (0: none).
func (h *host) wireHook(bin string, secs int) {
	h.t.Helper()
	h.wireHookIn(filepath.Join(h.home, ".claude"), bin, secs)
}

// wireHookIn is wireHook into the settings.json of dir.
func (h *host) wireHookIn(dir, bin string, secs int) {
	h.t.Helper()
	entry := `{"type":"command","command":"` + setup.HookCommand(bin) + `"`
	if secs > 0 {
		entry += fmt.Sprintf(`,"timeout":%d`, secs)
	}
	entry += `}`
	var evs []string
	for _, ev := range setup.HookEvents() {
		evs = append(evs, `"`+ev+`":[{"matcher":"*","hooks":[`+entry+`]}]`)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"hooks":{`+strings.Join(evs, ",")+`}}`), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// A repository can commit .claude/settings.json naming a program of its
// own called gyrum-hook: doctor reports it without running it. The same
// entry in the user's settings is the user's, and runs.
func TestHookRunSkipsTheProjectsOwnProgram(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	ran := filepath.Join(t.TempDir(), "ran")
	prog := filepath.Join(h.project, "tools", "gyrum-hook")
	os.MkdirAll(filepath.Dir(prog), 0o755)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.wireHookIn(filepath.Join(h.project, ".claude"), prog, 5)
	wantStatus(t, h.run(), "hook-run", doctor.StatusSkip, "not run: only the project's settings")
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("doctor ran the repository's program")
	}
	// This gyrum, named by the project's settings, is run.
	h.wireHookIn(filepath.Join(h.project, ".claude"), h.bin, 5)
	wantStatus(t, h.run(), "hook-run", doctor.StatusOK, "last-activity moved")
	// The user's own settings are the user's choice.
	os.Remove(filepath.Join(h.project, ".claude", "settings.json"))
	h.wireHook(prog, 5)
	h.run()
	if _, err := os.Stat(ran); err != nil {
		t.Error("the user's own hook command was not run")
	}
}

func TestHookRunHealthy(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wire("")
	rep := h.run()
	c := wantStatus(t, rep, "hook-run", doctor.StatusOK, "last-activity moved")
	if !strings.Contains(c.Detail, h.bin+" touch-activity") || !strings.Contains(c.Detail, "timeout 5s") {
		t.Errorf("detail %q: want the command line and the timeout of the settings", c.Detail)
	}
	if strings.Contains(c.Detail, "no hook record") {
		t.Errorf("the current hook wrote no record: %q", c.Detail)
	}
}

func TestHookRunLeavesNoScratchDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := newHost(t, warpServer(t, nil))
	h.wire("")
	wantStatus(t, h.run(), "hook-run", doctor.StatusOK, "moved")
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

func TestHookRunAbsent(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	rep := h.run()
	wantStatus(t, rep, "hook", doctor.StatusFail, "not wired")
	wantStatus(t, rep, "hook-run", doctor.StatusSkip, "no hook command to run")
	if rep.OK {
		t.Error("no hook, but OK")
	}
}

func TestHookRunDeletedBinary(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	bin := script(t, "exit 0\n")
	h.wireHook(bin, 5)
	os.Remove(bin)
	rep := h.run()
	c := wantStatus(t, rep, "hook-run", doctor.StatusFail, "cannot start its program (exit 127")
	if !strings.Contains(c.Fix, "gyrum setup") {
		t.Errorf("fix %q: want gyrum setup", c.Fix)
	}
	wantStatus(t, rep, "hook-binary", doctor.StatusFail, bin+" does not exist")
	if rep.OK {
		t.Error("deleted binary, but OK")
	}
}

func TestHookRunExitsNonZero(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wireHook(script(t, "cat >/dev/null\necho 'gyrum: broken install' >&2\nexit 1\n"), 5)
	rep := h.run()
	c := wantStatus(t, rep, "hook-run", doctor.StatusFail, "exited 1: gyrum: broken install")
	if !strings.Contains(c.Fix, "echo '{}' |") {
		t.Errorf("fix %q: want how to run it by hand", c.Fix)
	}
	wantStatus(t, rep, "hook-binary", doctor.StatusOK, "the hook runs")
	if rep.OK {
		t.Error("failing hook, but OK")
	}
}

func TestHookRunHangsPastItsTimeout(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	pidFile := filepath.Join(t.TempDir(), "sleep.pid")
	// The hook starts a child and waits for it: killing sh alone would
	// leave the sleep behind.
	h.wireHook(script(t, "sleep 30 &\necho $! > "+pidFile+"\nwait\n"), 1)
	rep := h.run()
	c := wantStatus(t, rep, "hook-run", doctor.StatusFail, "did not finish within its timeout of 1s and was killed")
	if !strings.Contains(c.Fix, "milliseconds") {
		t.Errorf("fix %q", c.Fix)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hook never ran: %v", err)
	}
	var pid int
	fmt.Sscan(string(data), &pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := proc.Lookup(pid); err != nil {
			break // gone (or a zombie waiting for its reaper)
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the hook's child %d outlived the kill of its process group", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHookRunDoesNotTouch(t *testing.T) {
	h := newHost(t, warpServer(t, nil))
	h.wireHook(script(t, "cat >/dev/null\nexit 0\n"), 5)
	rep := h.run()
	wantStatus(t, rep, "hook-run", doctor.StatusFail, "exited 0")
	c := check(t, rep, "hook-run")
	if !strings.Contains(c.Detail, "did not move last-activity") {
		t.Errorf("detail %q", c.Detail)
	}
}

func TestHookRunOlderGyrum(t *testing.T) {
	// An older gyrum's hook only touches the file: it works, and doctor
	// says it cannot report hook_seen.
	h := newHost(t, warpServer(t, nil))
	h.wireHook(script(t, "cat >/dev/null\ntouch \"$CLAUDE_PROJECT_DIR/.gyrum/last-activity\"\n"), 5)
	rep := h.run()
	wantStatus(t, rep, "hook-run", doctor.StatusOK, "no hook record")
}

// Hooks switched off in the settings fail the hook check even though the
// hook is wired: Claude Code would run none of them.
func TestHooksDisabled(t *testing.T) {
	user := scratchUser(t)
	h := newHost(t, warpServer(t, nil))
	h.wire(user)
	userSettings := filepath.Join(h.home, ".claude", "settings.json")
	data, err := os.ReadFile(userSettings)
	if err != nil {
		t.Fatal(err)
	}
	wired := string(data)
	disabled := strings.Replace(wired, "{", `{"disableAllHooks": true,`, 1)
	if err := os.WriteFile(userSettings, []byte(disabled), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := h.run()
	c := wantStatus(t, rep, "hook", doctor.StatusFail, `sets "disableAllHooks": true`)
	if !strings.Contains(c.Fix, "remove \"disableAllHooks\" from "+userSettings) {
		t.Errorf("fix = %q", c.Fix)
	}

	// A project-local file of higher precedence that sets it to false wins.
	local := filepath.Join(h.project, ".claude", "settings.local.json")
	os.MkdirAll(filepath.Dir(local), 0o755)
	if err := os.WriteFile(local, []byte(`{"disableAllHooks": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, h.run(), "hook", doctor.StatusOK, "wired for")

	// Managed settings win over every file, and only the administrator can
	// change them; unreadable ones may hide either switch.
	managed := h.opts.ManagedSettings[0]
	for _, c := range []struct{ content, detail, fix string }{
		{`{"disableAllHooks": true}`, "managed settings " + managed + ` set "disableAllHooks": true`, "administrator"},
		{`{"allowManagedHooksOnly": true}`, "runs only managed hooks", "allowManagedHooksOnly"},
		{`{"disableAllHooks":`, "hooks may be disabled by your administrator", "ask the administrator"},
	} {
		if err := os.WriteFile(managed, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got := wantStatus(t, h.run(), "hook", doctor.StatusFail, c.detail)
		if !strings.Contains(got.Fix, c.fix) {
			t.Errorf("managed %s: fix = %q, want it to mention %q", c.content, got.Fix, c.fix)
		}
	}
	if err := os.WriteFile(managed, []byte(`{"disableAllHooks": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, h.run(), "hook", doctor.StatusOK, "wired for")
}

// A project's .claude/settings.json is the repository's: one that is a
// FIFO or links to /dev/zero fails the hook check at once, without
// hanging doctor or filling its memory.
func TestProjectSettingsThatAreNotFiles(t *testing.T) {
	for _, kind := range []string{"fifo", "zero"} {
		t.Run(kind, func(t *testing.T) {
			h := newHost(t, warpServer(t, nil))
			h.wire("")
			dir := filepath.Join(h.project, ".claude")
			os.MkdirAll(dir, 0o755)
			p := filepath.Join(dir, "settings.json")
			if kind == "fifo" {
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			done := make(chan doctor.Report, 1)
			go func() { done <- h.run() }()
			select {
			case rep := <-done:
				wantStatus(t, rep, "hook", doctor.StatusFail, "not a regular file")
			case <-time.After(20 * time.Second):
				t.Fatal("doctor hangs on the project's settings")
			}
		})
	}
}
