package gyrumdir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrStartLocked reports that another start-work is setting up the same
// directory.
var ErrStartLocked = errors.New("another gyrum start-work is setting up this directory")

// StartLockPath is the lock file start-work holds for dir while it sets
// dir up: $GYRUM_HOME/locks/start-<hash of dir>.lock, outside the worktree
// (nothing to clean there, nothing a checkout can put in the way) and
// outside the registry directory (the watchdog reads every file there).
func StartLockPath(home, dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return filepath.Join(home, "locks", "start-"+hex.EncodeToString(sum[:8])+".lock")
}

// LockStart takes the start lock of dir without waiting (flock, released
// by the returned function or when the process ends, however it ends).
// Two start-works in one directory would otherwise both pass the check for
// an existing lease, both claim, and the loser's undo would clear the
// winner's files. ErrStartLocked when another holds it.
func LockStart(home, dir string) (unlock func(), err error) {
	path := StartLockPath(home, dir)
	if err := os.MkdirAll(filepath.Dir(path), DirPerm); err != nil {
		return nil, fmt.Errorf("start lock: %w", err)
	}
	fd, err := openRaw(path, os.O_RDWR|os.O_CREATE, FilePerm)
	if err != nil {
		return nil, fmt.Errorf("start lock: %w", err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrStartLocked
		}
		return nil, fmt.Errorf("start lock %s: %w", path, err)
	}
	done := false
	return func() {
		if !done {
			done = true
			unix.Close(fd)
		}
	}, nil
}
