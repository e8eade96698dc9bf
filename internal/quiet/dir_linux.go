package quiet

import (
	"encoding/binary"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Entry is one name of a directory, with its type as the directory
// records it (unix.DT_REG, unix.DT_DIR, ...; unix.DT_UNKNOWN when the file
// system does not say).
type Entry struct {
	Name string
	Type uint8
}

// ReadDir lists the directory path, never through a symbolic link in its
// last component, without "." and "..". Errors are *fs.PathError.
func ReadDir(path string) ([]Entry, error) {
	fd, err := Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer Close(fd)
	var out []Entry
	b := make([]byte, 4096)
	for {
		n, err := Getdents(fd, b)
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: path, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		out = parseDirents(b[:n], out)
	}
}

// parseDirents appends the entries of getdents64 records (struct
// linux_dirent64: inode, offset, record length, type, NUL-terminated name).
func parseDirents(b []byte, out []Entry) []Entry {
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			break
		}
		typ, name := b[18], b[nameOff:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if s := string(name); s != "." && s != ".." && s != "" {
			out = append(out, Entry{Name: s, Type: typ})
		}
		b = b[reclen:]
	}
	return out
}
