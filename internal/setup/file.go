package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// fileEdit is a planned change of one file: New replaces Old (Existed false:
// the file is created). With Remove the file is deleted instead.
type fileEdit struct {
	Path    string
	Old     []byte
	New     []byte
	Existed bool
	Remove  bool
	Perm    fs.FileMode // of a created file
	Backup  bool        // back the old content up before replacing it
}

// MaxConfigFile bounds a settings or unit file setup and doctor read.
const MaxConfigFile = 16 << 20

// ReadConfig reads an agent's settings file (or another file setup edits)
// as setup and doctor do: a symlink is followed (dotfile managers link
// settings.json), but only a regular file of at most MaxConfigFile bytes
// is read. A project's .claude/ is the repository's: a settings.json that
// links to /dev/zero or is a FIFO must not exhaust memory or hang.
func ReadConfig(path string) ([]byte, error) {
	notRegular := func(st fs.FileInfo) error {
		if st.Mode().IsRegular() {
			return nil
		}
		if st.Mode()&fs.ModeCharDevice != 0 {
			if t, err := os.Readlink(path); err == nil && t == os.DevNull {
				// systemctl mask links a unit to /dev/null.
				return &fs.PathError{Op: "read", Path: path, Err: errors.New("a link to /dev/null (a masked systemd unit: systemctl --user unmask it first)")}
			}
		}
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	}
	// Looked at before it is opened: opening some devices acts (a
	// watchdog device arms), and a link may name one.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := notRegular(st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := notRegular(st); err != nil { // replaced since the first look
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigFile+1))
	if err == nil && len(data) > MaxConfigFile {
		err = &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("larger than %d bytes", MaxConfigFile)}
	}
	return data, err
}

// readFile returns the content of path, existed false when it is missing.
func readFile(path string) (data []byte, existed bool, err error) {
	data, err = ReadConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// apply carries the edit out: backup (when asked and there is something to
// back up), then an atomic replacement. It returns the backup path, if any.
func (e fileEdit) apply(now time.Time) (backup string, err error) {
	if e.Remove {
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", nil
	}
	// The plan was made from e.Old; a program that saved the file since
	// (the agent itself, while setup probed the schedulers) would lose its
	// change to the rename, and the backup would not hold it either.
	cur, existed, err := readFile(e.Path)
	if err != nil {
		return "", fmt.Errorf("read %s again: %w", e.Path, err)
	}
	if existed != e.Existed || !bytes.Equal(cur, e.Old) {
		return "", fmt.Errorf("%s changed while gyrum setup ran (another program saved it): it was left as it is; run gyrum setup again", e.Path)
	}
	if e.Backup && e.Existed && len(e.Old) > 0 {
		backup, err = writeBackup(e.Path, e.Old, now)
		if err != nil {
			return "", err
		}
	}
	if err := writeAtomic(e.Path, e.New, e.Perm); err != nil {
		return backup, err
	}
	return backup, nil
}

// writeBackup copies old (the current content of path) to
// path.bak-YYYYMMDDTHHMMSSZ, with a -N suffix when that name is taken, and
// the same permissions as path.
func writeBackup(path string, old []byte, now time.Time) (string, error) {
	perm := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	base := path + ".bak-" + now.UTC().Format("20060102T150405Z")
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		_, werr := f.Write(old)
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("back up %s: too many backups named %s*", path, base)
}

// writeAtomic replaces path with data through a temporary file in the same
// directory, fsynced and renamed over it, so a reader (or a crash) sees the
// old file or the new one, never a half-written one. An existing file keeps
// its permissions; a symlink is followed, so a dotfiles link stays a link.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: makes the rename durable
		d.Close()
	}
	return nil
}
