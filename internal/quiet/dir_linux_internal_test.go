package quiet

import (
	"encoding/binary"
	"slices"
	"testing"
)

// dirent64 builds one linux_dirent64 record of name, padded to 8 bytes.
func dirent64(name string, typ byte) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint16(b[16:18], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

// TestParseDirentsStopsAtGarbage holds the parser to the records it can
// trust: a record length shorter than a header, or past the buffer, ends
// the parse instead of reading out of bounds.
func TestParseDirentsStopsAtGarbage(t *testing.T) {
	good := append(append(dirent64(".", 4), dirent64("..", 4)...), dirent64("a-marker", 8)...)
	got := parseDirents(good, nil)
	if len(got) != 1 || got[0] != (Entry{Name: "a-marker", Type: 8}) {
		t.Fatalf("parse = %v", got)
	}
	for name, b := range map[string][]byte{
		"short reclen": func() []byte { b := dirent64("x", 8); binary.NativeEndian.PutUint16(b[16:18], 3); return b }(),
		"long reclen":  func() []byte { b := dirent64("x", 8); binary.NativeEndian.PutUint16(b[16:18], 4096); return b }(),
		"truncated":    dirent64("xyz", 8)[:12],
	} {
		if got := parseDirents(append(slices.Clone(good), b...), nil); len(got) != 1 {
			t.Errorf("%s: parse = %v, want the one good entry", name, got)
		}
	}
}
