package gyrumcli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// excludeCount counts the .gyrum/ lines of the repository's info/exclude
// as git resolves it from dir.
func excludeCount(t *testing.T, dir string) int {
	t.Helper()
	p := gitOut(t, dir, "rev-parse", "--git-path", "info/exclude")
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("info/exclude: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if l == ".gyrum/" {
			n++
		}
	}
	return n
}

func assertClean(t *testing.T, dir string) {
	t.Helper()
	if st := gitOut(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status in %s is not clean:\n%s", dir, st)
	}
}

func TestStartWorkExcludesGyrumDir(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t)
	// A repository whose info/ is gone (some clones have none): created.
	os.RemoveAll(filepath.Join(repo, ".git", "info"))
	_, watched := agent(t, "sleep", "1000")
	pid := strconv.Itoa(watched.PID)
	e.ws.Create("T-x1")
	e.startResult(e.gyrum(repo, "", "start-work", "T-x1", "--watch-pid", pid, "--json"))
	if n := excludeCount(t, repo); n != 1 {
		t.Fatalf(".gyrum/ in info/exclude %d times, want 1", n)
	}
	assertClean(t, repo)
	if r := e.gyrum(repo, "", "release"); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	// A second start: the line is not added again.
	e.ws.Create("T-x2")
	e.startResult(e.gyrum(repo, "", "start-work", "T-x2", "--watch-pid", pid, "--json"))
	if n := excludeCount(t, repo); n != 1 {
		t.Errorf("after a second start-work: .gyrum/ %d times, want 1", n)
	}
	assertClean(t, repo)
	e.gyrum(repo, "", "release")

	// A --dir below the top level is covered by the same line.
	sub := filepath.Join(repo, "svc", "api")
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "main.go"), []byte("package main\n"), 0o644)
	gitOut(t, repo, "add", ".")
	gitOut(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "svc")
	e.ws.Create("T-x3")
	e.startResult(e.gyrum(repo, "", "start-work", "T-x3", "--dir", sub, "--watch-pid", pid, "--json"))
	assertClean(t, repo)
	if n := excludeCount(t, repo); n != 1 {
		t.Errorf("after start-work in a subdirectory: .gyrum/ %d times, want 1", n)
	}
	e.gyrum(sub, "", "release")
}

func TestStartWorkExcludesInLinkedWorktrees(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t)
	_, watched := agent(t, "sleep", "1000")
	pid := strconv.Itoa(watched.PID)
	// start-work --worktree makes the linked worktree itself.
	root := t.TempDir()
	e.vars["GYRUM_WORKTREE_ROOT"] = root
	e.ws.Create("T-w1")
	sr := e.startResult(e.gyrum(repo, "", "start-work", "T-w1", "--worktree", "--watch-pid", pid, "--json"))
	assertClean(t, sr.Dir)
	assertClean(t, repo)
	if n := excludeCount(t, sr.Dir); n != 1 {
		t.Errorf("worktree: .gyrum/ %d times in %s, want 1", n, gitOut(t, sr.Dir, "rev-parse", "--git-path", "info/exclude"))
	}
	// A worktree added by hand, then start-work --dir in it: the same
	// (shared) exclude file, still one line.
	wt := filepath.Join(t.TempDir(), "by-hand")
	gitOut(t, repo, "worktree", "add", "-q", "-b", "by-hand", wt)
	e.ws.Create("T-w2")
	e.startResult(e.gyrum(wt, "", "start-work", "T-w2", "--watch-pid", pid, "--json"))
	assertClean(t, wt)
	if n := excludeCount(t, wt); n != 1 {
		t.Errorf("hand-made worktree: .gyrum/ %d times, want 1", n)
	}
	e.gyrum(wt, "", "release")
	e.gyrum(sr.Dir, "", "release")
}

func TestStartWorkOutsideGitLeavesNoExclude(t *testing.T) {
	e := newEnv(t)
	dir := mkdir(t)
	_, watched := agent(t, "sleep", "1000")
	e.ws.Create("T-ng")
	r := e.gyrum(dir, "", "start-work", "T-ng", "--watch-pid", strconv.Itoa(watched.PID), "--json")
	e.startResult(r)
	if strings.Contains(r.stderr, "exclude") {
		t.Errorf("outside git, start-work talks about exclude: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		t.Error("start-work created .git")
	}
	e.gyrum(dir, "", "release")
}
