package heartbeat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// appendCall appends a call record as the hook does.
func appendCall(t *testing.T, d gyrumdir.Dir, at time.Time, call, result string, failed bool) {
	t.Helper()
	c := gyrumdir.CallRecord{At: at, Failed: failed, Label: "Bash: " + call}
	copy(c.Call[:], call)
	copy(c.Result[:], result)
	if err := d.AppendCall(c); err != nil {
		t.Fatal(err)
	}
}

// The loop's progress evidence, tick by tick on a real git worktree:
// the first state is the start, not progress; reads and the same failing
// call are not progress (and the call makes a loop); an edit, a commit,
// a note and a call whose result changed are.
func TestProgressWatch(t *testing.T) {
	wt := t.TempDir()
	gitIn(t, wt, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(wt, ".gitignore"), []byte(".gyrum/\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "a.go"), []byte("package a\n"), 0o644)
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-q", "-m", "start")
	d, err := gyrumdir.Create(wt)
	if err != nil {
		t.Fatal(err)
	}
	claimed := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	w := newProgressWatch(wt, claimed)
	now := claimed
	tick := func(what string, wantLast time.Time, wantLoop int) {
		t.Helper()
		now = now.Add(time.Minute)
		if err := w.observe(context.Background(), d, now); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !w.last.Equal(wantLast) {
			t.Fatalf("%s: latest progress %v, want %v", what, w.last.Sub(claimed), wantLast.Sub(claimed))
		}
		got := 0
		if w.loop != nil {
			got = w.loop.Count
		}
		if got != wantLoop {
			t.Fatalf("%s: loop %+v, want count %d", what, w.loop, wantLoop)
		}
	}
	tick("the first tick", claimed, 0)
	for i := range 3 {
		appendCall(t, d, now.Add(time.Duration(i)*time.Second), fmt.Sprintf("cat f%d", i), "x", false)
	}
	tick("three reads", claimed, 0)
	for i := range 3 {
		appendCall(t, d, now.Add(time.Duration(i)*time.Second), "npm test", "FAIL", true)
	}
	tick("the same failing call 3 times", claimed, 3)
	if w.loop.Label != "Bash: npm test" {
		t.Fatalf("loop label %q", w.loop.Label)
	}
	os.WriteFile(filepath.Join(wt, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644)
	edit := now.Add(time.Minute)
	tick("an edit", edit, 3)
	appendCall(t, d, now.Add(time.Second), "npm test", "ok", false)
	tick("the failing call, now passing", now.Add(time.Second), 0)
	last := w.last
	tick("nothing", last, 0)
	gitIn(t, wt, "commit", "-q", "-am", "work")
	commit := now.Add(time.Minute)
	tick("a commit", commit, 0)
	os.WriteFile(filepath.Join(wt, "a.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644)
	note := now.Add(30 * time.Second)
	os.WriteFile(d.File(gyrumdir.NoteFile), []byte(`{"text":"tried X","at":"`+note.Format(time.RFC3339Nano)+`"}`), 0o600)
	// a.go's content is back to the commit's but its mtime moved: git
	// status reports nothing, so the state is the commit's state.
	tick("a note", note, 0)
	tick("the same note again", note, 0)
	os.WriteFile(d.File(gyrumdir.NoteFile), []byte(`not json`), 0o600)
	tick("a corrupt note", note, 0)
	if got := w.age(note.Add(5 * time.Minute)); got != 5*time.Minute {
		t.Fatalf("age %v, want 5m", got)
	}
}

// Calls recorded before the claim (an earlier lease's, left in the file)
// make no loop of this lease.
func TestProgressWatchIgnoresCallsBeforeTheClaim(t *testing.T) {
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	claimed := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		appendCall(t, d, claimed.Add(-time.Duration(5-i)*time.Second), "npm test", "FAIL", true)
	}
	w := newProgressWatch(d.Worktree, claimed)
	if err := w.observe(context.Background(), d, claimed.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if w.loop != nil || !w.noGit {
		t.Fatalf("loop %+v (want none), not git %v (want true)", w.loop, w.noGit)
	}
	appendCall(t, d, claimed.Add(2*time.Minute), "npm test", "FAIL", true)
	if err := w.observe(context.Background(), d, claimed.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if w.loop != nil {
		t.Fatalf("one call after the claim: loop %+v", w.loop)
	}
}
