// Package quiet makes the system calls of a heartbeat loop's tick without
// telling the Go scheduler: on Linux (amd64, arm64) through
// syscall.RawSyscall, elsewhere through golang.org/x/sys/unix as usual.
//
// Why: the runtime's monitor thread (sysmon) sleeps while every P is idle,
// and the first system call made through the scheduler's entry
// (entersyscall) wakes it; it then polls every 20 µs for as long as the
// process keeps a P busy. A loop tick is a few dozen short calls — small
// file reads, a stat, one HTTP exchange on loopback — so every tick woke
// it into that fast mode: ~14 of the ~20 scheduler slices a tick cost,
// each ~50 µs of CPU on a paravirtualised host (docs/BENCHMARKS.md). A raw
// call leaves the monitor asleep; it wakes only for timers.
//
// The price is that a raw call keeps its P for its whole duration: no
// other goroutine runs on that P meanwhile. Only calls that return at once
// belong here — calls on local files, and socket calls on a descriptor in
// non-blocking mode. A connection from Dial waits for its socket by
// polling without the scheduler for a short slice (Slice), then blocks the
// usual way.
//
// Errors are syscall.Errno values, as golang.org/x/sys/unix returns them.
package quiet

import (
	"golang.org/x/sys/unix"
)

// Raw reports whether this build's calls bypass the scheduler (Linux on
// amd64 or arm64) or go through golang.org/x/sys/unix.
const Raw = raw

// Lstat is Fstatat of path without following a final symbolic link.
func Lstat(path string, st *unix.Stat_t) error {
	return Fstatat(unix.AT_FDCWD, path, st, unix.AT_SYMLINK_NOFOLLOW)
}

// retry calls f until it returns anything but EINTR.
func retry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}
