package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNoGyrum reports that the gyrum binary could not be found.
var ErrNoGyrum = errors.New("gyrum binary not found")

// FindGyrum returns the gyrum binary to run: explicit when not empty (it
// must exist and be executable), else a "gyrum" next to the running
// executable, else the first one on PATH. The error says how to build it.
func FindGyrum(explicit string) (string, error) {
	if explicit != "" {
		p, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("--gyrum %s: %w", explicit, err)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("--gyrum %s: %w", explicit, err)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		p := filepath.Join(filepath.Dir(self), "gyrum")
		if executable(p) == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("gyrum"); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("%w next to this executable nor on PATH: build the binaries with 'go build -o bin/ ./cmd/...' and run bin/warpsim, or pass --gyrum PATH", ErrNoGyrum)
}

// checkGyrum runs `gyrum --help` and checks it names the commands the
// simulator uses, so a wrong binary fails before anything starts.
func checkGyrum(p string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("start-work")) || !bytes.Contains(out, []byte("touch-activity")) {
		return fmt.Errorf("%w: %s --help does not list start-work and touch-activity (err %v): build it with 'go build -o bin/ ./cmd/...'", ErrNoGyrum, p, err)
	}
	return nil
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// childEnv is the environment of every process the simulator starts: the
// simulator's own, without anything that would point a child at a real
// server, a real GYRUM_HOME or a real agent, plus extra.
func childEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "WARP_URL", k == "WARP_TOKEN", k == "CLAUDE_PID", k == "CLAUDE_CONFIG_DIR",
			strings.HasPrefix(k, "GYRUM_"), strings.HasPrefix(k, "HEARTBEAT_"):
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// secs renders a duration as the decimal seconds the *_SECS variables take.
func secs(seconds float64) string { return strconv.FormatFloat(seconds, 'f', -1, 64) }
