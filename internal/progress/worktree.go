// Package progress tells work that gets somewhere from activity that does
// not (issue 44): a worktree state not seen before in a lease is progress,
// a state seen before (the same edit made and undone, a command run again
// on an unchanged tree) is not.
package progress

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// State is a worktree's state as Worktree.State reads it: HEAD, the
// status of every tracked and untracked-not-ignored file that differs
// from it, and the size and mtime of each of those files (a second edit
// of a file that was already modified changes those, not its status).
type State [sha256.Size]byte

// Worktree reads the states of one git worktree.
type Worktree struct {
	// Dir is the worktree.
	Dir string
	// Timeout bounds one read (git status on a large tree); 0: 10 s.
	Timeout time.Duration
}

// ErrNotGit says Dir is not in a git worktree (or git is missing): there
// is no worktree state to compare, and no progress to see from it.
var ErrNotGit = errors.New("not a git worktree")

// State reads the worktree's state. It runs `git status` so that it
// changes nothing: no optional locks (the agent's own git commands never
// find an index.lock of ours), no fsmonitor hook (a repository's config
// must not make the loop run a program of its choosing), no untracked
// cache writes.
func (w Worktree) State(ctx context.Context) (State, error) {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
		"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--ignore-submodules=dirty")
	cmd.Dir = w.Dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && bytes.Contains(stderr.Bytes(), []byte("not a git repository")) || errors.Is(err, exec.ErrNotFound) {
			return State{}, ErrNotGit
		}
		return State{}, fmt.Errorf("git status in %s: %w: %s", w.Dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	h := sha256.New()
	h.Write(out)
	for _, path := range changedPaths(out) {
		fi, err := os.Lstat(filepath.Join(w.Dir, path))
		if err != nil {
			h.Write([]byte("\x00gone\x00"))
			continue
		}
		h.Write([]byte("\x00" + strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)))
	}
	var s State
	h.Sum(s[:0])
	return s, nil
}

// changedPaths returns the paths of the entries of a `git status
// --porcelain=v2 -z` output: ordinary (1), renamed or copied (2, whose
// original path follows as its own field), unmerged (u) and untracked (?).
func changedPaths(out []byte) []string {
	var paths []string
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 2 {
			continue
		}
		var skip int // space-separated fields before the path
		switch f[0] {
		case '1':
			skip = 8
		case '2':
			skip = 9
		case 'u':
			skip = 10
		case '?':
			skip = 1
		default:
			continue // headers (# branch.*), ignored entries
		}
		if p := nthRest(f, skip); p != "" {
			paths = append(paths, p)
		}
		if f[0] == '2' {
			i++ // the original path
		}
	}
	return paths
}

// nthRest returns what follows the n-th space of f (paths may hold
// spaces), "" when f has fewer.
func nthRest(f []byte, n int) string {
	for range n {
		i := bytes.IndexByte(f, ' ')
		if i < 0 {
			return ""
		}
		f = f[i+1:]
	}
	return string(f)
}

// Tracker remembers the states a lease's worktree has been in.
type Tracker struct {
	seen map[State]bool
	// order bounds seen: the oldest state is forgotten past maxStates.
	order []State
	last  time.Time
}

// maxStates bounds what a Tracker remembers: a lease that visits more
// states than this is making progress anyway.
const maxStates = 4096

// NewTracker returns a Tracker that has seen nothing.
func NewTracker() *Tracker { return &Tracker{seen: map[State]bool{}} }

// Observe records s at now, and reports whether it is a state not seen
// before (progress); Last then returns now.
func (t *Tracker) Observe(s State, now time.Time) bool {
	if t.seen[s] {
		return false
	}
	t.seen[s] = true
	t.order = append(t.order, s)
	if len(t.order) > maxStates {
		delete(t.seen, t.order[0])
		t.order = t.order[1:]
	}
	t.last = now
	return true
}

// Last is when a state was last new; zero before any.
func (t *Tracker) Last() time.Time { return t.last }
