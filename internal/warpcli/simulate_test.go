package warpcli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/warpcli"
)

// Bad input to warp simulate is a usage error (exit 2) that says what is
// wrong, before anything starts. The full simulation runs in internal/sim.
func TestSimulateRejectsBadFlags(t *testing.T) {
	fakeGyrum := filepath.Join(t.TempDir(), "gyrum")
	if err := os.WriteFile(fakeGyrum, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"too few agents", []string{"--agents", "2"}, "--agents 2: want 6 to 500"},
		{"too many agents", []string{"--agents", "100000"}, "--agents 100000"},
		{"time scale zero", []string{"--time-scale", "0"}, "--time-scale 0: want 1 to 10000"},
		{"time scale not a number", []string{"--time-scale", "fast"}, "invalid argument"},
		{"unknown client", []string{"--client", "v3"}, `unknown client "v3"`},
		{"unknown mode", []string{"--mode", "fast"}, `unknown mode "fast"`},
		{"unknown scenario", []string{"--scenario", "tuesday"}, `--scenario "tuesday"`},
		{"missing gyrum", []string{"--gyrum", filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"stray argument", []string{"now"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			c := &warpcli.CLI{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
			args := append([]string{"simulate", "--gyrum", fakeGyrum}, tc.args...)
			code := c.Run(context.Background(), args)
			if code != warpcli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, warpcli.ExitUsage, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", errb.String(), tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}

// Without --gyrum and with no gyrum next to the binary or on PATH, the
// error says how to build it.
func TestSimulateSaysHowToBuildGyrum(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	c := &warpcli.CLI{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
	if code := c.Run(context.Background(), []string{"simulate"}); code != warpcli.ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, warpcli.ExitUsage, errb.String())
	}
	if !strings.Contains(errb.String(), "go build -o bin/ ./cmd/...") {
		t.Errorf("stderr %q does not say how to build gyrum", errb.String())
	}
}
