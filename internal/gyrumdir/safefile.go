package gyrumdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gyrum-labs/warp/internal/proc"
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
	fd, err := openRaw(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openRaw is openFile returning the descriptor itself, for a read that
// needs no *os.File: wrapping a non-blocking descriptor costs an fcntl and
// a refused epoll registration per open, and the loop reads several small
// files every tick.
func openRaw(path string, flag int, perm fs.FileMode) (int, error) {
	fd, err := unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENXIO) {
			// ELOOP (EMLINK on some BSDs): a symlink; ENXIO: a FIFO opened
			// for writing with no reader.
			return -1, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: not a regular file (%v)", ErrUnsafe, err)}
		}
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a %s is not a regular file", ErrUnsafe, kind(uint32(st.Mode)))}
	}
	return fd, nil
}

// kind names the file type of a stat mode.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	case unix.S_IFLNK:
		return "symbolic link"
	}
	return "special file"
}

// readFD reads fd to its end, at most limit bytes; more is corrupt.
func readFD(fd int, path string, limit int64) ([]byte, error) {
	data, err := proc.ReadFD(fd, path, limit)
	if errors.Is(err, proc.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, path, limit)
	}
	return data, err
}

// writeFull writes all of data to fd: at offset off (pwrite), or where the
// descriptor is (an O_APPEND one: at its end) when off is negative.
func writeFull(fd int, path string, data []byte, off int64) error {
	for len(data) > 0 {
		var n int
		var err error
		if off >= 0 {
			n, err = unix.Pwrite(fd, data, off)
			off += int64(max(n, 0))
		} else {
			n, err = unix.Write(fd, data)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
		if n == 0 {
			return &fs.PathError{Op: "write", Path: path, Err: io.ErrShortWrite}
		}
		data = data[n:]
	}
	return nil
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

// euid is this process's effective uid, asked once (the loop checks its
// directories every tick).
var euid = sync.OnceValue(os.Geteuid)

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
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != euid() {
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
