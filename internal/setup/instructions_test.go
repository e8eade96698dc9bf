package setup_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/setup"
)

// The instructions block goes into a real file once: appended after the
// user's content, unchanged by a second run, an older block replaced in
// place, and removed again by --uninstall, leaving the user's bytes.
func TestInstructionsFile(t *testing.T) {
	cases := []struct {
		name     string // testdata/instructions/NAME.md; "missing" has none
		restores bool   // uninstall gives back the input byte for byte
	}{
		{"missing", false},
		{"claude", true},
		{"older", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "CLAUDE.md")
			var input []byte
			if tc.name != "missing" {
				var err error
				if input, err = os.ReadFile(filepath.Join("testdata", "instructions", tc.name+".md")); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, input, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			o := setup.InstructionsOptions{Path: path, Out: &out}
			changed, err := setup.RunInstructions(ctx, o)
			if err != nil || !changed {
				t.Fatalf("install: changed %v, err %v", changed, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := readGolden(t, filepath.Join("testdata", "instructions", tc.name+".golden"), got)
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s.golden:\ngot:\n%s\nwant:\n%s", path, tc.name, got, want)
			}
			if n := strings.Count(string(got), setup.InstructionsBegin); n != 1 {
				t.Errorf("%d begin markers, want 1", n)
			}
			if !strings.Contains(string(got), setup.Instructions()) {
				t.Errorf("the snippet is not in the file:\n%s", got)
			}
			// The user's own lines are all still there.
			for _, l := range strings.Split(string(input), "\n") {
				if l != "" && !strings.Contains(l, "gyrum") && !strings.Contains(l, "Leases") && !strings.Contains(l, "Claim with") &&
					!strings.Contains(string(got), l) {
					t.Errorf("user line %q lost", l)
				}
			}
			if input != nil {
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("mode %v, want the original 0600", fi.Mode().Perm())
				}
			}
			if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
				t.Errorf("files next to it: %v, want CLAUDE.md alone (no backup in a repository)", ents)
			}

			// Idempotent.
			out.Reset()
			changed, err = setup.RunInstructions(ctx, o)
			if err != nil || changed {
				t.Fatalf("second install: changed %v, err %v", changed, err)
			}
			if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
				t.Errorf("second install rewrote the file")
			}
			if !strings.Contains(out.String(), "nothing to change") {
				t.Errorf("second install says %q", out.String())
			}

			// Uninstall.
			o.Uninstall = true
			if changed, err = setup.RunInstructions(ctx, o); err != nil || !changed {
				t.Fatalf("uninstall: changed %v, err %v", changed, err)
			}
			removed, err := os.ReadFile(path)
			if tc.name == "missing" {
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("uninstall left the file it created: %q, %v", removed, err)
				}
				return
			}
			if strings.Contains(string(removed), "gyrum") {
				t.Errorf("uninstall left the block:\n%s", removed)
			}
			if tc.restores && !bytes.Equal(removed, input) {
				t.Errorf("install + uninstall changed the file:\ngot:\n%q\nwant:\n%q", removed, input)
			}
			if changed, err = setup.RunInstructions(ctx, o); err != nil || changed {
				t.Errorf("second uninstall: changed %v, err %v", changed, err)
			}
		})
	}
}

// A file without a final newline gets one; the block still comes and goes
// cleanly.
func TestInstructionsNoFinalNewline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "AGENTS.md")
	os.WriteFile(path, []byte("# Agents\nbe nice"), 0o644)
	ctx := context.Background()
	if _, err := setup.RunInstructions(ctx, setup.InstructionsOptions{Path: path}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), "# Agents\nbe nice\n\n"+setup.InstructionsBegin+"\n") {
		t.Errorf("block not appended after a blank line:\n%s", got)
	}
	if _, err := setup.RunInstructions(ctx, setup.InstructionsOptions{Path: path, Uninstall: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# Agents\nbe nice\n" {
		t.Errorf("after uninstall: %q", got)
	}
}

// Markers setup cannot make sense of are refused with the line, and the
// file is not touched.
func TestInstructionsBrokenMarkers(t *testing.T) {
	cases := []struct {
		name string
		line string
		says string
	}{
		{"begin-without-end", ":1:", "without a gyrum:end"},
		{"end-without-begin", ":2:", "without a gyrum:begin"},
		{"two-blocks", ":5:", "a second gyrum:begin"},
	}
	for _, tc := range cases {
		for _, uninstall := range []bool{false, true} {
			input, err := os.ReadFile(filepath.Join("testdata", "instructions", tc.name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "CLAUDE.md")
			os.WriteFile(path, input, 0o644)
			_, err = setup.RunInstructions(context.Background(), setup.InstructionsOptions{Path: path, Uninstall: uninstall})
			var me *setup.MarkerError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), path+tc.line) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s (uninstall %v): err = %v, want a MarkerError at %s%s saying %q", tc.name, uninstall, err, path, tc.line, tc.says)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, input) {
				t.Errorf("%s: refused file changed", tc.name)
			}
		}
	}
}

func TestInstructionsDryRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "CLAUDE.md")
	input := []byte("# Notes\n")
	os.WriteFile(path, input, 0o644)
	var out bytes.Buffer
	changed, err := setup.RunInstructions(context.Background(), setup.InstructionsOptions{Path: path, DryRun: true, Out: &out})
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, input) {
		t.Errorf("dry run changed the file")
	}
	for _, want := range []string{"would update " + path, "+" + setup.InstructionsBegin, "+- Claim before you start", "dry run: nothing was changed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
}

// The snippet says what the brief of an agent needs: how to claim, finish,
// wait, and what to do when a lease ended.
func TestInstructionsText(t *testing.T) {
	s := setup.Instructions()
	for _, want := range []string{
		"gyrum start-work TICKET", "gyrum start-work --next",
		"gyrum complete-pr --pr URL", "gyrum release",
		"gyrum wait --for 45m --reason", "gyrum wait --done",
		"stop working on that ticket", "gyrum status", "gyrum release --dir D",
		"only if it is still open and the work is still wanted",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("instructions lack %q:\n%s", want, s)
		}
	}
	for i, l := range strings.Split(s, "\n") {
		if len(l) > 80 {
			t.Errorf("line %d is %d bytes long (keep the snippet readable in a terminal): %q", i+1, len(l), l)
		}
	}
}
