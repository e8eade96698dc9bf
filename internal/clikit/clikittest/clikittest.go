// Package clikittest checks what clikit.Install adds to a command tree
// (--version, version, completion, gen-man) through the program's own
// command line, so warp's and gyrum's tests check both binaries alike.
package clikittest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/version"
)

// Run runs the program's command line (without the program name) and
// returns its output and exit code.
type Run func(args ...string) (stdout, stderr string, code int)

// CheckVersion checks --version, -v, `version` and `version --json` of the
// program prog.
func CheckVersion(t *testing.T, prog string, run Run) {
	t.Helper()
	want := version.Get(prog).String() + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		out, errOut, code := run(args...)
		if code != 0 || out != want {
			t.Errorf("%s %s: exit %d, stdout %q (stderr %q), want %q", prog, strings.Join(args, " "), code, out, errOut, want)
		}
		if !strings.HasPrefix(out, prog+" ") {
			t.Errorf("%s %s does not name the binary: %q", prog, strings.Join(args, " "), out)
		}
	}
	out, errOut, code := run("version", "--json")
	if code != 0 {
		t.Fatalf("%s version --json: exit %d, stderr %q", prog, code, errOut)
	}
	var info version.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%s version --json printed %q: %v", prog, out, err)
	}
	if info.Program != prog || info.Version == "" || info.GoVersion != runtime.Version() || info.OS != runtime.GOOS || info.Arch != runtime.GOARCH {
		t.Errorf("%s version --json = %+v", prog, info)
	}
	if _, errOut, code := run("version", "extra"); code != 2 {
		t.Errorf("%s version extra: exit %d, want 2 (stderr %q)", prog, code, errOut)
	}
}

// CheckCompletion checks that `completion bash|zsh|fish` each print a
// script for prog, and that the scripts parse in the shells installed
// here (bash -n, zsh -n, fish --no-execute).
func CheckCompletion(t *testing.T, prog string, run Run) {
	t.Helper()
	markers := map[string]string{
		"bash": "__start_" + prog,
		"zsh":  "#compdef " + prog,
		"fish": "complete -c " + prog,
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := run("completion", shell)
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Errorf("%s completion %s: exit %d, %d bytes, stderr %q", prog, shell, code, len(out), errOut)
			continue
		}
		if !strings.Contains(out, markers[shell]) {
			t.Errorf("%s completion %s does not name the binary (%q)", prog, shell, markers[shell])
		}
		sh, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s not installed: the %s script's syntax is not checked", shell, shell)
			continue
		}
		file := filepath.Join(t.TempDir(), prog+"."+shell)
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		flag := "-n"
		if shell == "fish" {
			flag = "--no-execute"
		}
		if b, err := exec.Command(sh, flag, file).CombinedOutput(); err != nil {
			t.Errorf("%s %s on the %s completion script: %v\n%s", shell, flag, prog, err, b)
		}
	}
	if _, _, code := run("completion", "tcsh"); code != 2 {
		t.Errorf("%s completion tcsh: exit %d, want 2", prog, code)
	}
}

// HelpCommands returns the command paths of every command --help shows,
// starting at prog itself ("warp", "warp serve", "warp ticket create", ...),
// by reading the "Available Commands:" of each --help; cobra's `help`
// command is left out (it gets no man page).
func HelpCommands(t *testing.T, prog string, run Run) []string {
	t.Helper()
	var walk func(path []string) []string
	walk = func(path []string) []string {
		out, errOut, code := run(append(append([]string{}, path...), "--help")...)
		if code != 0 {
			t.Fatalf("%s %s --help: exit %d, stderr %q", prog, strings.Join(path, " "), code, errOut)
		}
		got := []string{strings.Join(append([]string{prog}, path...), " ")}
		for _, name := range availableCommands(out) {
			if name != "help" {
				got = append(got, walk(append(append([]string{}, path...), name))...)
			}
		}
		return got
	}
	return walk(nil)
}

// availableCommands returns the names listed under "Available Commands:".
func availableCommands(help string) []string {
	var names []string
	in := false
	for _, l := range strings.Split(help, "\n") {
		switch {
		case l == "Available Commands:":
			in = true
		case in && strings.HasPrefix(l, "  "):
			names = append(names, strings.Fields(l)[0])
		case in:
			return names
		}
	}
	return names
}

// CheckManPages runs `gen-man DIR` into a new directory and checks that it
// holds exactly one page per command of HelpCommands (no page of a hidden
// command), each naming its command, and that groff reads every page
// without a warning (when groff is installed).
func CheckManPages(t *testing.T, prog string, run Run) {
	t.Helper()
	commands := HelpCommands(t, prog, run)
	dir := filepath.Join(t.TempDir(), "man")
	out, errOut, code := run("gen-man", dir)
	if code != 0 {
		t.Fatalf("%s gen-man: exit %d, stderr %q", prog, code, errOut)
	}
	var want []string
	for _, c := range commands {
		want = append(want, strings.ReplaceAll(c, " ", "-")+".1")
	}
	sort.Strings(want)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s gen-man wrote\n  %s\nwant one page per visible command:\n  %s", prog, strings.Join(got, " "), strings.Join(want, " "))
	}
	if !strings.Contains(out, "wrote ") {
		t.Errorf("%s gen-man said %q", prog, out)
	}
	groff, _ := exec.LookPath("groff")
	for _, c := range commands {
		page := filepath.Join(dir, strings.ReplaceAll(c, " ", "-")+".1")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Error(err)
			continue
		}
		name := strings.ReplaceAll(strings.ReplaceAll(c, " ", "-"), "-", `\-`)
		for _, w := range []string{".TH \"" + strings.ToUpper(name) + "\" 1", ".SH NAME\n" + name + ` \- `, ".SH SYNOPSIS\n.B " + strings.ReplaceAll(c, "-", `\-`) + "\n", ".SH DESCRIPTION\n"} {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", page, w)
			}
		}
		if groff == "" {
			continue
		}
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", page)
		if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
			t.Errorf("groff on %s: %v\n%s", page, err, msg)
		}
	}
	if groff == "" {
		t.Log("groff not installed: the pages' roff is not checked")
	}
	if _, _, code := run("gen-man"); code != 2 {
		t.Errorf("%s gen-man without DIR: exit %d, want 2", prog, code)
	}
}

// CheckOutputFlags checks that every command of the tree under root that
// has --json also has -o/--output (what clikit.Install adds), and that at
// least min commands have --json, so a tree that lost them all fails too.
func CheckOutputFlags(t *testing.T, root *cobra.Command, min int) {
	t.Helper()
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Flags().Lookup("json") == nil {
			return
		}
		n++
		if o := c.Flags().Lookup("output"); o == nil || o.Shorthand != "o" {
			t.Errorf("%s has --json but no -o/--output", c.CommandPath())
		}
	}
	walk(root)
	if n < min {
		t.Errorf("only %d commands of %s have --json, want at least %d", n, root.Name(), min)
	}
}
