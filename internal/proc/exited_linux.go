package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// exitNotifier returns a non-blocking pidfd of pid as a file the runtime
// poller waits on, and how to tell from it that the process exited.
func exitNotifier(pid int) (*os.File, func(fd int) bool, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	check := func(fd int) bool {
		exited, err := pidfdExited(fd)
		return exited || err != nil
	}
	return os.NewFile(uintptr(fd), "pidfd"), check, nil
}
