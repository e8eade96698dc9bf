package gitcmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/gitcmd"
)

// repo is a new repository with one commit and a pre-commit hook that
// refuses every commit.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
		{"commit", "-q", "--allow-empty", "-m", "first"}} {
		if _, err := gitcmd.Run(ctx, dir, gitcmd.Options{}, args...); err != nil {
			t.Fatal(err)
		}
	}
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho refused by the hook >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunAsTheUserRunsTheRepositorysHooks(t *testing.T) {
	dir := repo(t)
	_, err := gitcmd.Run(context.Background(), dir, gitcmd.Options{}, "commit", "-q", "--allow-empty", "-m", "second")
	if err == nil || !strings.Contains(err.Error(), "git commit -q --allow-empty -m second: ") || !strings.Contains(err.Error(), "refused by the hook") {
		t.Fatalf("commit with the hook: got %v, want the hook's refusal, naming the command", err)
	}
}

func TestRunQuietSkipsHooksAndForeignGitVariables(t *testing.T) {
	dir := repo(t)
	// A hook's environment points git at another repository: quiet work
	// must not follow it.
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "index"))
	ctx := context.Background()
	if _, err := gitcmd.Run(ctx, dir, gitcmd.Options{Quiet: true}, "commit", "-q", "--allow-empty", "-m", "second"); err != nil {
		t.Fatalf("quiet commit: %v", err)
	}
	out, err := gitcmd.Run(ctx, dir, gitcmd.Options{Quiet: true, Env: []string{"GIT_AUTHOR_NAME=other"}}, "log", "-1", "--format=%s")
	if err != nil || out != "second" {
		t.Fatalf("log: got %q, %v; want the trimmed subject", out, err)
	}
}
