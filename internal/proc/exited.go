package proc

import (
	"os"
	"sync"
)

// Exited returns a channel that is closed when the watched process exits,
// so a caller can act on the exit at once instead of at its next poll of
// Alive. It waits in the runtime's poller, on a pidfd (Linux 5.3 and
// later) or a kqueue (macOS), not in a thread of its own. The channel is
// nil — it never fires — when neither can be had: the caller then learns
// of the exit from Alive, on its own schedule. Close stops the wait (the
// channel then stays open). A process already gone when the watch began
// gives a closed channel. Exited returns the same channel every time.
func (w *Watch) Exited() <-chan struct{} {
	w.exitOnce.Do(func() {
		if w.dead {
			w.exited = make(chan struct{})
			close(w.exited)
			return
		}
		f, check, err := exitNotifier(w.id.PID)
		if err != nil {
			return // nil: never fires
		}
		w.exited = make(chan struct{})
		w.exitFile = f
		go waitReadable(f, check, w.exited)
	})
	return w.exited
}

// waitReadable closes done once check, called on f's descriptor whenever
// the poller finds it readable, reports the exit; it returns without
// closing done when f is closed first.
func waitReadable(f *os.File, check func(fd int) bool, done chan struct{}) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	gone := false
	err = rc.Read(func(fd uintptr) bool {
		gone = check(int(fd))
		return gone
	})
	if err == nil && gone {
		close(done)
	}
}

// exitState is what Exited keeps in a Watch.
type exitState struct {
	exitOnce sync.Once
	exited   chan struct{}
	exitFile *os.File // the pidfd or kqueue the poller waits on
}

// closeExit stops Exited's wait.
func (s *exitState) closeExit() {
	if s.exitFile != nil {
		s.exitFile.Close()
		s.exitFile = nil
	}
}
