package gyrumdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnsafe reports a path gyrum refuses to use: a symbolic link, a FIFO,
// a device or anything but a regular file where a file belongs, or a
// .gyrum/ that is not a real directory of this user. A repository can
// commit any of them; none may make gyrum write outside .gyrum/ or hang.
var ErrUnsafe = errors.New("unsafe path")

// openFile opens path without following a symbolic link in its last
// component and without blocking (a FIFO opens at once instead of waiting
// for a writer), then checks that it is a regular file. flag and perm are
// os.OpenFile's.
func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENXIO) {
			// ELOOP (EMLINK on some BSDs): a symlink; ENXIO: a FIFO opened
			// for writing with no reader.
			return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: not a regular file (%v)", ErrUnsafe, err)}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s is not a regular file", ErrUnsafe, st.Mode().Type())}
	}
	return f, nil
}

// setTimes sets the access and modification time of path to t without
// following a symbolic link.
func setTimes(path string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "chtimes", Path: path, Err: err}
	}
	return nil
}

// checkDir reports whether path is a real directory (not a symbolic link)
// owned by this user: the only kind of .gyrum/ (and in-flight/) gyrum
// writes into.
func checkDir(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (%s)", ErrUnsafe, path, st.Mode().Type())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user", ErrUnsafe, path, sys.Uid)
	}
	return nil
}

// lstatTime returns the mtime of path itself (a symlink's own, never its
// target's).
func lstatTime(path string) (time.Time, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return time.Time{}, err
	}
	if !st.Mode().IsRegular() {
		return time.Time{}, &fs.PathError{Op: "stat", Path: path, Err: fmt.Errorf("%w: not a regular file", ErrUnsafe)}
	}
	return st.ModTime(), nil
}
