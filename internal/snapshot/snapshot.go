// Package snapshot saves the state of an attempt's worktree when its lease
// ends or its agent is gone (issue 45): tracked files and untracked files
// that are not ignored, as a commit object whose parent is HEAD, under
// refs/gyrum/<ticket>/<attempt> — without touching the worktree, its
// index, HEAD or any branch, and without running the repository's hooks.
//
// The state is staged in a temporary index file (a copy of the
// worktree's, so unchanged files are not hashed again): git add -A,
// write-tree, commit-tree with HEAD as parent; update-ref then creates the
// ref only when it does not exist, so a later snapshot of the same attempt
// (a lapsed agent that kept working) never replaces the first. A clean
// worktree records HEAD itself.
//
// Restore makes a new worktree's files those of a snapshot, the branch at
// its base commit: the old attempt's uncommitted work comes back as
// uncommitted changes.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/gitcmd"
)

// Result is one snapshot as reported to warp (client.Snapshot).
type Result struct {
	State  string // "saved", "gone"
	Commit string
	Ref    string
	Base   string // HEAD when taken; "" for an unborn branch
	Branch string // the branch checked out; "" when detached
	Remote string // the remote's URL; "" without one
	Pushed bool
	Detail string // why the push failed, a remark
	// Existed: the ref was there already (an earlier snapshot of the same
	// attempt): Commit is that one's, and nothing was written.
	Existed bool
}

// States of Result, as warp names them.
const (
	StateSaved = "saved"
	StateGone  = "gone"
)

// ErrNotRepo reports a directory that is not in a git work tree.
var ErrNotRepo = errors.New("not a git work tree")

// Ref is the ref of attempt epoch's snapshot of ticket.
func Ref(ticket string, epoch int64) string { return fmt.Sprintf("refs/gyrum/%s/%d", ticket, epoch) }

// Options tune Take.
type Options struct {
	// Push, when set, also pushes the ref to the worktree's remote, within
	// PushTimeout (default 20 s); a failure is only noted in Detail.
	Push        bool
	PushTimeout time.Duration
}

// Take saves worktree's state as the snapshot of attempt epoch of ticket.
// A worktree that no longer exists is StateGone (not an error).
func Take(ctx context.Context, worktree, ticket string, epoch int64, o Options) (Result, error) {
	ref := Ref(ticket, epoch)
	if _, err := os.Stat(worktree); errors.Is(err, fs.ErrNotExist) {
		return Result{State: StateGone, Detail: "the worktree " + worktree + " is gone"}, nil
	}
	top, err := Git(ctx, worktree, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		if _, serr := os.Stat(worktree); errors.Is(serr, fs.ErrNotExist) {
			return Result{State: StateGone, Detail: "the worktree " + worktree + " is gone"}, nil
		}
		return Result{}, fmt.Errorf("%w: %s: %v", ErrNotRepo, worktree, err)
	}
	r := Result{State: StateSaved, Ref: ref}
	r.Base, _ = Git(ctx, top, nil, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	r.Branch, _ = Git(ctx, top, nil, "symbolic-ref", "-q", "--short", "HEAD")
	r.Remote = remoteURL(ctx, top, r.Branch)
	if old, err := Git(ctx, top, nil, "rev-parse", "-q", "--verify", ref+"^{commit}"); err == nil {
		r.Commit, r.Existed = old, true
		return r, nil
	}
	commit, err := commitState(ctx, top, ticket, epoch, r.Base)
	if err != nil {
		return Result{}, err
	}
	// "" as the old value: create only. A second snapshot of the attempt
	// loses here, and the first stays.
	if _, err := Git(ctx, top, nil, "update-ref", "-m", "gyrum snapshot", ref, commit, ""); err != nil {
		if old, rerr := Git(ctx, top, nil, "rev-parse", "-q", "--verify", ref+"^{commit}"); rerr == nil {
			r.Commit, r.Existed = old, true
			return r, nil
		}
		return Result{}, err
	}
	r.Commit = commit
	if o.Push && r.Remote != "" {
		timeout := o.PushTimeout
		if timeout <= 0 {
			timeout = 20 * time.Second
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := Git(pctx, top, []string{"GIT_TERMINAL_PROMPT=0", "GIT_SSH_COMMAND=ssh -o BatchMode=yes"}, "push", "--quiet", "--no-verify", r.Remote, ref+":"+ref)
		cancel()
		if err != nil {
			r.Detail = "push failed: " + err.Error()
		} else {
			r.Pushed = true
		}
	}
	return r, nil
}

// commitState stages top's tracked and untracked, not ignored files in a
// temporary index and returns the commit of that tree on base (base
// itself when the tree is base's: a clean worktree).
func commitState(ctx context.Context, top, ticket string, epoch int64, base string) (string, error) {
	tmp, err := os.CreateTemp("", "gyrum-snapshot-index-*")
	if err != nil {
		return "", fmt.Errorf("snapshot: temporary index: %w", err)
	}
	idx := tmp.Name()
	defer os.Remove(idx)
	// A copy of the worktree's index: its stat data spares hashing the
	// files that did not change. Without one, start from HEAD's tree.
	copied := false
	if p, err := Git(ctx, top, nil, "rev-parse", "--path-format=absolute", "--git-path", "index"); err == nil {
		if src, err := os.Open(p); err == nil {
			_, cerr := io.Copy(tmp, src)
			src.Close()
			copied = cerr == nil
		}
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("snapshot: temporary index: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + idx}
	if !copied {
		_ = os.Remove(idx) // git wants no file rather than an empty one
		if base != "" {
			if _, err := Git(ctx, top, env, "read-tree", base); err != nil {
				return "", err
			}
		}
	}
	if _, err := Git(ctx, top, env, "add", "-A", "--", "."); err != nil {
		return "", err
	}
	tree, err := Git(ctx, top, env, "write-tree")
	if err != nil {
		return "", err
	}
	if base != "" {
		if baseTree, err := Git(ctx, top, nil, "rev-parse", base+"^{tree}"); err == nil && baseTree == tree {
			return base, nil
		}
	}
	args := []string{"commit-tree", "--no-gpg-sign", tree, "-m", fmt.Sprintf("gyrum snapshot of %s attempt %d", ticket, epoch)}
	if base != "" {
		args = append(args, "-p", base)
	}
	return Git(ctx, top, []string{"GIT_AUTHOR_NAME=gyrum", "GIT_AUTHOR_EMAIL=gyrum@localhost",
		"GIT_COMMITTER_NAME=gyrum", "GIT_COMMITTER_EMAIL=gyrum@localhost"}, args...)
}

// remoteURL is the URL of the remote branch tracks, else origin's, else
// the first remote's; "" without remotes.
func remoteURL(ctx context.Context, top, branch string) string {
	var names []string
	if branch != "" {
		if r, err := Git(ctx, top, nil, "config", "--get", "branch."+branch+".remote"); err == nil && r != "." {
			names = append(names, r)
		}
	}
	names = append(names, "origin")
	if all, err := Git(ctx, top, nil, "remote"); err == nil && all != "" {
		names = append(names, strings.Fields(all)[0])
	}
	for _, n := range names {
		if u, err := Git(ctx, top, nil, "remote", "get-url", n); err == nil && u != "" {
			return u
		}
	}
	return ""
}

// Fetch brings ref from remote into the repository of dir (same ref
// name), within ctx.
func Fetch(ctx context.Context, dir, remote, ref string) error {
	_, err := Git(ctx, dir, []string{"GIT_TERMINAL_PROMPT=0", "GIT_SSH_COMMAND=ssh -o BatchMode=yes"}, "fetch", "--quiet", "--no-tags", remote, "+"+ref+":"+ref)
	return err
}

// Has reports whether the repository of dir holds commit.
func Has(ctx context.Context, dir, commit string) bool {
	_, err := Git(ctx, dir, nil, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// Restore makes the worktree dir (a fresh checkout of the snapshot's
// base) hold commit's files: changed and new files are written, files the
// snapshot lacks are removed, and nothing is staged or committed — the
// old attempt's uncommitted work is uncommitted here too.
func Restore(ctx context.Context, dir, commit string) error {
	_, err := Git(ctx, dir, nil, "restore", "--source="+commit, "--worktree", "--", ".")
	return err
}

// Git runs git in dir with the repository's hooks and fsmonitor off, a
// clean GIT_* environment plus env, and returns its trimmed output.
func Git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return gitcmd.Run(ctx, dir, gitcmd.Options{Quiet: true, Env: env}, args...)
}
