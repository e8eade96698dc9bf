//go:build !linux

package quiet

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Entry is one name of a directory, with its type (unix.DT_REG,
// unix.DT_DIR, ...; unix.DT_UNKNOWN when unknown).
type Entry struct {
	Name string
	Type uint8
}

// ReadDir lists the directory path, never through a symbolic link in its
// last component. Errors are *fs.PathError.
func ReadDir(path string) ([]Entry, error) {
	var st unix.Stat_t
	if err := Lstat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		t := uint8(unix.DT_UNKNOWN)
		switch m := e.Type(); {
		case m.IsRegular():
			t = unix.DT_REG
		case m.IsDir():
			t = unix.DT_DIR
		case m&fs.ModeSymlink != 0:
			t = unix.DT_LNK
		}
		out = append(out, Entry{Name: e.Name(), Type: t})
	}
	return out, nil
}
