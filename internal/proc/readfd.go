package proc

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// ErrTooLarge reports a file longer than ReadFD's limit.
var ErrTooLarge = errors.New("file too large")

// ReadFD reads fd to its end with plain system calls (no *os.File:
// wrapping a descriptor costs an fcntl and a refused poller registration,
// and the heartbeat loop reads several small files every tick). It reads
// at most limit bytes, more is ErrTooLarge; a negative limit reads
// everything. path names fd in errors.
func ReadFD(fd int, path string, limit int64) ([]byte, error) {
	size := 512
	if limit >= 0 {
		size = int(min(limit+1, 4096))
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if limit >= 0 {
			end = min(end, int(limit+1))
		}
		n, err := read(fd, buf[len(buf):end])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if limit >= 0 && int64(len(buf)) > limit {
			return nil, &fs.PathError{Op: "read", Path: path, Err: ErrTooLarge}
		}
	}
}

// read is unix.Read again after EINTR, as package os reads (a signal can
// interrupt a read on a network or FUSE file system); a failed read
// returns 0 bytes.
func read(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Read(fd, b)
		if !errors.Is(err, unix.EINTR) {
			return max(n, 0), err
		}
	}
}
