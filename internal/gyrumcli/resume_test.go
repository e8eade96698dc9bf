package gyrumcli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/handoff"
	"github.com/gyrum-labs/warp/internal/warp"
)

// git runs git in dir for a test (identity set, no global config).
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeT(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codeRepo is a repository with a tracked source file and a .gitignore
// that ignores build/.
func codeRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "init", "-q", "-b", "main")
	writeT(t, filepath.Join(repo, "src/app.go"), "package app\n")
	writeT(t, filepath.Join(repo, ".gitignore"), "build/\n")
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "first")
	return repo
}

// edits are an agent's work in progress: an uncommitted change to a
// tracked file, a new untracked file (bytes no text tool would keep), an
// ignored build file.
var edits = map[string]string{
	"src/app.go":      "package app\n\nfunc Half() { /* done so far */ }\n",
	"src/new_test.go": "package app\n\x00\xff binary-ish\r\n",
}

const ignoredFile = "build/out.bin"

func makeEdits(t *testing.T, wt string) {
	t.Helper()
	for f, c := range edits {
		writeT(t, filepath.Join(wt, f), c)
	}
	writeT(t, filepath.Join(wt, ignoredFile), "ignored output")
}

func checkEdits(t *testing.T, wt string) {
	t.Helper()
	for f, want := range edits {
		got, err := os.ReadFile(filepath.Join(wt, f))
		if err != nil || string(got) != want {
			t.Errorf("%s in the resumed worktree: %q (%v), want %q", f, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(wt, ignoredFile)); !os.IsNotExist(err) {
		t.Errorf("the ignored %s came along: %v", ignoredFile, err)
	}
}

// killedAgent claims ticket in repo with --worktree for a stand-in agent,
// makes the edits, SIGKILLs the agent mid-edit and waits for the loop's
// snapshot to reach warp; it returns the old worktree and the snapshot.
func killedAgent(t *testing.T, e *env, repo, ticket string) (string, warp.Snapshot) {
	t.Helper()
	cmd, watched := agent(t, "sleep", "1000")
	sr := e.startResult(e.gyrum(repo, "", "start-work", ticket, "--worktree", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	makeEdits(t, sr.Dir)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	var snap warp.Snapshot
	waitFor(t, "the snapshot of attempt 1", func() bool {
		v := e.ws.Ticket(ticket)
		if len(v.Attempts) == 0 {
			return false
		}
		snap = v.Attempts[0].Record.Snapshot
		return snap.State != ""
	})
	if snap.State != warp.SnapshotSaved || snap.Ref != warp.SnapshotRef(ticket, 1) || snap.Branch != "gyrum/"+ticket {
		t.Fatalf("snapshot %+v", snap)
	}
	// An operator frees the ticket (the exit report alone leaves it held
	// until it lapses).
	if _, err := e.ws.Svc.Release(context.Background(), ticket, 0, "agent crashed"); err != nil {
		t.Fatal(err)
	}
	return sr.Dir, snap
}

// An agent killed with SIGKILL mid-edit loses nothing: the next
// start-work --resume on the same host makes its worktree from the
// snapshot — every changed and new file byte for byte, not the ignored
// one — and hands over the attempt (.gyrum/handoff.json, --json). The
// old worktree's index, HEAD and branch are as the agent left them.
func TestResumeAfterSIGKILLSameHost(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-r")
	repo := codeRepo(t)
	e.vars["GYRUM_WORKTREE_ROOT"] = t.TempDir()
	old, snap := killedAgent(t, e, repo, "T-r")
	if got := gitT(t, old, "status", "--porcelain"); !strings.Contains(got, "M src/app.go") || !strings.Contains(got, "?? src/new_test.go") {
		t.Errorf("the old worktree's status changed: %q", got)
	}
	if got := gitT(t, old, "symbolic-ref", "--short", "HEAD"); got != "gyrum/T-r" {
		t.Errorf("old worktree's HEAD %q", got)
	}

	_, watched := agent(t, "sleep", "1000")
	sr := e.startResult(e.gyrum(repo, "", "start-work", "T-r", "--worktree", "--resume", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	if sr.Epoch != 2 || sr.Dir == old || sr.Branch != "gyrum/T-r-2" {
		t.Fatalf("resumed: epoch %d dir %s branch %s", sr.Epoch, sr.Dir, sr.Branch)
	}
	checkEdits(t, sr.Dir)
	if sr.Handoff == nil || sr.Handoff.Resumed != snap.Commit || len(sr.Handoff.Attempts) != 1 {
		t.Fatalf("handoff %+v, want attempt 1 resumed from %s", sr.Handoff, snap.Commit)
	}
	a := sr.Handoff.Attempts[0]
	if a.Number != 1 || !strings.Contains(a.Ended, "released") || !strings.Contains(a.Ended, "agent crashed") ||
		!strings.Contains(a.Ended, "exited (parent-exited)") || a.Snapshot == nil || a.Snapshot.Commit != snap.Commit {
		t.Errorf("handed-over attempt %+v", a)
	}
	var onDisk handoff.Handoff
	d, err := gyrumdir.Open(sr.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(readFile(t, d.File(gyrumdir.HandoffFile))), &onDisk); err != nil || onDisk.Resumed != snap.Commit || len(onDisk.Attempts) != 1 {
		t.Errorf("handoff.json %+v (%v)", onDisk, err)
	}
	// Nothing staged: the old attempt's work is uncommitted here too.
	if staged := gitT(t, sr.Dir, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("staged in the resumed worktree: %q", staged)
	}
}

// Without --resume nothing of the old attempt is applied, but the
// attempt is still handed over in words.
func TestStartWorkHandsOverWithoutResume(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-h")
	repo := codeRepo(t)
	e.vars["GYRUM_WORKTREE_ROOT"] = t.TempDir()
	cmd, watched := agent(t, "sleep", "1000")
	sr := e.startResult(e.gyrum(repo, "", "start-work", "T-h", "--worktree", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	if r := e.gyrum(sr.Dir, "", "note", "tried the cache; next: drop it"); r.code != 0 {
		t.Fatalf("note: %+v", r)
	}
	makeEdits(t, sr.Dir)
	if r := e.gyrum(sr.Dir, "", "release"); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	cmd.Process.Kill()
	v := e.ws.Ticket("T-h")
	if len(v.Attempts) != 1 || v.Attempts[0].Record.Note != "tried the cache; next: drop it" || v.Attempts[0].Record.EndedBy != "" ||
		v.Attempts[0].Record.Snapshot.State != warp.SnapshotSaved {
		t.Fatalf("attempt after release: %+v", v.Attempts)
	}
	// Another directory (not a worktree of the repository): plain start-work.
	wt := mkdir(t)
	_, watched2 := agent(t, "sleep", "1000")
	r := e.gyrum(wt, "", "start-work", "T-h", "--watch-pid", strconv.Itoa(watched2.PID))
	if r.code != 0 || !strings.Contains(r.stdout, "note: tried the cache; next: drop it") || !strings.Contains(r.stdout, "nothing of them was applied") ||
		!strings.Contains(r.stdout, "#1 ") {
		t.Fatalf("start-work's hand-over:\n%s\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(wt, "src/app.go")); !os.IsNotExist(err) {
		t.Errorf("without --resume a file of the old attempt is here: %v", err)
	}
}

// The same through a bare remote for a second clone (another host): the
// loop pushes the snapshot's ref (gyrum setup --snapshot-push) and
// start-work --resume in the clone fetches it.
func TestResumeAfterSIGKILLOtherHost(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-x")
	repo := codeRepo(t)
	bare := filepath.Join(t.TempDir(), "origin.git")
	gitT(t, repo, "init", "-q", "--bare", bare)
	gitT(t, repo, "remote", "add", "origin", bare)
	gitT(t, repo, "push", "-q", "origin", "main")
	clone := filepath.Join(t.TempDir(), "clone")
	gitT(t, t.TempDir(), "clone", "-q", "--no-local", bare, clone)
	e.vars["GYRUM_WORKTREE_ROOT"] = t.TempDir()
	// This host pushes its snapshots (gyrum setup --snapshot-push).
	if r := e.gyrum(repo, "", "setup", "--snapshot-push"); r.code != 0 || !strings.Contains(r.stdout, "wrote") {
		t.Fatalf("setup --snapshot-push: %+v", r)
	}
	_, snap := killedAgent(t, e, repo, "T-x")
	if !snap.Pushed || snap.Remote != bare {
		t.Fatalf("snapshot not pushed: %+v", snap)
	}
	if _, err := exec.Command("git", "-C", clone, "cat-file", "-e", snap.Commit).CombinedOutput(); err == nil {
		t.Fatal("the clone holds the snapshot before start-work")
	}
	// The other host: its own GYRUM_HOME and worktree root.
	e.vars["GYRUM_HOME"] = t.TempDir()
	e.vars["GYRUM_WORKTREE_ROOT"] = t.TempDir()
	_, watched := agent(t, "sleep", "1000")
	sr := e.startResult(e.gyrum(clone, "", "start-work", "T-x", "--worktree", "--resume", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	checkEdits(t, sr.Dir)
	if sr.Handoff == nil || sr.Handoff.Resumed != snap.Commit {
		t.Fatalf("handoff %+v", sr.Handoff)
	}
}

// A lapsed agent that keeps working is fenced: its later snapshot (here
// through gyrum release, after more edits) does not replace the
// attempt's, neither on warp nor in the repository.
func TestLaterSnapshotDoesNotReplace(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-f")
	repo := codeRepo(t)
	e.vars["GYRUM_WORKTREE_ROOT"] = t.TempDir()
	old, snap := killedAgent(t, e, repo, "T-f")
	writeT(t, filepath.Join(old, "src/app.go"), "package app // written after the lease ended\n")
	r := e.gyrum(old, "", "release", "--json")
	if r.code != 0 {
		t.Fatalf("release after the end: %+v", r)
	}
	if got := e.ws.Ticket("T-f").Attempts[0].Record.Snapshot; got.Commit != snap.Commit {
		t.Errorf("warp's snapshot of attempt 1 is %s, want the first %s", got.Commit, snap.Commit)
	}
	if got := gitT(t, repo, "rev-parse", snap.Ref); got != snap.Commit {
		t.Errorf("%s is %s, want the first %s", snap.Ref, got, snap.Commit)
	}
}

// gyrum setup --snapshot-push turns the push on for the host's next
// leases, --snapshot-push=false (or with --uninstall) off, --dry-run
// changes nothing, and GYRUM_SNAPSHOT_PUSH wins over it.
func TestSetupSnapshotPush(t *testing.T) {
	e := newEnv(t)
	marker := filepath.Join(e.home, gyrumcli.SnapshotPushFile)
	pushOf := func(ticket string) bool {
		t.Helper()
		e.ws.Create(ticket)
		wt := mkdir(t)
		_, watched := agent(t, "sleep", "1000")
		e.startResult(e.gyrum(wt, "", "start-work", ticket, "--watch-pid", strconv.Itoa(watched.PID), "--json"))
		d, err := gyrumdir.Open(wt)
		if err != nil {
			t.Fatal(err)
		}
		l, err := d.ReadLease()
		if err != nil {
			t.Fatal(err)
		}
		return l.SnapshotPush
	}
	if pushOf("T-p1") {
		t.Error("snapshot_push without the setting")
	}
	if r := e.gyrum(e.home, "", "setup", "--snapshot-push", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "would write") {
		t.Fatalf("dry run: %+v", r)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote %s: %v", marker, err)
	}
	if r := e.gyrum(e.home, "", "setup", "--snapshot-push"); r.code != 0 {
		t.Fatalf("setup --snapshot-push: %+v", r)
	}
	if !pushOf("T-p2") {
		t.Error("no snapshot_push with the setting")
	}
	e.vars["GYRUM_SNAPSHOT_PUSH"] = "0"
	if pushOf("T-p3") {
		t.Error("GYRUM_SNAPSHOT_PUSH=0 does not win over the setting")
	}
	e.vars["GYRUM_SNAPSHOT_PUSH"] = ""
	if r := e.gyrum(e.home, "", "setup", "--snapshot-push", "--uninstall"); r.code != 0 || !strings.Contains(r.stdout, "removed") {
		t.Fatalf("setup --snapshot-push --uninstall: %+v", r)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", marker, err)
	}
	if r := e.gyrum(e.home, "", "setup", "--snapshot-push", "--watchdog", "none"); r.code != 2 {
		t.Errorf("--snapshot-push with --watchdog: %+v, want a usage error", r)
	}
}

// gyrum note refuses what warp would: no lease, an empty note, one over
// 1 KiB, several arguments; a good one is note.json {"text","at"}.
func TestNoteBadInput(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-n")
	wt := mkdir(t)
	if r := e.gyrum(wt, "", "note", "x"); r.code == 0 {
		t.Errorf("note without a lease: %+v", r)
	}
	_, watched := agent(t, "sleep", "1000")
	e.startResult(e.gyrum(wt, "", "start-work", "T-n", "--watch-pid", strconv.Itoa(watched.PID), "--json"))
	for _, args := range [][]string{{"note", "  "}, {"note", strings.Repeat("é", 513)}, {"note", "a", "b"}, {"note"}} {
		if r := e.gyrum(wt, "", args...); r.code != 2 {
			t.Errorf("gyrum %q: exit %d (%s), want 2", args[:min(len(args), 1)], r.code, r.stderr)
		}
	}
	r := e.gyrum(wt, "", "note", " tried the cache ", "--json")
	var n gyrumdir.Note
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &n) != nil || n.Text != "tried the cache" || n.At.IsZero() {
		t.Fatalf("note --json: %+v", r)
	}
	d, _ := gyrumdir.Open(wt)
	if got, err := d.ReadNote(); err != nil || got.Text != "tried the cache" {
		t.Errorf("note.json: %+v %v", got, err)
	}
}

// start-work -- CMD: what CMD leaves uncommitted when it exits is the
// attempt's snapshot, as after gyrum release.
func TestWrapperSavesASnapshot(t *testing.T) {
	e := newEnv(t)
	e.ws.Create("T-w")
	repo := codeRepo(t)
	r := e.gyrum(repo, "", "start-work", "T-w", "--", "sh", "-c", "printf 'half done\\n' > src/app.go; exit 1")
	if r.code != 1 {
		t.Fatalf("start-work -- CMD: %+v, want CMD's exit 1", r)
	}
	v := e.ws.Ticket("T-w")
	if len(v.Attempts) != 1 || v.Attempts[0].Lease.EndReason != "command-exited" {
		t.Fatalf("attempts %+v", v.Attempts)
	}
	sn := v.Attempts[0].Record.Snapshot
	if sn.State != warp.SnapshotSaved {
		t.Fatalf("snapshot %+v", sn)
	}
	if got := gitT(t, repo, "show", sn.Commit+":src/app.go"); got != "half done" {
		t.Errorf("src/app.go in the snapshot: %q", got)
	}
}
