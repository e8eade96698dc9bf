package proc

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// openPidfd returns a pidfd of pid (close-on-exec), -1 when the kernel
// gives none (older than 5.3, a seccomp filter, no such process).
func openPidfd(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// pidfdExited reports whether the process of pidfd fd has exited (the
// pidfd is readable from then on).
func pidfdExited(fd int) (bool, error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(pfd, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return false, err
		}
	}
	ev := pfd[0].Revents
	if ev&(unix.POLLNVAL|unix.POLLERR) != 0 {
		return false, unix.EBADF
	}
	return ev&(unix.POLLIN|unix.POLLHUP) != 0, nil
}

func closeFD(fd int) { unix.Close(fd) }

// pidfdSignal sends sig to the process of pidfd fd.
func pidfdSignal(fd int, sig syscall.Signal) error { return unix.PidfdSendSignal(fd, sig, nil, 0) }
