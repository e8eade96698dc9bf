package gyrumcli

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// withInheritedFDsClosed runs start (which starts a child process) with
// every descriptor above 2 marked close-on-exec, then restores the marks.
// Go opens its own descriptors close-on-exec, but the ones gyrum inherited
// from its caller — `exec 3>&1; gyrum start-work … | cat` — are not: a
// detached loop would hold the caller's pipe open for as long as it lives.
func withInheritedFDsClosed(start func() error) error {
	fds := openFDs()
	var restore []int
	for _, fd := range fds {
		if fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		syscall.CloseOnExec(fd)
		restore = append(restore, fd)
	}
	err := start()
	for _, fd := range restore {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
	}
	return err
}

// openFDs lists this process's open descriptors (/proc/self/fd on Linux,
// /dev/fd on macOS).
func openFDs() []int {
	dir := "/proc/self/fd"
	if _, err := os.Stat(dir); err != nil {
		dir = "/dev/fd"
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	fds := make([]int, 0, len(names))
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}
