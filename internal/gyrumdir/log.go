package gyrumdir

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultLogMax is the size at which heartbeat.log rotates.
const DefaultLogMax = 256 << 10

// Log is an append-only file that never grows past its limit: a write that
// would cross it first renames the file to path+".1" (replacing the older
// one) and starts a new one, so the log takes at most twice the limit on
// disk. Safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
}

// OpenLog opens (creating, 0600) the log at path with limit max bytes
// (DefaultLogMax when max <= 0).
func OpenLog(path string, max int64) (*Log, error) {
	if max <= 0 {
		max = DefaultLogMax
	}
	l := &Log{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// OpenLog opens the loop's log, heartbeat.log, in d.
func (d Dir) OpenLog(max int64) (*Log, error) { return OpenLog(d.file(LogFile), max) }

func (l *Log) open() error {
	f, err := openFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, FilePerm)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past the
// limit. A single write larger than the limit is cut to it.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	n := len(p)
	if int64(len(p)) > l.max {
		p = p[:l.max]
	}
	if l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	m, err := l.f.Write(p)
	l.size += int64(m)
	if err != nil {
		return m, err
	}
	return n, nil
}

func (l *Log) rotate() error {
	_ = l.f.Close()
	l.f = nil
	if err := os.Rename(l.path, l.path+".1"); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("rotate log: %w", err)
	}
	afterRotateRename()
	// Whatever appeared at the path since the rename (a checkout can put a
	// symbolic link or a FIFO there) is refused, as at the first open.
	f, err := openFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, FilePerm)
	if err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	l.f, l.size = f, 0
	return nil
}

// afterRotateRename runs between a rotation's rename and its open; tests
// put something at the path there.
var afterRotateRename = func() {}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// LogTail returns at most the last max bytes of the worktree's
// heartbeat.log, read as every file of .gyrum/ is: not through a symlink,
// and only from a regular file (a repository can commit .gyrum/).
func (d Dir) LogTail(max int64) ([]byte, error) {
	path := d.file(LogFile)
	fd, st, err := openStat(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := min(st.Size, max)
	b := make([]byte, n)
	got, err := preadFull(fd, path, b, st.Size-n)
	return b[:got], err
}
