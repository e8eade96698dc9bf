package gyrumdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Markers of the hook's own question to warp (see AskWarp in package hook):
// empty files whose times are what they say, so that setting them needs no
// free block (a full disk is one reason to ask).
const (
	// AskedFile's mtime is when a hook last asked warp about the lease.
	AskedFile = "warp-asked"
	// ToldFile, newer than lease.json, says that the agent was told the
	// lease ended: no hook asks about that lease again.
	ToldFile = "lease-told"
)

// AskEvery is how often, at most, the hooks of a worktree ask warp.
const AskEvery = time.Minute

// silentAfter is how far past its next tick a loop's state may be before
// the loop counts as silent: a tick's work and a slow disk fit in it.
const silentAfter = time.Minute

// LoopSilent reports whether the worktree's heartbeat loop has stopped
// telling the agent anything: no heartbeat.pid naming a live process, or a
// heartbeat.state whose next tick is more than a minute past (its writes
// fail — a full disk — or it is wedged). A loop that has its pid file and
// rewrote its state within the last minute is not silent: two stats.
func (d Dir) LoopSilent(now time.Time) bool {
	if _, err := os.Lstat(d.file(LoopPIDFile)); err != nil {
		return true // every exit removes it
	}
	if fi, err := os.Lstat(d.file(StateFile)); err == nil && now.Sub(fi.ModTime()) < silentAfter {
		return false
	}
	id, err := d.ReadPID(LoopPIDFile)
	if err != nil || !id.Alive() {
		return true
	}
	st, err := d.ReadState()
	return err == nil && !st.NextTickAt.IsZero() && now.Sub(st.NextTickAt) > silentAfter
}

// ShouldAsk reports whether a hook may ask warp about the lease now, and
// if so records that it does: not when the agent was told of this lease's
// end already (ToldFile newer than lease.json), nor within AskEvery of the
// previous question.
func (d Dir) ShouldAsk(now time.Time) bool {
	lease, err := os.Stat(d.file(LeaseFile))
	if err != nil {
		return false
	}
	if told, err := os.Lstat(d.file(ToldFile)); err == nil && !told.ModTime().Before(lease.ModTime()) {
		return false
	}
	if asked, err := os.Lstat(d.file(AskedFile)); err == nil {
		if at := asked.ModTime(); now.Sub(at) < AskEvery && !at.After(now) {
			return false
		}
	}
	// A marker that cannot be set is no reason to keep the agent untold:
	// the question is bounded by its timeout.
	_ = d.touchMarker(AskedFile, now)
	return true
}

// MarkTold records that the agent was told the lease lease.json names has
// ended.
func (d Dir) MarkTold(now time.Time) error { return d.touchMarker(ToldFile, now) }

// touchMarker sets the times of the empty marker name to at, creating it
// when missing; a symbolic link there is not followed.
func (d Dir) touchMarker(name string, at time.Time) error {
	p := d.file(name)
	ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(at.UnixNano())}
	err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		var fd int
		if fd, err = unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(FilePerm)); err == nil {
			unix.Close(fd)
			err = unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	if err != nil {
		return &fs.PathError{Op: "touch", Path: p, Err: err}
	}
	return nil
}

// FreeBytes is the space an unprivileged user may still write on the file
// system of path.
func FreeBytes(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// DiskFull is the free space below which a file system counts as full:
// the files the loop writes are a few KiB each, and a file system rounds
// writes up to its blocks.
const DiskFull = 1 << 20

// WriteTrouble says why the loop of the worktree cannot be trusted to
// write what it must (its state, a lease-ended notice, a restored
// lease.json), "" when nothing says so: the worktree's file system is
// full, or the live loop's state has not moved for more than a minute past
// its next tick (its writes fail, or it is wedged).
func (d Dir) WriteTrouble(now time.Time) string {
	if free, err := FreeBytes(d.Path); err == nil && free < DiskFull {
		return fmt.Sprintf("disk full: %d KiB free on the file system of %s: the loop cannot write its state or a lease-ended notice (the hook then asks warp itself, once a minute)", free>>10, d.Path)
	}
	id, err := d.ReadPID(LoopPIDFile)
	if err != nil || !id.Alive() {
		return ""
	}
	st, err := d.ReadState()
	if err != nil || st.NextTickAt.IsZero() || now.Sub(st.NextTickAt) <= silentAfter {
		return ""
	}
	return fmt.Sprintf("the loop's state has not moved since %s (its next tick was due %s ago): its writes fail or it is wedged",
		st.UpdatedAt.UTC().Format(time.RFC3339), now.Sub(st.NextTickAt).Round(time.Second))
}

// LeaseEndTold reports whether the agent was told that the lease
// lease.json names has ended (ToldFile newer than lease.json): its calls
// no longer concern that lease.
func (d Dir) LeaseEndTold() bool {
	lease, err := os.Stat(d.file(LeaseFile))
	if err != nil {
		return false
	}
	told, err := os.Lstat(d.file(ToldFile))
	return err == nil && !told.ModTime().Before(lease.ModTime())
}
