package agenttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// CLI describes one agent CLI the tests drive: where its pinned install
// is, and how to read its version.
type CLI struct {
	// Title names it in messages ("Claude Code").
	Title string
	// Binary is its executable's name on PATH ("claude").
	Binary string
	// Version is the version the tests were measured on (its install
	// script pins it).
	Version string
	// EnvBinary names the variable that points the tests at a binary
	// ("GYRUM_TEST_CLAUDE").
	EnvBinary string
	// Cache is where its install script puts the binary, relative to the
	// module root; Install is that script (".ci/install-claude").
	Cache, Install string
	// VersionOf turns the output of `BINARY --version` into the version;
	// nil takes its last line.
	VersionOf func(out string) string
	// VersionEnv is added to the environment of `--version` (a CLI that
	// wants a writable HOME, say).
	VersionEnv []string

	once    sync.Once
	version string
}

// Find returns the binary to test: $EnvBinary; else <module root>/Cache
// (what Install installs); else Binary on PATH. The error says what was
// tried.
func (c *CLI) Find() (string, error) {
	if p := os.Getenv(c.EnvBinary); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%s=%s is not an executable file", c.EnvBinary, p)
	}
	var tried []string
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, c.Cache)
		if isExecutable(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if p, err := exec.LookPath(c.Binary); err == nil {
		return p, nil
	}
	tried = append(tried, c.Binary+" on PATH")
	return "", fmt.Errorf("no %s CLI: %s is unset and there is no %s (run %s)",
		c.Title, c.EnvBinary, strings.Join(tried, " nor "), c.Install)
}

// Require returns the binary (Find). When there is none it skips the test
// with the reason, unless the CI variable is set: then the test fails. It
// warns when the binary is not Version.
func (c *CLI) Require(t testing.TB) string {
	t.Helper()
	p, err := c.Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the real %s CLI is missing: %v", c.Title, err)
		}
		t.Skipf("skipping: %v", err)
	}
	c.once.Do(func() {
		cmd := exec.Command(p, "--version")
		cmd.Env = append(os.Environ(), c.VersionEnv...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			c.version = fmt.Sprintf("unknown (--version: %v)", err)
			return
		}
		if strings.TrimSpace(string(out)) == "" {
			out = []byte(stderr.String()) // pi prints its version on stderr
		}
		if c.VersionOf != nil {
			c.version = c.VersionOf(string(out))
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		c.version = strings.TrimSpace(lines[len(lines)-1])
	})
	if c.version != c.Version {
		t.Logf("warning: %s is %s %s; these tests were measured on %s", p, c.Title, c.version, c.Version)
	}
	return p
}

// VersionField returns a CLI.VersionOf that takes the i-th field of the
// output (counted from the end when i < 0): `claude --version` prints
// "2.1.328 (Claude Code)" (0), `codex --version` "codex-cli 0.169.0" (-1).
func VersionField(i int) func(out string) string {
	return func(out string) string {
		f := strings.Fields(out)
		if i < 0 {
			i += len(f)
		}
		if i < 0 || i >= len(f) {
			return ""
		}
		return f[i]
	}
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}
