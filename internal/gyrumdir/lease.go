package gyrumdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/ticketid"
)

// maxSmallFile bounds every JSON and pid file gyrum reads back.
const maxSmallFile = 64 << 10

// Lease is the content of lease.json: which lease this worktree holds and
// where its warp server is.
type Lease struct {
	Ticket    string    `json:"ticket"`
	Epoch     int64     `json:"epoch"`
	WarpURL   string    `json:"warp_url"`
	Agent     string    `json:"agent"`
	Host      string    `json:"host"`
	ClaimedAt time.Time `json:"claimed_at"`
	// LeaseSecret proves to warp that this worktree holds the lease (the
	// claim's answer; empty from a server that binds leases to tokens only).
	// lease.json is 0600 for it.
	LeaseSecret string `json:"lease_secret,omitempty"`
	// Watched names the agent process start-work watches (its name) and
	// how it was chosen (start-work's watched_how: CLAUDE_PID, ancestor,
	// caller, parent, ...), for gyrum status and doctor; empty from a
	// gyrum before 2026-12-07.
	Watched    string `json:"watched,omitempty"`
	WatchedHow string `json:"watched_how,omitempty"`
	// SnapshotPush: when the lease ends, the snapshot of the worktree is
	// also pushed to its remote (GYRUM_SNAPSHOT_PUSH at start-work), so a
	// claimant on another host can fetch it.
	SnapshotPush bool `json:"snapshot_push,omitempty"`
	// HeldUntil is the lease's deadline on this host's clock as start-work
	// saw it: when it sent the claim, plus the claim's expires_at less its
	// claimed_at (both the server's clock). The loop retries before it
	// while warp has not answered yet; zero from a gyrum before
	// 2026-12-08.
	HeldUntil time.Time `json:"held_until,omitzero"`
}

// Validate reports an ErrCorrupt error for a lease that cannot be used.
func (l Lease) Validate() error {
	switch {
	case !ticketid.Valid(l.Ticket):
		return fmt.Errorf("%w: ticket %q is not a valid ticket id", ErrCorrupt, l.Ticket)
	case l.Epoch <= 0:
		return fmt.Errorf("%w: epoch %d is not positive", ErrCorrupt, l.Epoch)
	}
	u, err := url.Parse(l.WarpURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: warp_url %q is not an http(s) URL", ErrCorrupt, l.WarpURL)
	}
	return nil
}

// WriteLease validates l and writes lease.json atomically.
func (d Dir) WriteLease(l Lease) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("write lease: %w", err)
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lease: %w", err)
	}
	return WriteFileAtomic(d.file(LeaseFile), append(data, '\n'))
}

// ReadLease reads lease.json. A missing file wraps fs.ErrNotExist; content
// that is not a valid lease wraps ErrCorrupt.
func (d Dir) ReadLease() (Lease, error) {
	p := d.file(LeaseFile)
	data, err := readSmall(p, maxSmallFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Lease{}, fmt.Errorf("no lease in %s: %w", d.Worktree, err)
		}
		return Lease{}, err
	}
	var l Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return Lease{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	if err := l.Validate(); err != nil {
		return Lease{}, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}

// LeaseWatch reads lease.json as ReadLease does, but opens and decodes it
// again only when the file changed: the heartbeat loop reads it every
// tick, and opening, reading and decoding it was a seventh of a quiet
// tick (perf). The file counts as unchanged while its device, inode,
// size and modification and change times (nanoseconds) are: gyrum
// replaces lease.json by rename (a new inode), and an edit in place moves
// its times. (Where file times are coarse, a second edit of the same size
// within one clock tick of a read could go unseen until the next change;
// Linux 6.13 and later give a file whose times were read a fresh,
// fine-grained time at its next change.) Only a lease read whole is
// kept: a missing, unreadable or corrupt file is read again every time.
// A LeaseWatch is not safe for concurrent use.
type LeaseWatch struct {
	d    Dir
	read func() (Lease, error) // Dir.ReadLease; tests count the reads
	have bool
	key  fileKey
	l    Lease
}

// fileKey tells one version of a file from another.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func keyOf(st *unix.Stat_t) fileKey {
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// WatchLease returns a LeaseWatch of d's lease.json.
func (d Dir) WatchLease() *LeaseWatch { return &LeaseWatch{d: d, read: d.ReadLease} }

// Read returns lease.json's lease, with ReadLease's errors.
func (w *LeaseWatch) Read() (Lease, error) {
	st, err := lstat(w.d.file(LeaseFile))
	if err == nil && w.have && keyOf(&st) == w.key {
		return w.l, nil
	}
	w.have = false
	l, rerr := w.read()
	if rerr == nil && err == nil {
		// The key is the one seen before the read: should the file have
		// changed in between, the next Read sees another key and reads
		// it again.
		w.have, w.key, w.l = true, keyOf(&st), l
	}
	return l, rerr
}

// HasLease reports whether lease.json exists (whatever its content).
func (d Dir) HasLease() bool {
	_, err := lstat(d.file(LeaseFile))
	return err == nil
}

// RemoveLease removes lease.json; a missing file is not an error.
func (d Dir) RemoveLease() error {
	if err := os.Remove(d.file(LeaseFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove lease: %w", err)
	}
	return nil
}

// WritePID writes "PID STARTTIME" of id to the pid file name (LoopPIDFile
// or ParentPIDFile) atomically.
func (d Dir) WritePID(name string, id proc.Identity) error {
	if id.PID <= 0 {
		return fmt.Errorf("write %s: pid %d is not positive", name, id.PID)
	}
	return WriteFileAtomic(d.file(name), []byte(id.String()+"\n"))
}

// ReadPID reads the pid file name. Missing wraps fs.ErrNotExist, content
// that is not "PID STARTTIME" wraps ErrCorrupt (and proc.ErrCorruptIdentity).
func (d Dir) ReadPID(name string) (proc.Identity, error) {
	p := d.file(name)
	data, err := readSmall(p, 256)
	if err != nil {
		return proc.Identity{}, err
	}
	id, err := proc.ParseIdentity(string(data))
	if err != nil {
		return proc.Identity{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, p, err)
	}
	return id, nil
}

// RemovePIDIf removes the pid file name only while it still names id, so a
// loop that exits late never deletes the pid file of its successor. It
// reports whether it removed the file. A missing file is not an error.
func (d Dir) RemovePIDIf(name string, id proc.Identity) (bool, error) {
	cur, err := d.ReadPID(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil && cur != id {
		return false, nil
	}
	// A corrupt file is not anyone's: remove it too.
	if err := os.Remove(d.file(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	return true, nil
}
