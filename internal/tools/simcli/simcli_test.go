package simcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/tools/simcli"
)

// Bad input to warpsim is a usage error (exit 2) that says what is
// wrong, before anything starts. The full simulation runs in internal/tools/sim.
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
		{"too few agents", []string{"--agents", "2"}, "--agents 2: want 10 to 500"},
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
			c := &simcli.CLI{Stdout: &out, Stderr: &errb}
			args := append([]string{"--gyrum", fakeGyrum}, tc.args...)
			code := c.Run(context.Background(), args)
			if code != simcli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, simcli.ExitUsage, errb.String())
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
	c := &simcli.CLI{Stdout: &out, Stderr: &errb}
	if code := c.Run(context.Background(), nil); code != simcli.ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, simcli.ExitUsage, errb.String())
	}
	if !strings.Contains(errb.String(), "go build -o bin/ ./cmd/...") {
		t.Errorf("stderr %q does not say how to build gyrum", errb.String())
	}
}

// A time scale the machine cannot keep up with ends with the too-loaded
// verdict and exit status 3, not with failed claims: here the background
// jobs would need more than a core each, so nothing is started (a stand-in
// gyrum that only answers --help is enough).
func TestSimulateTooLoadedExitsThree(t *testing.T) {
	helpOnly := filepath.Join(t.TempDir(), "gyrum")
	if err := os.WriteFile(helpOnly, []byte("#!/bin/sh\necho start-work touch-activity\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		var out, errb bytes.Buffer
		c := &simcli.CLI{Stdout: &out, Stderr: &errb}
		args := []string{"--gyrum", helpOnly, "--time-scale", "10000", "--agents", "10", "--quiet"}
		if asJSON {
			args = append(args, "--json")
		}
		if code := c.Run(context.Background(), args); code != simcli.ExitTooLoaded {
			t.Fatalf("json=%v: exit %d, want %d; stderr %q", asJSON, code, simcli.ExitTooLoaded, errb.String())
		}
		// Said once: at the end of the table, or on stderr beside JSON.
		said := errb.String()
		if !asJSON {
			said = out.String()
		}
		if want := "machine too loaded for --time-scale 10000"; !strings.Contains(said, want) || !strings.Contains(said, "rerun with --time-scale") {
			t.Errorf("json=%v: %q does not say %q and what to rerun with", asJSON, said, want)
		}
		if n := strings.Count(out.String()+errb.String(), "too loaded"); n != 1 {
			t.Errorf("json=%v: said %d times, want once:\nstdout %s\nstderr %s", asJSON, n, out.String(), errb.String())
		}
		if asJSON {
			var rep struct {
				Verdict string `json:"verdict"`
				Ran     bool   `json:"ran"`
				Timing  struct {
					SuggestedScale float64 `json:"suggested_time_scale"`
				} `json:"timing"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Verdict != "too-loaded" || rep.Ran || rep.Timing.SuggestedScale <= 0 {
				t.Errorf("JSON report: %+v, %v; want verdict too-loaded, not run, a suggested scale:\n%s", rep, err, out.String())
			}
		} else if !strings.Contains(out.String(), "the simulation was not run") || strings.Contains(out.String(), "FAIL") {
			t.Errorf("report:\n%s", out.String())
		}
	}
}

// The help says what the verdicts and exit statuses are.
func TestSimulateHelpNamesTheVerdicts(t *testing.T) {
	var out, errb bytes.Buffer
	c := &simcli.CLI{Stdout: &out, Stderr: &errb}
	if code := c.Run(context.Background(), []string{"--help"}); code != simcli.ExitOK {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	for _, want := range []string{"machine too loaded for --time-scale N", "3 when the machine was too loaded", "denied call", "background", "Examples:", "bin/warpsim --client v1 --mode legacy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
