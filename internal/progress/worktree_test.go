package progress_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/progress"
)

// repo makes a real git repository with files and one commit.
func repo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "start")
	return dir
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
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

// A state is new when the work changed the tree: an edit, a second edit
// of the same file, a new file, a rename, a commit. Undoing an edit comes
// back to a state seen before, and an ignored build file is no change.
func TestStatesTellProgress(t *testing.T) {
	dir := repo(t, map[string]string{"main.go": "package main\n", ".gitignore": "build/\n", "docs/a b.md": "x\n"})
	w := progress.Worktree{Dir: dir}
	tr := progress.NewTracker()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	step := func(what string, wantNew bool) {
		t.Helper()
		now = now.Add(time.Minute)
		s, err := w.State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.Observe(s, now); got != wantNew {
			t.Fatalf("%s: new state %v, want %v", what, got, wantNew)
		}
	}
	step("the start", true)
	step("nothing done", false)
	write(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() {}\n")
	step("an edit", true)
	write(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println() }\n")
	step("a second edit of the same file", true)
	write(t, filepath.Join(dir, "build", "out.bin"), "binary")
	step("an ignored build file", false)
	write(t, filepath.Join(dir, "new_test.go"), "package main\n")
	step("a new file", true)
	git(t, dir, "mv", "docs/a b.md", "docs/c d.md")
	step("a rename of a file with spaces", true)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "work")
	step("a commit", true)
	write(t, filepath.Join(dir, "main.go"), "package main\n")
	step("an edit after the commit", true)
	git(t, dir, "checkout", "-q", "--", "main.go")
	step("the edit undone", false)
	if !tr.Last().Equal(now.Add(-time.Minute)) {
		t.Fatalf("last progress %v, want the edit after the commit (%v)", tr.Last(), now.Add(-time.Minute))
	}
}

// Reading a state writes nothing in the repository and runs nothing a
// repository's config names: no index.lock, no index refresh, no
// fsmonitor hook.
func TestStateChangesNothing(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	git(t, dir, "config", "core.fsmonitor", "touch "+marker+"; false")
	write(t, filepath.Join(dir, "a.txt"), "b\n")
	index := filepath.Join(dir, ".git", "index")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(index, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := (progress.Worktree{Dir: dir}).State(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(index); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the index was rewritten (mtime %v, want %v): %v", fi.ModTime(), old, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the repository's fsmonitor command ran")
	}
}

// A directory that is not a git worktree has no state: ErrNotGit.
func TestNotAWorktree(t *testing.T) {
	_, err := (progress.Worktree{Dir: t.TempDir()}).State(context.Background())
	if !errors.Is(err, progress.ErrNotGit) {
		t.Fatalf("State of a plain directory: %v, want ErrNotGit", err)
	}
}

// The tracker forgets its oldest states past its bound, not its newest.
func TestTrackerIsBounded(t *testing.T) {
	tr := progress.NewTracker()
	now := time.Now()
	var first progress.State
	first[0] = 1
	tr.Observe(first, now)
	nth := func(i int) (s progress.State) {
		s[1], s[2], s[3] = byte(i), byte(i>>8), 2
		return s
	}
	for i := range 5000 {
		tr.Observe(nth(i), now)
	}
	if !tr.Observe(first, now) {
		t.Fatal("the first state is still remembered after 5000 others")
	}
	if tr.Observe(nth(4999), now) {
		t.Fatal("the latest state was forgotten")
	}
}

// What a tick's progress check costs on a worktree of 10,000 files with a
// few edits: the ask's figure (docs/BENCHMARKS.md).
func BenchmarkState10kFiles(b *testing.B) {
	files := map[string]string{}
	for i := range 10000 {
		files[fmt.Sprintf("pkg%03d/file%05d.go", i%100, i)] = fmt.Sprintf("package p\n\nconst X%d = %d\n", i, i)
	}
	dir := repo(b, files)
	// The index written in the same second as the files leaves every
	// entry "racily clean": with no optional locks git cannot refresh it,
	// and would compare all 10,000 files' content each time (280 ms). An
	// agent's tree is past that once any git command of its own ran a
	// second later, as here.
	time.Sleep(1100 * time.Millisecond)
	git(b, dir, "update-index", "-q", "--refresh")
	for i := range 5 {
		write(b, filepath.Join(dir, fmt.Sprintf("pkg%03d/file%05d.go", i, i)), "package p // edited\n")
	}
	write(b, filepath.Join(dir, "NEW.md"), "new\n")
	w := progress.Worktree{Dir: dir}
	if _, err := w.State(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := w.State(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
