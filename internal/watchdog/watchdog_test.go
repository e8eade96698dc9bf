package watchdog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/watchdog"
)

// fakeLoopEnv makes the test binary act as a heartbeat loop: started as
// <dir>/gyrum heartbeat run --dir D (a symlink to the test binary), its
// command line is exactly a loop's. "plain" exits on SIGTERM, "stubborn"
// ignores it.
const fakeLoopEnv = "GYRUM_WATCHDOG_FAKE_LOOP"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeLoopEnv); mode != "" {
		if mode == "stubborn" {
			signal.Ignore(syscall.SIGTERM)
		}
		fmt.Println("ready")
		for { // a bare select{} would be a deadlock the runtime kills
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

// gyrumBin returns a path named gyrum that runs the test binary.
func gyrumBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "gyrum")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// worktree makes a worktree with .gyrum/lease.json.
func worktree(t *testing.T, root, name, ticket string) string {
	t.Helper()
	wt := filepath.Join(root, name)
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := gyrumdir.Create(wt)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteLease(gyrumdir.Lease{Ticket: ticket, Epoch: 1, WarpURL: "http://127.0.0.1:7077", Agent: "O", Host: "h", ClaimedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return wt
}

// started is a real child process and the channel closed when it exits.
type started struct {
	id   proc.Identity
	done chan struct{}
}

func (s started) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// startProcess starts argv (env added), waits for its "ready" line when
// ready is set, and kills it at cleanup.
func startProcess(t *testing.T, env []string, ready bool, argv ...string) started {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out *bufio.Reader
	if ready {
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		out = bufio.NewReader(pipe)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	if ready {
		line, err := out.ReadString('\n')
		if err != nil || line != "ready\n" {
			t.Fatalf("%v did not get ready: %q %v", argv, line, err)
		}
	}
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return started{id: id, done: done}
}

func startLoop(t *testing.T, bin, dir, mode string) started {
	t.Helper()
	return startProcess(t, []string{fakeLoopEnv + "=" + mode}, true, bin, "heartbeat", "run", "--dir", dir)
}

func register(t *testing.T, reg gyrumdir.Registry, id proc.Identity, dir, ticket string) {
	t.Helper()
	if err := reg.Add(gyrumdir.Entry{PID: id.PID, StartTime: id.StartTime, Dir: dir, Ticket: ticket}); err != nil {
		t.Fatal(err)
	}
}

// waitExit waits up to 10 s for a child to exit.
func waitExit(t *testing.T, s started, what string) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still running", what)
	}
}

func loopOf(t *testing.T, rep watchdog.Report, pid int) watchdog.Loop {
	t.Helper()
	var found []watchdog.Loop
	for _, l := range rep.Loops {
		if l.PID == pid {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("report has %d lines for pid %d, want 1: %+v", len(found), pid, rep.Loops)
	}
	return found[0]
}

func hasEntry(t *testing.T, reg gyrumdir.Registry, pid int) bool {
	t.Helper()
	_, err := reg.Read(pid)
	return err == nil
}

// scenario is the whole set of cases of the issue, built once and swept:
// a loop whose worktree was deleted, one whose lease.json was deleted, one
// that ignores SIGTERM, a healthy loop, an entry pointing at an unrelated
// live sleep, an entry with the start time of another process, an entry of
// a dead pid, an unregistered orphan loop, a corrupt entry.
type scenario struct {
	root, bin                 string
	reg                       gyrumdir.Registry
	gone, noLease, stubborn   started
	healthy, sleeper, unreg   started
	recycledLoop              started
	dead                      proc.Identity
	healthyDir, goneDir       string
	noLeaseDir                string
	corruptPath, strangerPath string
}

func newScenario(t *testing.T) *scenario {
	t.Helper()
	s := &scenario{root: t.TempDir(), bin: gyrumBin(t)}
	s.reg = gyrumdir.NewRegistry(filepath.Join(s.root, "gyrum-home"))

	s.goneDir = worktree(t, s.root, "wt-gone", "T-gone")
	s.gone = startLoop(t, s.bin, s.goneDir, "plain")
	register(t, s.reg, s.gone.id, s.goneDir, "T-gone")

	noLeaseDir := worktree(t, s.root, "wt-nolease", "T-nolease")
	s.noLease = startLoop(t, s.bin, noLeaseDir, "plain")
	register(t, s.reg, s.noLease.id, noLeaseDir, "T-nolease")

	nd, _ := gyrumdir.Open(noLeaseDir)
	nd.WritePID(gyrumdir.LoopPIDFile, s.noLease.id)
	s.noLeaseDir = noLeaseDir

	stubbornDir := worktree(t, s.root, "wt-stubborn", "T-stubborn")
	s.stubborn = startLoop(t, s.bin, stubbornDir, "stubborn")
	register(t, s.reg, s.stubborn.id, stubbornDir, "T-stubborn")

	s.healthyDir = worktree(t, s.root, "wt-healthy", "T-healthy")
	s.healthy = startLoop(t, s.bin, s.healthyDir, "plain")
	register(t, s.reg, s.healthy.id, s.healthyDir, "T-healthy")

	// An unrelated live process behind an entry whose worktree is gone:
	// the entry goes, the process stays.
	s.sleeper = startProcess(t, nil, false, "sleep", "1000")
	register(t, s.reg, s.sleeper.id, filepath.Join(s.root, "wt-never-existed"), "T-sleep")

	// A live loop (healthy worktree) behind an entry with another start
	// time: the entry goes, the loop is judged on its own and kept.
	recycledDir := worktree(t, s.root, "wt-recycled", "T-recycled")
	s.recycledLoop = startLoop(t, s.bin, recycledDir, "plain")
	register(t, s.reg, proc.Identity{PID: s.recycledLoop.id.PID, StartTime: s.recycledLoop.id.StartTime + 1}, filepath.Join(s.root, "wt-gone-too"), "T-old")

	// A dead pid.
	d := startProcess(t, nil, false, "sleep", "1000")
	syscall.Kill(d.id.PID, syscall.SIGKILL)
	waitExit(t, d, "killed sleep")
	s.dead = d.id
	register(t, s.reg, s.dead, filepath.Join(s.root, "wt-dead"), "T-dead")

	// A loop that never registered, whose worktree is gone.
	unregDir := worktree(t, s.root, "wt-unregistered", "T-unreg")
	s.unreg = startLoop(t, s.bin, unregDir, "plain")

	// A corrupt entry and a file that is no entry at all.
	s.corruptPath = filepath.Join(s.reg.Dir(), "4194999.json")
	os.WriteFile(s.corruptPath, []byte("{not json"), 0o600)
	s.strangerPath = filepath.Join(s.reg.Dir(), "README")
	os.WriteFile(s.strangerPath, []byte("hands off"), 0o600)

	// Now orphan them.
	if err := os.RemoveAll(s.goneDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(noLeaseDir, ".gyrum", "lease.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stubbornDir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(unregDir); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *scenario) options() watchdog.Options {
	return watchdog.Options{Registry: s.reg, Grace: 300 * time.Millisecond, Within: s.root, NoScan: runtime.GOOS != "linux"}
}

func TestSweep(t *testing.T) {
	s := newScenario(t)
	rep, err := watchdog.Sweep(context.Background(), s.options())
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		what   string
		p      started
		reason string
		result string
	}{
		{"loop of a deleted worktree", s.gone, "worktree is gone", "terminated"},
		{"loop of a deleted lease.json", s.noLease, "lease.json is gone", "terminated"},
		{"loop ignoring SIGTERM", s.stubborn, "worktree is gone", "killed"},
	} {
		waitExit(t, c.p, c.what)
		l := loopOf(t, rep, c.p.id.PID)
		if l.Action != watchdog.ActionStopped || l.Reason != c.reason || l.Result != c.result {
			t.Errorf("%s: %+v, want stopped / %s / %s", c.what, l, c.reason, c.result)
		}
		if hasEntry(t, s.reg, c.p.id.PID) {
			t.Errorf("%s: registry entry left behind", c.what)
		}
	}

	if _, err := os.Stat(filepath.Join(s.noLeaseDir, ".gyrum", "heartbeat.pid")); !os.IsNotExist(err) {
		t.Errorf("heartbeat.pid of the stopped loop left behind")
	}

	if s.healthy.exited() {
		t.Errorf("healthy loop was stopped")
	}
	if l := loopOf(t, rep, s.healthy.id.PID); l.Action != watchdog.ActionKept {
		t.Errorf("healthy loop: %+v, want kept", l)
	}
	if !hasEntry(t, s.reg, s.healthy.id.PID) {
		t.Errorf("healthy loop's entry removed")
	}

	if s.sleeper.exited() {
		t.Errorf("unrelated sleep 1000 was signalled")
	}
	if l := loopOf(t, rep, s.sleeper.id.PID); l.Action != watchdog.ActionRemoved || !strings.Contains(l.Reason, "not a gyrum heartbeat run") {
		t.Errorf("sleep entry: %+v, want removed as something else", l)
	}
	if hasEntry(t, s.reg, s.sleeper.id.PID) {
		t.Errorf("sleep entry still there")
	}

	// The recycled entry is removed, and its pid — a loop whose own
	// worktree is fine — is judged from /proc and kept alive.
	if s.recycledLoop.exited() {
		t.Errorf("process behind a recycled entry was signalled")
	}
	var recycled []watchdog.Loop
	for _, l := range rep.Loops {
		if l.PID == s.recycledLoop.id.PID {
			recycled = append(recycled, l)
		}
	}
	wantRecycled := 2 // the entry, and the loop found by the scan
	if runtime.GOOS != "linux" {
		wantRecycled = 1
	}
	if len(recycled) != wantRecycled || recycled[0].Action != watchdog.ActionRemoved || !strings.Contains(recycled[0].Reason, "start time differs") {
		t.Errorf("recycled: %+v", recycled)
	}
	if hasEntry(t, s.reg, s.recycledLoop.id.PID) {
		t.Errorf("recycled entry still there")
	}

	if l := loopOf(t, rep, s.dead.PID); l.Action != watchdog.ActionRemoved || l.Reason != "process is gone" {
		t.Errorf("dead entry: %+v", l)
	}
	if hasEntry(t, s.reg, s.dead.PID) {
		t.Errorf("dead entry still there")
	}

	if runtime.GOOS == "linux" {
		waitExit(t, s.unreg, "unregistered orphan loop")
		l := loopOf(t, rep, s.unreg.id.PID)
		if l.Action != watchdog.ActionStopped || l.Source != watchdog.SourceProc {
			t.Errorf("unregistered loop: %+v", l)
		}
	}

	if _, err := os.Stat(s.corruptPath); !os.IsNotExist(err) {
		t.Errorf("corrupt entry not removed")
	}
	if _, err := os.Stat(s.strangerPath); err != nil {
		t.Errorf("a file that is no entry was removed: %v", err)
	}

	// A second sweep finds only the healthy loops.
	rep2, err := watchdog.Sweep(context.Background(), s.options())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range rep2.Loops {
		if l.Action != watchdog.ActionKept && l.Action != watchdog.ActionSkipped {
			t.Errorf("second sweep: %+v", l)
		}
	}
	if s.healthy.exited() || s.recycledLoop.exited() || s.sleeper.exited() {
		t.Errorf("second sweep stopped a process it must leave alone")
	}

	var text bytes.Buffer
	watchdog.WriteText(&text, rep)
	out := text.String()
	for _, want := range []string{
		fmt.Sprintf("stopped      pid %d T-gone %s: worktree is gone (terminated)\n", s.gone.id.PID, s.goneDir),
		fmt.Sprintf("kept         pid %d T-healthy %s: worktree and lease.json present\n", s.healthy.id.PID, s.healthyDir),
		"watchdog: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != len(rep.Loops)+1 {
		t.Errorf("text output has %d lines, want one per loop plus a summary (%d):\n%s", n, len(rep.Loops)+1, out)
	}
}

func TestSweepDryRunKillsNothing(t *testing.T) {
	s := newScenario(t)
	o := s.options()
	o.DryRun = true
	before, _, err := s.reg.List()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := watchdog.Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []started{s.gone, s.noLease, s.stubborn, s.healthy, s.sleeper, s.recycledLoop, s.unreg} {
		if p.exited() || !p.id.Alive() {
			t.Errorf("dry run ended pid %d", p.id.PID)
		}
	}
	after, _, _ := s.reg.List()
	if len(after) != len(before) {
		t.Errorf("dry run removed entries: %d before, %d after", len(before), len(after))
	}
	if _, err := os.Stat(s.corruptPath); err != nil {
		t.Errorf("dry run removed the corrupt entry")
	}
	if l := loopOf(t, rep, s.gone.id.PID); l.Action != watchdog.ActionWouldStop {
		t.Errorf("orphan in dry run: %+v, want would-stop", l)
	}
	if l := loopOf(t, rep, s.dead.PID); l.Action != watchdog.ActionWouldRemove {
		t.Errorf("dead entry in dry run: %+v, want would-remove", l)
	}
	wantStops := 4
	if runtime.GOOS != "linux" {
		wantStops = 3
	}
	if rep.Summary.Stopped != wantStops || rep.Summary.Removed != 4 {
		t.Errorf("summary %+v, want %d would-stop and 4 would-remove", rep.Summary, wantStops)
	}
	var text bytes.Buffer
	watchdog.WriteText(&text, rep)
	if !strings.Contains(text.String(), "dry run: nothing was signalled or removed") {
		t.Errorf("dry run summary:\n%s", text.String())
	}

	var js bytes.Buffer
	if err := watchdog.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back watchdog.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, js.String())
	}
	if !back.DryRun || len(back.Loops) != len(rep.Loops) || back.Summary != rep.Summary {
		t.Errorf("JSON round trip: %+v", back)
	}
}

func TestLoopDir(t *testing.T) {
	cases := []struct {
		argv []string
		dir  string
		ok   bool
	}{
		{[]string{"/usr/local/bin/gyrum", "heartbeat", "run", "--dir", "/w/t"}, "/w/t", true},
		{[]string{"gyrum", "heartbeat", "run", "--dir=/w/t"}, "/w/t", true},
		{[]string{"gyrum", "--verbose", "heartbeat", "run"}, ".", true},
		{[]string{"/opt/gyrum/gyrum-loop", "heartbeat", "run", "--dir", "/w/t", "--schema-version", "2"}, "/w/t", true},
		{[]string{"/opt/gyrum/gyrum-hook", "heartbeat", "run", "--dir", "/w/t"}, "", false},
		{[]string{"gyrum", "heartbeat", "status", "--dir", "/w"}, "", false},
		{[]string{"gyrum", "heartbeat"}, "", false},
		{[]string{"/bin/sh", "-c", "gyrum heartbeat run --dir /w"}, "", false},
		{[]string{"/x/notgyrum", "heartbeat", "run", "--dir", "/w"}, "", false},
		{[]string{"sleep", "1000"}, "", false},
		{nil, "", false},
	}
	for _, c := range cases {
		dir, ok := watchdog.LoopDir(c.argv)
		if dir != c.dir || ok != c.ok {
			t.Errorf("LoopDir(%q) = %q, %v; want %q, %v", c.argv, dir, ok, c.dir, c.ok)
		}
	}
}

func TestSweepEmptyRegistry(t *testing.T) {
	reg := gyrumdir.NewRegistry(filepath.Join(t.TempDir(), "none"))
	rep, err := watchdog.Sweep(context.Background(), watchdog.Options{Registry: reg, Within: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Loops) != 0 || rep.Summary.Checked != 0 {
		t.Errorf("empty sweep: %+v", rep)
	}
}

// A loop started with a relative --dir, from a directory reached through
// a symlink, is still recognised as the loop of its registry entry: the
// /proc/PID/cwd it is resolved against is the physical path.
func TestRelativeDirThroughSymlink(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relative --dir is resolved through /proc/PID/cwd on Linux only")
	}
	root := t.TempDir()
	real := filepath.Join(root, "real")
	os.MkdirAll(real, 0o755)
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	wt := worktree(t, link, "wt-rel", "T-rel")
	reg := gyrumdir.NewRegistry(filepath.Join(root, "home"))
	bin := gyrumBin(t)

	cmd := exec.Command(bin, "heartbeat", "run", "--dir", "wt-rel")
	cmd.Dir = link
	cmd.Env = append(os.Environ(), fakeLoopEnv+"=plain")
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	if line, _ := bufio.NewReader(pipe).ReadString('\n'); line != "ready\n" {
		t.Fatalf("loop not ready: %q", line)
	}
	id, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	register(t, reg, id, wt, "T-rel")
	o := watchdog.Options{Registry: reg, Grace: 300 * time.Millisecond, Within: root}

	rep, err := watchdog.Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if l := loopOf(t, rep, id.PID); l.Action != watchdog.ActionKept || l.Source != watchdog.SourceRegistry {
		t.Fatalf("relative-dir loop: %+v, want kept from the registry", l)
	}

	os.RemoveAll(real)
	rep, err = watchdog.Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s := started{id: id, done: done}
	waitExit(t, s, "relative-dir orphan")
	if l := loopOf(t, rep, id.PID); l.Action != watchdog.ActionStopped {
		t.Errorf("relative-dir orphan: %+v, want stopped", l)
	}
}

// The sweep prunes the agent index of agents that are gone (a dry run
// does not), so the hook never credits a worktree for a recycled pid.
func TestSweepPrunesDeadAgents(t *testing.T) {
	home := t.TempDir()
	x := gyrumdir.NewAgentIndex(home)
	dead := exec.Command("sleep", "1000")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadID, err := proc.Lookup(dead.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	dead.Process.Kill()
	dead.Wait()
	self, _ := proc.Self()
	x.Add(deadID, t.TempDir())
	x.Add(self, t.TempDir())
	o := watchdog.Options{Registry: gyrumdir.NewRegistry(home), Agents: x, NoScan: true, DryRun: true}
	if rep, err := watchdog.Sweep(context.Background(), o); err != nil || rep.AgentsPruned != 0 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	o.DryRun = false
	rep, err := watchdog.Sweep(context.Background(), o)
	if err != nil || rep.AgentsPruned != 1 {
		t.Fatalf("sweep: pruned %d, %v; want 1", rep.AgentsPruned, err)
	}
	if links, _ := x.List(); len(links) != 1 || links[0].Agent != self {
		t.Errorf("index after the sweep: %+v", links)
	}

	// Prepared worktrees whose lease.json is gone are forgotten too.
	prep := gyrumdir.NewPrepared(home)
	held, gone := t.TempDir(), t.TempDir()
	for _, wt := range []string{held, gone} {
		d, _ := gyrumdir.Create(wt)
		d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: "http://127.0.0.1:1"})
		prep.Add(wt)
	}
	os.Remove(filepath.Join(gone, gyrumdir.DirName, gyrumdir.LeaseFile))
	o.Prepared = prep
	rep, err = watchdog.Sweep(context.Background(), o)
	if err != nil || rep.WorktreesPruned != 1 || !prep.Has(held) || prep.Has(gone) {
		t.Errorf("prepared after the sweep: pruned %d (%v), held %v, gone %v", rep.WorktreesPruned, err, prep.Has(held), prep.Has(gone))
	}
}
