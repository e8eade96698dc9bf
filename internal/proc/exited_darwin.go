package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exitNotifier returns a kqueue that reports pid's exit (EVFILT_PROC,
// NOTE_EXIT) as a file the runtime poller waits on (a kqueue is readable
// while it holds an event), and how to tell from it that the process
// exited.
func exitNotifier(pid int) (*os.File, func(fd int) bool, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, nil, err
	}
	ev := []unix.Kevent_t{{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}}
	if _, err := unix.Kevent(kq, ev, nil, nil); err != nil {
		unix.Close(kq)
		if errors.Is(err, unix.ESRCH) {
			// Already gone: a kqueue that says so at once is not to be
			// had, so report it through a descriptor that is readable.
			return goneFile()
		}
		return nil, nil, err
	}
	unix.SetNonblock(kq, true)
	check := func(fd int) bool {
		out := make([]unix.Kevent_t, 1)
		n, err := unix.Kevent(fd, nil, out, &unix.Timespec{})
		return n > 0 || err != nil && !errors.Is(err, unix.EINTR)
	}
	return os.NewFile(uintptr(kq), "kqueue"), check, nil
}

// goneFile is a pipe whose write end is closed: readable (EOF) at once.
func goneFile() (*os.File, func(int) bool, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	w.Close()
	return r, func(int) bool { return true }, nil
}
