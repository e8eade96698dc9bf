//go:build linux && !(amd64 || arm64)

package quiet

import "golang.org/x/sys/unix"

// Renameat2 is unix.Renameat2 between paths relative to the working directory.
func Renameat2(from, to string, flags uint) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, flags)
}

// Getdents is unix.Getdents.
func Getdents(fd int, b []byte) (int, error) {
	return retry(func() (int, error) {
		n, err := unix.Getdents(fd, b)
		return max(n, 0), err
	})
}
