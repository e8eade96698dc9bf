// Package gyrumdir owns the agent side's files: the .gyrum/ directory of a
// worktree (lease.json, pid files, last-activity, in-flight markers, the
// wait declaration, the loop's state and its size-bounded log) and the
// host-wide registry of running loops under $GYRUM_HOME/run/.
//
// Layout (docs/DESIGN.md section 4): the directory is 0700, every file 0600, and
// every file other than the log and the activity signals is written
// atomically (temp file, fsync, rename, fsync of the directory), so a reader
// sees the old content or the new one, never a torn write. Every reader
// returns a clear error for a missing file (errors.Is(err, fs.ErrNotExist))
// and for corrupt content (errors.Is(err, ErrCorrupt)).
package gyrumdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Names inside a worktree.
const (
	// DirName is the directory in the worktree that holds everything below.
	DirName = ".gyrum"
	// LeaseFile holds the lease (Lease) as JSON.
	LeaseFile = "lease.json"
	// LoopPIDFile holds "PID STARTTIME" of the heartbeat loop.
	LoopPIDFile = "heartbeat.pid"
	// ParentPIDFile holds "PID STARTTIME" of the watched agent process.
	ParentPIDFile = "heartbeat.parent.pid"
	// ServerPIDFile holds "PID STARTTIME" of the app server that runs the
	// watched agent's tool calls (Codex's app-server daemon), when there
	// is one: its processes started since the agent did are the agent's.
	ServerPIDFile = "heartbeat.server.pid"
	// ActivityFile's mtime is the activity signal.
	ActivityFile = "last-activity"
	// InFlightDir holds one marker per running tool call.
	InFlightDir = "in-flight"
	// WaitFile holds the declaration of `gyrum wait` (Wait) as JSON.
	WaitFile = "wait.json"
	// TranscriptFile holds the path of the agent's session transcript, as
	// its first PreToolUse hook gave it (transcript_path).
	TranscriptFile = "transcript"
	// StateFile holds the loop's latest outcome (LoopState) as JSON.
	StateFile = "heartbeat.state"
	// LogFile is the loop's log; it rotates to LogFile+".1".
	LogFile = "heartbeat.log"
	// HandoffFile holds what the ticket's earlier attempts left
	// (internal/handoff.Handoff), written by start-work for the agent.
	HandoffFile = "handoff.json"
)

// oldStateSpare is the second copy of heartbeat.state that earlier gyrum
// versions kept and traded names with it; Clear removes one left behind.
const oldStateSpare = ".heartbeat.state.spare"

// Permissions of everything gyrum writes.
const (
	DirPerm  fs.FileMode = 0o700
	FilePerm fs.FileMode = 0o600
)

// ErrNoDir reports that no .gyrum/ directory was found.
var ErrNoDir = errors.New("no .gyrum directory")

// ErrCorrupt reports a file whose content cannot be used.
var ErrCorrupt = errors.New("corrupt file")

// Dir is the .gyrum/ directory of one worktree. The zero value is not
// usable: use At, Create, Open or Find.
type Dir struct {
	// Worktree is the absolute path of the directory holding .gyrum/.
	Worktree string
	// Path is Worktree/.gyrum.
	Path string
}

// At returns the Dir of worktree without touching the file system.
func At(worktree string) (Dir, error) {
	abs, err := filepath.Abs(worktree)
	if err != nil {
		return Dir{}, fmt.Errorf("resolve %s: %w", worktree, err)
	}
	return Dir{Worktree: abs, Path: filepath.Join(abs, DirName)}, nil
}

// Create makes worktree/.gyrum/ (0700) and its in-flight/ directory, and
// tightens their permissions when they already exist. The worktree itself
// must exist.
func Create(worktree string) (Dir, error) {
	d, err := At(worktree)
	if err != nil {
		return Dir{}, err
	}
	st, err := os.Stat(d.Worktree)
	if err != nil {
		return Dir{}, fmt.Errorf("worktree %s: %w", d.Worktree, err)
	}
	if !st.IsDir() {
		return Dir{}, fmt.Errorf("worktree %s is not a directory", d.Worktree)
	}
	for _, p := range []string{d.Path, d.file(InFlightDir)} {
		if err := os.Mkdir(p, DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return Dir{}, fmt.Errorf("create %s: %w", p, err)
		}
		// One that was there already may be anything a repository holds.
		if err := checkDir(p); err != nil {
			return Dir{}, fmt.Errorf("create %s: %w", p, err)
		}
		if err := os.Chmod(p, DirPerm); err != nil {
			return Dir{}, fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	return d, nil
}

// Open returns the Dir of worktree, which must hold a .gyrum/ directory
// (ErrNoDir otherwise).
func Open(worktree string) (Dir, error) {
	d, err := At(worktree)
	if err != nil {
		return Dir{}, err
	}
	if err := checkDir(d.Path); err != nil {
		if errors.Is(err, ErrUnsafe) {
			return Dir{}, err
		}
		return Dir{}, fmt.Errorf("%w in %s", ErrNoDir, d.Worktree)
	}
	return d, nil
}

// Find walks up from start to the file system root and returns the nearest
// .gyrum/ directory that belongs to a worktree: one holding lease.json or
// heartbeat.pid. Other .gyrum/ directories on the way — $GYRUM_HOME is
// ~/.gyrum by default — are passed over. ErrNoDir when there is none.
func Find(start string) (Dir, error) {
	abs, err := filepath.Abs(start)
	if err != nil {
		return Dir{}, fmt.Errorf("resolve %s: %w", start, err)
	}
	for cur := abs; ; {
		g := filepath.Join(cur, DirName)
		for _, name := range []string{LeaseFile, LoopPIDFile} {
			if _, err := os.Lstat(filepath.Join(g, name)); err == nil && checkDir(g) == nil {
				return Dir{Worktree: cur, Path: g}, nil
			}
		}
		up := filepath.Dir(cur)
		if up == cur {
			return Dir{}, fmt.Errorf("%w holding a lease in %s or any parent (none was claimed here, or it was released already)", ErrNoDir, abs)
		}
		cur = up
	}
}

func (d Dir) file(name string) string { return filepath.Join(d.Path, name) }

// File returns the path of name inside the .gyrum/ directory.
func (d Dir) File(name string) string { return d.file(name) }

// Clear removes the lease, the pid files, the in-flight markers, the wait
// declaration, the loop state, the activity file and the hook-event
// counter: what release and complete-pr leave behind is the directory and
// the log. Missing files are not an error.
func (d Dir) Clear() error {
	var errs []error
	for _, name := range []string{LeaseFile, LoopPIDFile, ParentPIDFile, ServerPIDFile, WaitFile, TranscriptFile, StateFile, oldStateSpare, ActivityFile, HookEventsFile, HookEventsOld, NoticeFile, NoteFile, HandoffFile, CallsFile, CallsOld, LoopToldFile, NudgeFile} {
		if err := os.Remove(d.file(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	var ents []fs.DirEntry
	err := checkDir(d.file(InFlightDir))
	if err == nil {
		// Never through a symlink: that would empty someone else's directory.
		ents, err = readDirNoFollow(d.file(InFlightDir))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(d.file(InFlightDir), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteFileAtomic writes data to path with FilePerm: temp file in the same
// directory, fsync, rename over path, fsync of the directory. Readers see
// the old content or the new one, also after a crash.
func WriteFileAtomic(path string, data []byte) error { return writeFile(path, data, true) }

// writeFile is WriteFileAtomic; without durable it skips both fsyncs: the
// rename still makes the write atomic for readers, but a crash may lose it
// (fine for the loop's informative state, rewritten every tick).
func writeFile(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(FilePerm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: sync: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if !durable {
		return nil
	}
	if df, err := os.Open(dir); err == nil {
		_ = df.Sync()
		_ = df.Close()
	}
	return nil
}

// readSmall reads a file of at most limit bytes; a larger one is corrupt.
func readSmall(path string, limit int64) ([]byte, error) {
	fd, err := openRaw(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readFD(fd, path, limit)
}
