package gyrumdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A symbolic link or a FIFO that appears at heartbeat.log between a
// rotation's rename and its open (a checkout the agent runs can put one
// there) is refused: the log never truncates the link's target, never
// waits for a FIFO's reader, and stops instead of writing elsewhere.
func TestLogRotationRefusesWhatAppearsAtThePath(t *testing.T) {
	for _, plant := range []struct {
		name string
		make func(path, victim string) error
	}{
		{"symlink", func(path, victim string) error { return os.Symlink(victim, path) }},
		{"fifo", func(path, _ string) error { return syscall.Mkfifo(path, 0o600) }},
	} {
		t.Run(plant.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, LogFile)
			l, err := OpenLog(path, 64)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.Write([]byte(strings.Repeat("a", 60))); err != nil {
				t.Fatal(err)
			}
			planted := false
			afterRotateRename = func() {
				if err := plant.make(path, victim); err != nil {
					t.Error(err)
				}
				planted = true
			}
			defer func() { afterRotateRename = func() {} }()
			_, err = l.Write([]byte(strings.Repeat("b", 30))) // past 64 bytes: rotates
			if !planted {
				t.Fatal("the write did not rotate the log")
			}
			if !errors.Is(err, ErrUnsafe) {
				t.Errorf("write after the plant: %v, want ErrUnsafe", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep me" {
				t.Errorf("the link's target holds %q", b)
			}
			if _, err := l.Write([]byte("c")); err == nil {
				t.Error("the log kept writing after a refused rotation")
			}
			if b, err := os.ReadFile(path + ".1"); err != nil || string(b) != strings.Repeat("a", 60) {
				t.Errorf("rotated log: %q, %v", b, err)
			}
		})
	}
}
