package gyrumcli_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// Claude Code's documented hook input (code.claude.com/docs/en/hooks).
// callSeq numbers the tool calls hookPayload makes up: each Post event ends
// the current call, and the next PreToolUse starts another, with its own
// tool_use_id, as an agent gives every call one (the hook credits a
// repeated event of one call once).
var callSeq int

func hookPayload(event, cwd string) string {
	id := "toolu_01ABC123"
	if callSeq > 0 {
		id += "_" + strconv.Itoa(callSeq)
	}
	if strings.HasPrefix(event, "Post") {
		defer func() { callSeq++ }()
	}
	common := `"session_id":"abc123","transcript_path":"/home/user/.claude/projects/-p/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl","cwd":"` + cwd + `","permission_mode":"default","hook_event_name":"` + event + `"`
	switch event {
	case "PreToolUse":
		return `{` + common + `,"tool_name":"Bash","tool_input":{"command":"npm test","description":"Run test suite","timeout":120000},"tool_use_id":"` + id + `"}`
	case "PostToolUse":
		return `{` + common + `,"tool_name":"Bash","tool_input":{"command":"npm test"},"tool_response":{"stdout":"` + strings.Repeat("ok ", 1<<18) + `","stderr":"","interrupted":false},"tool_use_id":"` + id + `"}`
	case "PostToolUseFailure":
		return `{` + common + `,"tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":"` + id + `","error":"Command exited with non-zero status code 1","is_interrupt":false}`
	}
	return `{` + common + `}`
}

// hookWorktree is a worktree prepared like start-work does, with an old
// last-activity so a touch is visible.
func hookWorktree(t *testing.T, e *env) gyrumdir.Dir {
	t.Helper()
	d, err := gyrumdir.Create(mkdir(t))
	if err != nil {
		t.Fatal(err)
	}
	e.prepared(d)
	d.WriteLease(gyrumdir.Lease{Ticket: "T-h", Epoch: 1, WarpURL: "http://127.0.0.1:9"})
	d.TouchActivity(time.Now().Add(-time.Hour))
	return d
}

func touched(t *testing.T, d gyrumdir.Dir) bool {
	t.Helper()
	at, err := d.LastActivity()
	return err == nil && time.Since(at) < time.Minute
}

func silentOK(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("touch-activity: exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.stdout, r.stderr)
	}
}

func TestTouchActivityEvents(t *testing.T) {
	e := newEnv(t)
	d := hookWorktree(t, e)
	sub := filepath.Join(d.Worktree, "a", "b")
	os.MkdirAll(sub, 0o755)
	elsewhere := t.TempDir() // the hook's own cwd: the payload's cwd decides

	silentOK(t, e.gyrum(elsewhere, hookPayload("PreToolUse", sub), "touch-activity"))
	ms, _ := d.InFlight()
	if len(ms) != 1 || !strings.HasPrefix(ms[0].Name, "toolu_01ABC123") || ms[0].Tool != "Bash" {
		t.Fatalf("after PreToolUse: markers %+v", ms)
	}
	if touched(t, d) {
		t.Fatal("PreToolUse touched last-activity")
	}
	silentOK(t, e.gyrum(elsewhere, hookPayload("PostToolUse", sub), "touch-activity"))
	if ms, _ := d.InFlight(); len(ms) != 0 || !touched(t, d) {
		t.Fatalf("after PostToolUse: markers %+v, touched %v", ms, touched(t, d))
	}

	d.TouchActivity(time.Now().Add(-time.Hour))
	silentOK(t, e.gyrum(elsewhere, hookPayload("PreToolUse", d.Worktree), "touch-activity"))
	silentOK(t, e.gyrum(elsewhere, hookPayload("PostToolUseFailure", d.Worktree), "touch-activity"))
	if ms, _ := d.InFlight(); len(ms) != 0 || !touched(t, d) {
		t.Fatalf("after PostToolUseFailure: markers %+v, touched %v", ms, touched(t, d))
	}

	d.TouchActivity(time.Now().Add(-time.Hour))
	silentOK(t, e.gyrum(elsewhere, hookPayload("Stop", d.Worktree), "touch-activity"))
	if !touched(t, d) {
		t.Fatal("another event did not touch")
	}
}

func TestTouchActivityPlainGarbageEmpty(t *testing.T) {
	e := newEnv(t)
	for name, stdin := range map[string]string{"empty": "", "garbage": "\x00\xffnot json {[", "array": `["cwd"]`} {
		d := hookWorktree(t, e)
		silentOK(t, e.gyrum(d.Worktree, stdin, "touch-activity"))
		if !touched(t, d) {
			t.Errorf("%s stdin: last-activity not touched", name)
		}
		if ms, _ := d.InFlight(); len(ms) != 0 {
			t.Errorf("%s stdin: markers %v", name, ms)
		}
	}
	// --dir, from a directory outside the worktree.
	d := hookWorktree(t, e)
	silentOK(t, e.gyrum(t.TempDir(), "", "touch-activity", "--dir", filepath.Join(d.Worktree)))
	if !touched(t, d) {
		t.Error("--dir: not touched")
	}
}

func TestTouchActivityClosedStdin(t *testing.T) {
	e := newEnv(t)
	d := hookWorktree(t, e)
	cmd := exec.Command("sh", "-c", `"$0" touch-activity <&-`, gyrumBin)
	cmd.Dir, cmd.Env = d.Worktree, e.environ()
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("closed stdin: %v, output %q", err, out)
	}
	if !touched(t, d) {
		t.Fatal("closed stdin: not touched")
	}
}

func TestTouchActivityNoGyrumDir(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	silentOK(t, e.gyrum(dir, hookPayload("PreToolUse", dir), "touch-activity"))
	silentOK(t, e.gyrum(dir, hookPayload("PostToolUse", dir), "touch-activity"))
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("the hook created %v", ents)
	}
}

func TestTouchActivityUnwritableWorktree(t *testing.T) {
	e := newEnv(t)
	d := hookWorktree(t, e)
	if os.Geteuid() != 0 {
		os.Chmod(d.File(gyrumdir.InFlightDir), 0o500)
		os.Chmod(d.Path, 0o500)
		t.Cleanup(func() { os.Chmod(d.Path, 0o700); os.Chmod(d.File(gyrumdir.InFlightDir), 0o700) })
		os.Chmod(d.File(gyrumdir.ActivityFile), 0o400)
	} else {
		// root writes anywhere: make every write fail another way.
		os.RemoveAll(d.File(gyrumdir.InFlightDir))
		os.WriteFile(d.File(gyrumdir.InFlightDir), nil, 0o400) // in-flight/ is a file
		os.Remove(d.File(gyrumdir.ActivityFile))
		os.Symlink(filepath.Join(t.TempDir(), "gone", "x"), d.File(gyrumdir.ActivityFile)) // dangling
	}
	for _, ev := range []string{"PreToolUse", "PostToolUse", "Stop"} {
		silentOK(t, e.gyrum(d.Worktree, hookPayload(ev, d.Worktree), "touch-activity"))
	}
	if _, err := d.LastActivity(); err == nil && os.Geteuid() == 0 {
		t.Fatal("a write succeeded where it cannot")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, gyrumdir.ErrUnsafe) && os.Geteuid() == 0 {
		t.Fatal(err)
	}
}

func TestTouchActivityHelpIsNotSilent(t *testing.T) {
	e := newEnv(t)
	r := e.gyrum(t.TempDir(), "", "touch-activity", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "PreToolUse") {
		t.Fatalf("--help: %+v", r)
	}
}

// A repository that commits .gyrum/lease.json gets nothing from the hook:
// it writes only into worktrees a start-work on this host prepared, and
// the release makes the worktree foreign again.
func TestTouchActivityOnlyInPreparedWorktrees(t *testing.T) {
	e := newEnv(t)
	d, err := gyrumdir.Create(mkdir(t))
	if err != nil {
		t.Fatal(err)
	}
	d.WriteLease(gyrumdir.Lease{Ticket: "T-evil", Epoch: 1, WarpURL: "http://127.0.0.1:9"})
	for _, args := range [][]string{{"touch-activity"}, {"touch-activity", "--dir", d.Worktree}} {
		silentOK(t, e.gyrum(d.Worktree, hookPayload("PostToolUse", d.Worktree), args...))
	}
	if _, err := d.LastActivity(); err == nil {
		t.Error("the hook wrote into a .gyrum/ no start-work prepared")
	}
	if _, err := os.Stat(d.File(gyrumdir.HookEventsFile)); err == nil {
		t.Error("the hook counted an event in a .gyrum/ no start-work prepared")
	}

	// A real start-work prepares its worktree; its release forgets it.
	e.ws.Create("T-p")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	e.startResult(e.gyrum(wt, "", "start-work", "T-p", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	w, _ := gyrumdir.Open(wt)
	before, _ := w.LastActivity()
	time.Sleep(20 * time.Millisecond) // mtimes have a resolution
	silentOK(t, e.gyrum(wt, hookPayload("PostToolUse", wt), "touch-activity"))
	if after, _ := w.LastActivity(); !after.After(before) {
		t.Error("the hook did not credit a worktree start-work prepared")
	}
	e.inproc(wt, "release")
	if gyrumdir.NewPrepared(e.home).Has(wt) {
		t.Error("the released worktree is still prepared")
	}
}

// `gyrum heartbeat status` shows the running loop's own judgement: a call
// nothing backs (a denied one) is not reported in flight, as the loop does
// not report it to warp either.
func TestStatusShowsTheLoopsJudgement(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-st")
	_, watched := agent(t, "sleep", "1000")
	wt := mkdir(t)
	e.startResult(e.gyrum(wt, "", "start-work", "T-st", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	silentOK(t, e.gyrum(wt, hookPayload("PreToolUse", wt), "touch-activity"))
	d, _ := gyrumdir.Open(wt)
	if ms, _ := d.InFlight(); len(ms) != 1 {
		t.Fatalf("markers %v, want the denied call's", ms)
	}
	n := len(e.ws.Answered())
	waitFor(t, "a tick after the marker", func() bool { return len(e.ws.Answered()) > n+1 })
	var st struct {
		InFlight string   `json:"in_flight"`
		Activity *float64 `json:"activity_age_s"`
	}
	r := e.gyrum(wt, "", "heartbeat", "status", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status %q: %v", r.stdout, err)
	}
	if st.InFlight != "" || st.Activity == nil {
		t.Errorf("status: in_flight %q activity %v, want nothing in flight (no process backs the call)", st.InFlight, st.Activity)
	}
	e.inproc(wt, "release")
}

// start-work run from a shell in a directory reached through a symlink
// records the path the shell shows ($PWD); an agent's payload names the
// real path (Claude Code's cwd, Codex's). The hook credits the worktree
// either way, and release from the real path forgets it.
func TestWorktreeThroughASymlink(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-link")
	real := mkdir(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e.vars["PWD"] = link // what a shell that cd'd through the link exports
	_, w := agent(t, "sleep", "1000")
	sr := e.startResult(e.gyrum(link, "", "start-work", "T-link", "--watch-pid", strconv.Itoa(w.PID), "--json"))
	if sr.Dir != link {
		t.Fatalf("start-work recorded %q, want the shell's %q (the test needs the link form)", sr.Dir, link)
	}
	delete(e.vars, "PWD")
	d, _ := gyrumdir.Open(real)
	d.TouchActivity(time.Now().Add(-time.Hour))
	silentOK(t, e.gyrum(t.TempDir(), hookPayload("PostToolUse", real), "touch-activity"))
	if !touched(t, d) {
		t.Fatal("a payload naming the real path did not credit the worktree start-work recorded through a link")
	}
	// Without its loop (the hook's other way to know the worktree is
	// gyrum's), the record start-work made must still be found.
	if r := e.gyrum(real, "", "heartbeat", "kill"); r.code != 0 {
		t.Fatalf("heartbeat kill: %+v", r)
	}
	d.TouchActivity(time.Now().Add(-time.Hour))
	silentOK(t, e.gyrum(t.TempDir(), hookPayload("PostToolUse", real), "touch-activity"))
	if !touched(t, d) {
		t.Fatal("without the loop, a payload naming the real path did not credit the worktree")
	}
	if r := e.gyrum(real, "", "release"); r.code != 0 {
		t.Fatalf("release from the real path: %+v", r)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.home, "worktrees")); len(ents) != 0 {
		t.Errorf("prepared entries left after the release: %v", ents)
	}
	if links, err := gyrumdir.NewAgentIndex(e.home).List(); err != nil || len(links) != 0 {
		t.Errorf("agent index entries left after the release: %+v %v", links, err)
	}
}

// leaseWithoutLoop claims ticket in a new worktree with start-work (a
// live agent watched), then kills its loop: the lease stays, the loop is
// gone. It is released at the end of the test.
func leaseWithoutLoop(t *testing.T, e *env, ticket string) string {
	t.Helper()
	return leaseWithoutLoopIn(t, e, ticket, mkdir(t))
}

// leaseWithoutLoopIn is leaseWithoutLoop in the worktree wt.
func leaseWithoutLoopIn(t *testing.T, e *env, ticket, wt string) string {
	t.Helper()
	e.ws.Create(ticket)
	_, w := agent(t, "sleep", "1000")
	e.startResult(e.gyrum(wt, "", "start-work", ticket, "--watch-pid", strconv.Itoa(w.PID), "--json"))
	t.Cleanup(func() { e.gyrum(wt, "", "release") })
	if r := e.gyrum(wt, "", "heartbeat", "kill"); r.code != 0 {
		t.Fatalf("heartbeat kill: %+v", r)
	}
	return wt
}

// A lease whose loop is gone (killed here; after a lease ended on warp,
// the loop exits the same way) is still listed by status: the lease.json
// is there and the lease may still be held, and the lease-ended notice
// sends the agent to status.
func TestStatusListsLeasesWithoutALoop(t *testing.T) {
	e := newEnv(t)
	wt := leaseWithoutLoop(t, e, "T-gone")
	r := e.gyrum(t.TempDir(), "", "status", "--json")
	var hs gyrumcli.HostStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hs) != nil {
		t.Fatalf("status: %+v", r)
	}
	if len(hs.Loops) != 1 || hs.Loops[0].Ticket != "T-gone" || hs.Loops[0].LoopAlive || hs.Loops[0].Registered || !gyrumdir.SamePath(hs.Loops[0].Dir, wt) {
		t.Fatalf("status lists %+v, want T-gone in %s without a live loop", hs.Loops, wt)
	}
	if r := e.gyrum(t.TempDir(), "", "status"); r.code != 0 || !strings.Contains(r.stdout, "T-gone") {
		t.Fatalf("status text: %+v", r)
	}
}

// doctor's restart command, `nohup gyrum heartbeat run --dir D >/dev/null
// 2>&1 &`, gives a loop that outlives the terminal: SIGHUP, which nohup
// ignores, must not end it (the loop's own signal handling once undid
// nohup's).
func TestLoopUnderNohupOutlivesHangup(t *testing.T) {
	if _, err := exec.LookPath("nohup"); err != nil {
		t.Skip("no nohup")
	}
	e := newEnv(t)
	wt := leaseWithoutLoop(t, e, "T-hup")
	logf := filepath.Join(t.TempDir(), "nohup.out")
	cmd := exec.Command("/bin/sh", "-c", "nohup "+shellquote.Quote(gyrumBin)+" heartbeat run --dir "+shellquote.Quote(wt)+" >"+shellquote.Quote(logf)+" 2>&1 & echo $!")
	cmd.Env = e.environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	loop, err := proc.Lookup(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	before := len(e.ws.Beats())
	waitFor(t, "the restarted loop's heartbeat", func() bool { return len(e.ws.Beats()) > before || !loop.Alive() })
	if !loop.Alive() {
		out, _ := os.ReadFile(logf)
		t.Fatalf("the restarted loop ended before the hangup: %s", out)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	hup := time.Now()
	waitFor(t, "a heartbeat after the hangup", func() bool {
		bs := e.ws.Beats()
		return bs[len(bs)-1].At.After(hup) && bs[len(bs)-1].Body.Exit == "" || !loop.Alive()
	})
	if !loop.Alive() {
		d, _ := gyrumdir.Open(wt)
		st, _ := d.ReadState()
		t.Fatalf("the loop under nohup ended on SIGHUP (last outcome %q)", st.LastOutcome)
	}
}
