//go:build !(linux && (amd64 || arm64))

package quiet

import "golang.org/x/sys/unix"

const raw = false

// Open is unix.Open.
func Open(path string, flags int, perm uint32) (int, error) {
	return retry(func() (int, error) { return unix.Open(path, flags, perm) })
}

// Read is unix.Read; a failed read returns 0 bytes.
func Read(fd int, b []byte) (int, error) {
	return retry(func() (int, error) {
		n, err := unix.Read(fd, b)
		return max(n, 0), err
	})
}

// Write is unix.Write; a failed write returns 0 bytes.
func Write(fd int, b []byte) (int, error) {
	return retry(func() (int, error) {
		n, err := unix.Write(fd, b)
		return max(n, 0), err
	})
}

// Pwrite is unix.Pwrite.
func Pwrite(fd int, b []byte, off int64) (int, error) {
	return retry(func() (int, error) {
		n, err := unix.Pwrite(fd, b, off)
		return max(n, 0), err
	})
}

// Pread is unix.Pread; a failed read returns 0 bytes.
func Pread(fd int, b []byte, off int64) (int, error) {
	return retry(func() (int, error) {
		n, err := unix.Pread(fd, b, off)
		return max(n, 0), err
	})
}

// PollNow is unix.Poll of fd for events with a zero timeout: the events
// that are ready (0 for none).
func PollNow(fd int, events int16) (int16, error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	_, err := retry(func() (int, error) { return unix.Poll(pfd, 0) })
	return pfd[0].Revents, err
}

// Close is unix.Close.
func Close(fd int) error { return unix.Close(fd) }

// Fstat is unix.Fstat.
func Fstat(fd int, st *unix.Stat_t) error { return unix.Fstat(fd, st) }

// Fstatat is unix.Fstatat.
func Fstatat(dirfd int, path string, st *unix.Stat_t, flags int) error {
	_, err := retry(func() (int, error) { return 0, unix.Fstatat(dirfd, path, st, flags) })
	return err
}

// Fchmod is unix.Fchmod.
func Fchmod(fd int, mode uint32) error { return unix.Fchmod(fd, mode) }

// Ftruncate is unix.Ftruncate.
func Ftruncate(fd int, size int64) error {
	_, err := retry(func() (int, error) { return 0, unix.Ftruncate(fd, size) })
	return err
}

// Flock is unix.Flock.
func Flock(fd, how int) error { return unix.Flock(fd, how) }
