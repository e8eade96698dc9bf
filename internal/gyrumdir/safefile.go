package gyrumdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
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
	fd, _, err := openStat(path, flag, perm)
	return fd, err
}

// openStat is openRaw, also returning the file's status.
func openStat(path string, flag int, perm fs.FileMode) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := ignoringEINTR(func() (int, error) {
		return unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENXIO) {
			// ELOOP (EMLINK on some BSDs): a symlink; ENXIO: a FIFO opened
			// for writing with no reader.
			return -1, st, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: not a regular file (%v)", ErrUnsafe, err)}
		}
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a %s is not a regular file", ErrUnsafe, kind(uint32(st.Mode)))}
	}
	return fd, st, nil
}

// ignoringEINTR calls f until it returns anything but EINTR, as package
// os does for its own calls: a signal can interrupt a call on a network or
// FUSE file system.
func ignoringEINTR[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !errors.Is(err, unix.EINTR) {
			return v, err
		}
	}
}

// pread is unix.Pread again after EINTR; a failed read returns 0 bytes.
func pread(fd int, b []byte, off int64) (int, error) {
	return ignoringEINTR(func() (int, error) {
		n, err := unix.Pread(fd, b, off)
		return max(n, 0), err
	})
}

// preadFull reads len(b) bytes of fd from offset off, fewer at the end of
// the file.
func preadFull(fd int, path string, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := pread(fd, b[n:], off+int64(n))
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// kind names the file type of a stat mode.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
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

// OpenRegular is how gyrum opens a file a repository may have planted,
// also outside .gyrum/ (the repository's info/exclude): not through a
// symlink in its last component, without blocking on a FIFO, and only a
// regular file (else an error wrapping ErrUnsafe).
func OpenRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openFile(path, flag, perm)
}

// ReadRegular reads such a file (OpenRegular's rules), at most limit
// bytes: a larger one is an error wrapping ErrCorrupt.
func ReadRegular(path string, limit int64) ([]byte, error) { return readSmall(path, limit) }

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
		n, err = ignoringEINTR(func() (int, error) {
			if off >= 0 {
				return unix.Pwrite(fd, data, off)
			}
			return unix.Write(fd, data)
		})
		n = max(n, 0)
		if off >= 0 {
			off += int64(n)
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
	st, err := lstat(path)
	if err != nil {
		return err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%w: %s is not a directory (a %s)", ErrUnsafe, path, kind(uint32(st.Mode)))
	}
	if int(st.Uid) != euid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user", ErrUnsafe, path, st.Uid)
	}
	return nil
}

// readDirNoFollow lists the directory path, never through a symbolic link
// in its last component (checkDir looked at the path first; this closes
// the window between the look and the open).
func readDirNoFollow(path string) ([]fs.DirEntry, error) {
	fd, err := ignoringEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	return f.ReadDir(-1)
}

// lstat is os.Lstat's system call without an fs.FileInfo (the loop stats
// its files every tick): the status of path itself, never of a symbolic
// link's target.
func lstat(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	_, err := ignoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Lstat(path, &st) })
	if err != nil {
		return st, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st, nil
}

// modTime is the modification time of st.
func modTime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }

// lstatTime returns the mtime of path itself (a symlink's own, never its
// target's).
func lstatTime(path string) (time.Time, error) {
	st, err := lstat(path)
	if err != nil {
		return time.Time{}, err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return time.Time{}, &fs.PathError{Op: "stat", Path: path, Err: fmt.Errorf("%w: not a regular file", ErrUnsafe)}
	}
	return modTime(&st), nil
}
