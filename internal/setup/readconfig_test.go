package setup_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/setup"
)

// ReadConfig follows a link to a regular file (dotfile managers), and
// refuses at once what is not one, or is too large.
func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	os.WriteFile(real, []byte(`{"hooks":{}}`), 0o644)
	link := filepath.Join(dir, "settings.json")
	os.Symlink(real, link)
	if data, err := setup.ReadConfig(link); err != nil || string(data) != `{"hooks":{}}` {
		t.Errorf("through a link to a file: %q, %v", data, err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	os.Symlink("/dev/zero", zero)
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, setup.MaxConfigFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{fifo: "not a regular file", zero: "not a regular file", big: "larger than"} {
		done := make(chan error, 1)
		go func() { _, err := setup.ReadConfig(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", filepath.Base(p), err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadConfig hangs", filepath.Base(p))
		}
	}
}

// A masked unit (a link to /dev/null) is named as such.
func TestReadConfigMaskedUnit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gyrum-watchdog.service")
	if err := os.Symlink(os.DevNull, p); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.ReadConfig(p); err == nil || !strings.Contains(err.Error(), "masked") {
		t.Errorf("masked unit: %v", err)
	}
}
