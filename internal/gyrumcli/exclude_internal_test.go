package gyrumcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The info/exclude start-work appends to is never reached through a
// symlink (a planted one would have it write into the file it names) and
// never a FIFO (which would hang it); a plain one gets the line once.
func TestExcludeGyrumRefusesLinksAndFIFOs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	exclude := filepath.Join(repo, ".git", "info", "exclude")
	ctx := context.Background()
	os.Remove(exclude)
	if _, added, err := excludeGyrum(ctx, repo); err != nil || !added {
		t.Fatalf("plain: added %v, %v", added, err)
	}
	if _, added, err := excludeGyrum(ctx, repo); err != nil || added {
		t.Fatalf("again: added %v, %v; want nothing added", added, err)
	}
	if data, _ := os.ReadFile(exclude); strings.Count(string(data), excludeLine) != 1 {
		t.Fatalf("exclude: %q", data)
	}

	victim := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(victim, []byte("keep me\n"), 0o600)
	os.Remove(exclude)
	os.Symlink(victim, exclude)
	if _, added, err := excludeGyrum(ctx, repo); err == nil || added {
		t.Errorf("through a symlink: added %v, %v; want an error", added, err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep me\n" {
		t.Errorf("the link's target was written: %q", data)
	}

	os.Remove(exclude)
	if err := syscall.Mkfifo(exclude, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := excludeGyrum(ctx, repo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO: no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("excludeGyrum hangs on a FIFO")
	}
}
