package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/snapshot"
)

// run runs git in dir and returns its output; a failure fails the test.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRepo makes a repository with one commit (a tracked file, a
// .gitignore for build/) and hooks that leave a marker when any runs.
func newRepo(t *testing.T) (dir, marker string) {
	t.Helper()
	dir = t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "src/app.go"), "package app\n")
	write(t, filepath.Join(dir, ".gitignore"), "build/\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "first")
	marker = filepath.Join(t.TempDir(), "hook-ran")
	for _, h := range []string{"reference-transaction", "post-index-change", "pre-commit", "post-commit", "pre-push", "post-checkout"} {
		write(t, filepath.Join(dir, ".git/hooks", h), "#!/bin/sh\necho "+h+" >> "+marker+"\n")
		if err := os.Chmod(filepath.Join(dir, ".git/hooks", h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, marker
}

// repoState is what a snapshot must never change.
type repoState struct{ index, head, refs, status string }

func stateOf(t *testing.T, dir string) repoState {
	t.Helper()
	idx, err := os.ReadFile(filepath.Join(dir, ".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	return repoState{index: string(idx), head: run(t, dir, "symbolic-ref", "HEAD") + " " + run(t, dir, "rev-parse", "HEAD"),
		refs: run(t, dir, "for-each-ref", "refs/heads", "refs/tags"), status: run(t, dir, "status", "--porcelain", "--untracked-files=all", "--ignored")}
}

func TestTakeSavesTrackedAndUntrackedNotIgnored(t *testing.T) {
	ctx := context.Background()
	dir, marker := newRepo(t)
	head := run(t, dir, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "src/app.go"), "package app\n\nfunc Edited() {}\n")
	write(t, filepath.Join(dir, "src/new.go"), "package app // new, untracked\n")
	write(t, filepath.Join(dir, "build/out.bin"), "ignored build output")
	write(t, filepath.Join(dir, "staged.txt"), "staged only\n")
	run(t, dir, "add", "staged.txt")
	before := stateOf(t, dir)
	// The test's own git add and status run hooks: only the snapshot's count.
	_ = os.Remove(marker)
	idxBefore := read(t, filepath.Join(dir, ".git/index"))

	r, err := snapshot.Take(ctx, dir, "T-1", 3, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("a hook ran: %s", b)
	}
	if read(t, filepath.Join(dir, ".git/index")) != idxBefore {
		t.Error("the snapshot rewrote the worktree's index")
	}
	if r.State != snapshot.StateSaved || r.Ref != "refs/gyrum/T-1/3" || r.Base != head || r.Branch != "main" || r.Existed {
		t.Fatalf("result %+v", r)
	}
	if got := run(t, dir, "rev-parse", r.Ref); got != r.Commit {
		t.Errorf("ref %s is %s, want %s", r.Ref, got, r.Commit)
	}
	if parent := run(t, dir, "rev-parse", r.Commit+"^"); parent != head {
		t.Errorf("parent %s, want HEAD %s", parent, head)
	}
	files := run(t, dir, "ls-tree", "-r", "--name-only", r.Commit)
	for _, f := range []string{"src/app.go", "src/new.go", "staged.txt", ".gitignore"} {
		if !strings.Contains(files, f) {
			t.Errorf("snapshot lacks %s: %s", f, files)
		}
	}
	if strings.Contains(files, "build/") {
		t.Errorf("snapshot holds the ignored build/: %s", files)
	}
	if got := run(t, dir, "show", r.Commit+":src/app.go"); got != "package app\n\nfunc Edited() {}" {
		t.Errorf("src/app.go in the snapshot: %q", got)
	}
	if after := stateOf(t, dir); after != before {
		t.Errorf("the snapshot changed the repository:\nbefore %+v\nafter  %+v", before, after)
	}

	// A later snapshot of the same attempt (a lapsed agent that kept
	// working) does not replace the first.
	write(t, filepath.Join(dir, "src/app.go"), "package app // later work\n")
	again, err := snapshot.Take(ctx, dir, "T-1", 3, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Existed || again.Commit != r.Commit || run(t, dir, "rev-parse", r.Ref) != r.Commit {
		t.Errorf("second snapshot: %+v, want the first (%s) kept", again, r.Commit)
	}
}

func TestTakeCleanRecordsHEAD(t *testing.T) {
	dir, _ := newRepo(t)
	write(t, filepath.Join(dir, "build/x"), "ignored only")
	r, err := snapshot.Take(context.Background(), dir, "T-1", 1, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if head := run(t, dir, "rev-parse", "HEAD"); r.Commit != head {
		t.Errorf("clean worktree: commit %s, want HEAD %s", r.Commit, head)
	}
}

func TestTakeGoneWorktree(t *testing.T) {
	r, err := snapshot.Take(context.Background(), filepath.Join(t.TempDir(), "gone"), "T-1", 1, snapshot.Options{})
	if err != nil || r.State != snapshot.StateGone || r.Commit != "" {
		t.Fatalf("gone worktree: %+v, %v", r, err)
	}
}

func TestTakeNotARepository(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	if _, err := snapshot.Take(context.Background(), dir, "T-1", 1, snapshot.Options{}); err == nil {
		t.Fatal("a directory outside git: no error")
	}
}

func TestRestoreThroughRemote(t *testing.T) {
	ctx := context.Background()
	dir, _ := newRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	run(t, dir, "init", "-q", "--bare", bare)
	run(t, dir, "remote", "add", "origin", bare)
	run(t, dir, "push", "-q", "origin", "main")
	write(t, filepath.Join(dir, "src/app.go"), "package app // edited\n")
	write(t, filepath.Join(dir, "notes/plan.md"), "# plan\x00binary\n")
	if err := os.Remove(filepath.Join(dir, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Take(ctx, dir, "T-1", 1, snapshot.Options{Push: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Pushed || r.Remote != bare {
		t.Fatalf("push: %+v", r)
	}
	// Another host: a clone of the remote, which has never seen the commit.
	other := filepath.Join(t.TempDir(), "clone")
	run(t, t.TempDir(), "clone", "-q", "--no-local", bare, other) // --no-local: no hard links to every object
	if snapshot.Has(ctx, other, r.Commit) {
		t.Fatal("the clone has the snapshot before the fetch")
	}
	if err := snapshot.Fetch(ctx, other, r.Remote, r.Ref); err != nil {
		t.Fatal(err)
	}
	run(t, other, "checkout", "-q", "-b", "resume", r.Base)
	if err := snapshot.Restore(ctx, other, r.Commit); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"src/app.go", "notes/plan.md"} {
		if got, want := read(t, filepath.Join(other, f)), read(t, filepath.Join(dir, f)); !bytes.Equal([]byte(got), []byte(want)) {
			t.Errorf("%s: %q, want %q", f, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(other, ".gitignore")); !os.IsNotExist(err) {
		t.Errorf(".gitignore, deleted in the snapshot, is there after Restore: %v", err)
	}
	if staged := run(t, other, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("Restore staged %q, want nothing", staged)
	}
}

// BenchmarkTake: a snapshot of a worktree of 1,000 tracked files with 10
// changed and 10 new ones (each iteration a new attempt's ref).
func BenchmarkTake(b *testing.B) {
	dir := b.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	for i := range 1000 {
		write(b, filepath.Join(dir, "src", strconv.Itoa(i/100), strconv.Itoa(i)+".go"), "package p // "+strconv.Itoa(i)+"\n")
	}
	run("add", "-A")
	run("commit", "-q", "-m", "base")
	for i := range 10 {
		write(b, filepath.Join(dir, "src/0", strconv.Itoa(i)+".go"), "package p // changed\n")
		write(b, filepath.Join(dir, "new", strconv.Itoa(i)+".go"), "package p // new\n")
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := snapshot.Take(context.Background(), dir, "T-1", int64(i+1), snapshot.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
