package proc

// Watch answers whether one process (an Identity) still runs, for a caller
// that asks again and again — the heartbeat loop asks every tick whether
// its agent lives. On Linux it holds a pidfd of the process (Linux 5.3 and
// later): a pidfd refers to that process, never to another that reuses
// its pid, and polling it costs one system call where Identity.Alive
// opens, reads and parses /proc/PID/stat. Elsewhere, or when no pidfd can
// be had, it asks Identity.Alive. A process once seen gone stays gone.
type Watch struct {
	id   Identity
	fd   int // the pidfd; -1 when there is none
	dead bool
	exitState
}

// NewWatch starts watching id. It never fails: a process already gone is
// reported gone, and without a pidfd the watch reads /proc each time.
func NewWatch(id Identity) *Watch {
	w := &Watch{id: id, fd: -1}
	if id.PID <= 0 {
		w.dead = true
		return w
	}
	w.fd = openPidfd(id.PID)
	// The pidfd names whatever process has the pid now: checked against
	// the identity after the open, it is id's or id is gone.
	if !id.Alive() {
		w.Close()
		w.dead = true
	}
	return w
}

// Alive reports whether the watched process still runs (a zombie does
// not).
func (w *Watch) Alive() bool {
	if w.dead {
		return false
	}
	if w.fd < 0 {
		w.dead = !w.id.Alive()
		return !w.dead
	}
	exited, err := pidfdExited(w.fd)
	if err != nil {
		// Something is wrong with the descriptor: ask /proc from now on.
		w.Close()
		return w.Alive()
	}
	if exited {
		w.Close()
		w.dead = true
	}
	return !w.dead
}

// Identity is the watched process.
func (w *Watch) Identity() Identity { return w.id }

// Close releases the pidfd (Alive then reads /proc) and stops Exited's
// wait.
func (w *Watch) Close() {
	if w.fd >= 0 {
		closeFD(w.fd)
		w.fd = -1
	}
	w.closeExit()
}
