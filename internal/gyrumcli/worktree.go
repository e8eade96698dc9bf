package gyrumcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BranchPrefix starts the branch start-work --worktree creates: gyrum/<ticket>.
const BranchPrefix = "gyrum/"

// worktreePlan is where start-work --worktree puts a ticket's worktree.
type worktreePlan struct {
	Repo   string // top level of the repository the worktree is added to
	Path   string // the new worktree
	Branch string
}

// planWorktree computes the worktree of ticket for the repository holding
// from: directory <root>/<repo>-<ticket> on branch gyrum/<ticket>, where
// root is GYRUM_WORKTREE_ROOT, else the repository's parent directory (a
// sibling of the checkout).
func (a *App) planWorktree(ctx context.Context, from, ticket string) (worktreePlan, error) {
	top, err := git(ctx, from, "rev-parse", "--show-toplevel")
	if err != nil {
		return worktreePlan{}, usageErrorf("--worktree needs a git repository: %v", err)
	}
	root := a.getenv("GYRUM_WORKTREE_ROOT")
	if root == "" {
		root = filepath.Dir(top)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return worktreePlan{}, err
	}
	return worktreePlan{Repo: top, Path: filepath.Join(root, filepath.Base(top)+"-"+ticket), Branch: BranchPrefix + ticket}, nil
}

// addWorktree runs git worktree add for p: a new branch from HEAD, or the
// existing branch of that name (a ticket claimed again).
func addWorktree(ctx context.Context, p worktreePlan) error {
	if _, err := os.Lstat(p.Path); err == nil {
		return fmt.Errorf("worktree directory %s already exists: remove it or use --dir %s", p.Path, p.Path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p.Path), err)
	}
	if _, err := git(ctx, p.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+p.Branch); err == nil {
		_, err := git(ctx, p.Repo, "worktree", "add", p.Path, p.Branch)
		return err
	}
	_, err := git(ctx, p.Repo, "worktree", "add", "-b", p.Branch, p.Path)
	return err
}

// removeWorktree undoes addWorktree after a failed start-work. The branch
// stays: it may hold commits of an earlier claim.
func removeWorktree(ctx context.Context, p worktreePlan) error {
	_, err := git(ctx, p.Repo, "worktree", "remove", "--force", p.Path)
	return err
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}
