package gyrumdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// readDirNoFollow lists every name of a directory (more than one
// getdents buffer holds), with its type, and refuses a symbolic link to a
// directory, a file and a missing path with an *fs.PathError.
func TestReadDirNoFollow(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 300 {
		name := "marker-" + strconv.Itoa(i) + "-" + filepath.Base(t.Name())
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	want = append(want, "sub")
	ents, err := readDirNoFollow(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
		if isDir := e.Name() == "sub"; e.Type().IsDir() != isDir || e.Type().IsRegular() == isDir {
			t.Errorf("%s has type %v", e.Name(), e.Type())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d names, want %d (first %v)", len(got), len(want), got[:min(3, len(got))])
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, filepath.Join(dir, want[0]), filepath.Join(dir, "missing")} {
		var pe *fs.PathError
		if _, err := readDirNoFollow(p); !errors.As(err, &pe) {
			t.Errorf("readDirNoFollow(%s): got %v, want an *fs.PathError", p, err)
		}
	}
}
