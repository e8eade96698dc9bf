package gyrumdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Prepared is the set of worktrees whose .gyrum/ a start-work on this
// host prepared and whose lease is not over: $GYRUM_HOME/worktrees/<hash>,
// each file holding the worktree's path. The hook writes only into those
// (or into the worktrees of its agent's index entries, which start-work
// wrote too): a .gyrum/lease.json a repository commits is not one.
type Prepared struct {
	dir string
}

// NewPrepared returns the set under home ($GYRUM_HOME): home/worktrees.
func NewPrepared(home string) Prepared { return Prepared{dir: filepath.Join(home, "worktrees")} }

// Home returns the $GYRUM_HOME the set lives in.
func (p Prepared) Home() string { return filepath.Dir(p.dir) }

func (p Prepared) path(worktree string) string { return filepath.Join(p.dir, linkName(worktree)) }

// Add records worktree (absolute) as prepared, under the path given and,
// when it goes through a symlink, under its real path too: start-work
// names the directory as the shell does ($PWD, links kept), an agent's
// payload as the kernel does (Claude Code's cwd is the real path), and Has
// stays one read either way.
func (p Prepared) Add(worktree string) error {
	if !filepath.IsAbs(worktree) {
		return fmt.Errorf("prepared add: %q is not absolute", worktree)
	}
	if err := os.MkdirAll(p.dir, DirPerm); err != nil {
		return fmt.Errorf("prepared add: %w", err)
	}
	for _, w := range pathForms(worktree) {
		if err := WriteFileAtomic(p.path(w), []byte(w+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// Remove forgets worktree by whatever path it was recorded (SamePath: a
// release run from the real path forgets the entry of a start-work run
// through a link); a missing entry is not an error.
func (p Prepared) Remove(worktree string) error {
	var errs []error
	rm := func(f string) {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("prepared remove: %w", err))
		}
	}
	for _, w := range pathForms(worktree) {
		rm(p.path(w))
	}
	names, _ := readDirNames(p.dir)
	for _, name := range names {
		if strings.HasPrefix(name, ".") {
			continue // a concurrent Add's temp file
		}
		f := filepath.Join(p.dir, name)
		if data, err := readSmall(f, 4096+1); err == nil && SamePath(strings.TrimSuffix(string(data), "\n"), worktree) {
			rm(f)
		}
	}
	return errors.Join(errs...)
}

// SamePath reports whether a and b name the same directory: the same
// string, or the same real path once symlinks are resolved (start-work
// may have recorded a worktree by a path through a link, and a later
// command, or an agent, name it by its real path).
func SamePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err := filepath.EvalSymlinks(a)
	if err != nil {
		return false
	}
	rb, err := filepath.EvalSymlinks(b)
	return err == nil && ra == rb
}

// isRealPath reports whether path is its own real path (no symlink on
// the way); false when it cannot be resolved.
func isRealPath(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && real == path
}

// pathForms returns path and, when it differs, its real path (symlinks
// resolved); path alone when that cannot be resolved (gone already).
func pathForms(path string) []string {
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		return []string{path, real}
	}
	return []string{path}
}

// Has reports whether worktree was prepared (one small read). A worktree
// whose lease a gyrum from before this record claimed counts too while its
// loop runs: heartbeat.pid names a live loop registered in
// $GYRUM_HOME/run for this very worktree (a repository can commit a pid
// file, not a registry entry).
func (p Prepared) Has(worktree string) bool {
	data, err := readSmall(p.path(worktree), 4096+1)
	if err == nil && strings.TrimSuffix(string(data), "\n") == worktree {
		return true
	}
	d, err := At(worktree)
	if err != nil {
		return false
	}
	id, err := d.ReadPID(LoopPIDFile)
	if err != nil {
		return false
	}
	e, err := NewRegistry(p.Home()).Read(id.PID)
	return err == nil && SamePath(e.Dir, worktree) && e.Identity() == id && id.Alive()
}

// List returns the recorded worktrees, each once (the forms Add records
// of one worktree count as one); entries that cannot be read are skipped.
func (p Prepared) List() ([]string, error) {
	names, err := readDirNames(p.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prepared: %w", err)
	}
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, ".") {
			continue // a concurrent Add's temp file
		}
		data, err := readSmall(filepath.Join(p.dir, name), 4096+1)
		if err != nil {
			continue
		}
		w := strings.TrimSuffix(string(data), "\n")
		if !filepath.IsAbs(w) {
			continue // Add writes absolute paths only
		}
		dup := -1
		for i, o := range out {
			if SamePath(o, w) {
				dup = i
			}
		}
		switch {
		case dup < 0:
			out = append(out, w)
		case isRealPath(out[dup]) && !isRealPath(w):
			// Of a worktree's two forms, the one start-work was given (the
			// registry's and the user's), not the real path Add added.
			out[dup] = w
		}
	}
	return out, nil
}

// Prune forgets the worktrees whose lease.json is gone (released,
// completed, deleted) and returns how many.
func (p Prepared) Prune() (int, error) {
	names, err := readDirNames(p.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("prepared: %w", err)
	}
	n := 0
	var errs []error
	for _, name := range names {
		if strings.HasPrefix(name, ".") {
			continue // a concurrent Add's temp file
		}
		f := filepath.Join(p.dir, name)
		data, err := readSmall(f, 4096+1)
		if err == nil {
			if d, derr := At(strings.TrimSuffix(string(data), "\n")); derr == nil && d.HasLease() {
				continue
			}
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
