package gyrumcli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gitcmd"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// BranchPrefix starts the branch start-work --worktree creates: gyrum/<ticket>.
const BranchPrefix = "gyrum/"

// worktreePlan is where start-work --worktree puts a ticket's worktree.
type worktreePlan struct {
	Repo   string // top level of the repository the worktree is added to
	Path   string // the new worktree
	Branch string
	// Start is the commit a new branch starts from; HEAD when empty.
	Start string
}

// worktreeRepo returns the top level of the repository holding from, a
// usage error when there is none: start-work asks before it claims.
func worktreeRepo(ctx context.Context, from string) (string, error) {
	top, err := git(ctx, from, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", clikit.Usagef("--worktree needs a git repository: %v", err)
	}
	return top, nil
}

// planWorktree computes the worktree of ticket for the repository whose
// top level is top (worktreeRepo): directory <root>/<repo>-<ticket> on
// branch gyrum/<ticket>, where root is GYRUM_WORKTREE_ROOT, else the
// repository's parent directory (a sibling of the checkout).
func (a *App) planWorktree(top, ticket string) (worktreePlan, error) {
	root := a.getenv("GYRUM_WORKTREE_ROOT")
	if root == "" {
		root = filepath.Dir(top)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return worktreePlan{}, err
	}
	return worktreePlan{Repo: top, Path: filepath.Join(root, filepath.Base(top)+"-"+ticket), Branch: BranchPrefix + ticket}, nil
}

// addWorktree runs git worktree add for p: a new branch from HEAD, or the
// existing branch of that name (a ticket claimed again).
func addWorktree(ctx context.Context, p worktreePlan) error {
	if _, err := os.Lstat(p.Path); err == nil {
		return fmt.Errorf("worktree directory %s already exists: remove it or use --dir %s", p.Path, shellquote.Quote(p.Path))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p.Path), err)
	}
	args := []string{"worktree", "add", "-b", p.Branch, p.Path}
	if p.Start != "" {
		args = append(args, p.Start)
	}
	if _, err := git(ctx, p.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+p.Branch); err == nil {
		args = []string{"worktree", "add", p.Path, p.Branch}
	}
	if _, err := git(ctx, p.Repo, args...); err != nil {
		// git may have made and registered the worktree before it failed
		// (killed when start-work was interrupted): the path was free
		// above, so what is there now is this attempt's.
		_ = removeWorktree(context.Background(), p)
		_ = os.RemoveAll(p.Path)
		return err
	}
	return nil
}

// removeWorktree undoes addWorktree after a failed start-work. The branch
// stays: it may hold commits of an earlier claim. --force twice: a
// `git worktree add` that was killed (start-work interrupted) leaves the
// new worktree locked ("initializing"), which one --force does not remove;
// addWorktree made the directory, so nothing else is in it.
func removeWorktree(ctx context.Context, p worktreePlan) error {
	_, err := git(ctx, p.Repo, "worktree", "remove", "--force", "--force", p.Path)
	return err
}

// git runs git in dir as the user would (the repository's hooks run).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitcmd.Run(ctx, dir, gitcmd.Options{}, args...)
}

// maxExclude bounds the info/exclude start-work reads (gyrumdir's rules:
// no symlink, regular files only, so a planted link or FIFO can neither
// redirect the append nor hang it).
const maxExclude = 1 << 20

// excludeLine is what start-work adds to the repository's info/exclude:
// .gyrum/ at any depth, so a --dir below the top level is covered too.
const excludeLine = gyrumdir.DirName + "/"

// trackedGyrum returns the files under dir's .gyrum/ that the repository
// holding dir tracks (at most a few, for the message); none outside a git
// work tree or without git. A repository can commit .gyrum/: its lease.json
// would then carry this lease's secret into the next commit, and its other
// files would speak for an agent that never wrote them.
func trackedGyrum(ctx context.Context, dir string) ([]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, nil
	}
	if in, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil || in != "true" {
		return nil, nil
	}
	// Any case: on a case-insensitive file system (macOS's default) a
	// tracked .Gyrum/ is the directory gyrum writes into.
	out, err := git(ctx, dir, "ls-files", "--", ":(icase)"+gyrumdir.DirName)
	if err != nil || out == "" {
		return nil, err
	}
	files := strings.Split(out, "\n")
	if len(files) > 3 {
		files = append(files[:3], "...")
	}
	return files, nil
}

// excludeGyrum adds .gyrum/ to the info/exclude of the repository holding
// dir, once, so agents never commit lease files. It does nothing outside a
// git work tree (or without git). The file comes from git rev-parse
// --git-path, so linked worktrees and submodules get the file git reads for
// them; it and its directory are created when missing. It returns the file
// and whether the line was added.
func excludeGyrum(ctx context.Context, dir string) (string, bool, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", false, nil
	}
	if in, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil || in != "true" {
		return "", false, nil
	}
	p, err := git(ctx, dir, "rev-parse", "--git-path", "info/exclude")
	if err != nil {
		return "", false, err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	data, err := gyrumdir.ReadRegular(p, maxExclude)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p, false, fmt.Errorf("read %s: %w", p, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == excludeLine {
			return p, false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return p, false, fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	var add []byte
	if len(data) > 0 && data[len(data)-1] != '\n' {
		add = append(add, '\n')
	}
	add = append(add, "# gyrum start-work: lease files and loop state\n"+excludeLine+"\n"...)
	f, err := gyrumdir.OpenRegular(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return p, false, fmt.Errorf("open %s: %w", p, err)
	}
	_, werr := f.Write(add)
	if err := errors.Join(werr, f.Close()); err != nil {
		return p, false, fmt.Errorf("write %s: %w", p, err)
	}
	return p, true, nil
}
