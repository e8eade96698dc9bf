package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/gyrum-labs/warp/internal/warp"
)

// fileIdent is a file's identity: its device and inode.
type fileIdent struct{ dev, ino uint64 }

func statIdent(path string) (fileIdent, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileIdent{}, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}, fmt.Errorf("stat %s: no file identity", path)
	}
	return fileIdent{dev: uint64(sys.Dev), ino: uint64(sys.Ino)}, nil
}

// checkFile refuses every write once the database's path no longer names
// the file warp opened: deleted (rm warp.db*) or replaced (another
// database renamed over it). SQLite would go on writing into the open,
// unlinked file and acknowledge what a restart then cannot find; warp
// instead stops serving writes (503 unavailable, /readyz not ready) and
// logs why once. It costs one stat per write transaction.
func (db *DB) checkFile() error {
	if db.lost.Load() {
		return db.lostErr()
	}
	id, err := statIdent(db.path)
	switch {
	case err == nil && id == db.ident:
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("check database file %s: %w: %w", db.path, warp.ErrUnavailable, err)
	}
	if db.lost.CompareAndSwap(false, true) {
		how := "replaced by another file"
		if err != nil {
			how = "deleted"
		}
		db.log.Error("the database file was "+how+" under warp: refusing every write (nothing is acknowledged into a file that is gone); "+
			"restore the file and restart warp, or restart warp to start a new database", "path", db.path)
	}
	return db.lostErr()
}

func (db *DB) lostErr() error {
	return fmt.Errorf("database file %s was deleted or replaced under warp; restore it and restart warp: %w", db.path, warp.ErrUnavailable)
}
