package clikit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
)

// program is a tree whose `do` command returns ret through Action, and
// whose `raw` command returns it without Action.
func program(stdout, stderr *bytes.Buffer, ret error) *cobra.Command {
	root := &cobra.Command{Use: "demo"}
	clikit.SetupRoot(root, stdout, stderr)
	var n int
	do := &cobra.Command{
		Use:  "do",
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(*cobra.Command, []string) error { return ret }),
	}
	do.Flags().IntVar(&n, "n", 0, "a number")
	do.Flags().Bool("json", false, "print JSON")
	raw := &cobra.Command{Use: "raw", RunE: func(*cobra.Command, []string) error { return ret }}
	root.AddCommand(do, raw)
	clikit.Install(root)
	return root
}

// codedErr has an exit code of its own, as warpsim's outcome does.
type codedErr struct{}

func (codedErr) Error() string { return "too loaded" }
func (codedErr) ExitCode() int { return 3 }

// childExit returns the *exec.ExitError of a process that exited 5.
func childExit(t *testing.T) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit 5").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("sh -c 'exit 5': %v", err)
	}
	return err
}

func TestExecuteExitCodes(t *testing.T) {
	report := clikit.Report{
		Message: func(err error) string { return "<" + err.Error() + ">" },
		Hint: func(f *clikit.Failure) string {
			if f.Server != "" {
				return "is the server at " + f.Server + " up?"
			}
			return ""
		},
	}
	for _, c := range []struct {
		name   string
		args   []string
		ret    error
		code   int
		stderr string
	}{
		{"success", []string{"do"}, nil, clikit.ExitOK, ""},
		{"usage error", []string{"do"}, clikit.Usagef("--n %d: want 1 to %d", 0, 9), clikit.ExitUsage,
			"demo: <--n 0: want 1 to 9>\n  run 'demo do --help' for usage\n"},
		{"wrapped usage error", []string{"do"}, fmt.Errorf("config: %w", clikit.Usagef("bad")), clikit.ExitUsage,
			"demo: <config: bad>\n  run 'demo do --help' for usage\n"},
		{"plain error is a failure", []string{"do"}, errors.New("disk full"), clikit.ExitError, "demo: <disk full>\n"},
		{"failure with a server", []string{"do"}, &clikit.Failure{Err: errors.New("refused"), Server: "http://h:1"}, clikit.ExitError,
			"demo: <refused>\n  is the server at http://h:1 up?\n"},
		{"the message is the failure's error", []string{"do"}, fmt.Errorf("outer: %w", clikit.Fail(errors.New("inner"))), clikit.ExitError,
			"demo: <inner>\n"},
		{"coded error", []string{"do"}, codedErr{}, 3, "demo: <too loaded>\n"},
		{"WithExitCode", []string{"do"}, clikit.WithExitCode(127, errors.New("start nope: not found")), 127,
			"demo: <start nope: not found>\n"},
		{"a child's exit status is not the command's", []string{"do"}, fmt.Errorf("systemctl: %w", childExit(t)), clikit.ExitError,
			"demo: <systemctl: exit status 5>\n"},
		{"Exit prints nothing", []string{"do"}, clikit.Exit(42), 42, ""},
		{"wrapped Exit", []string{"do"}, fmt.Errorf("x: %w", clikit.Exit(1)), 1, ""},
		{"bad flag value", []string{"do", "--n", "x"}, nil, clikit.ExitUsage, "run 'demo do --help' for usage\n"},
		{"unknown flag", []string{"do", "--bogus"}, nil, clikit.ExitUsage, "demo: <unknown flag: --bogus>\n  run 'demo do --help' for usage\n"},
		{"wrong argument count", []string{"do", "extra"}, nil, clikit.ExitUsage, "run 'demo do --help' for usage\n"},
		{"unknown command", []string{"frobnicate"}, nil, clikit.ExitUsage, "demo: <unknown command \"frobnicate\" for \"demo\">\n  run 'demo --help' for usage\n"},
		{"-o text with --json", []string{"do", "--json", "-o", "text"}, nil, clikit.ExitUsage, "contradict"},
		{"without Action an error is a usage error", []string{"raw"}, errors.New("oops"), clikit.ExitUsage,
			"demo: <oops>\n  run 'demo raw --help' for usage\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := clikit.Execute(context.Background(), program(&stdout, &stderr, c.ret), c.args, report)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, stderr.String())
			}
			if c.stderr == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q, want %q", stderr.String(), c.stderr)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q", stdout.String())
			}
		})
	}
}

// Without a Report, Execute prints errors as they are and gives no hint.
func TestExecuteZeroReport(t *testing.T) {
	var stdout, stderr bytes.Buffer
	root := program(&stdout, &stderr, &clikit.Failure{Err: errors.New("refused"), Server: "http://h:1"})
	if code := clikit.Execute(context.Background(), root, []string{"do"}, clikit.Report{}); code != clikit.ExitError {
		t.Errorf("exit %d", code)
	}
	if got := stderr.String(); got != "demo: refused\n" {
		t.Errorf("stderr %q", got)
	}
}

// Install's commands go through Action: `version extra` is cobra's usage
// error, and version --json prints indented JSON.
func TestInstalledCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := clikit.Execute(context.Background(), program(&stdout, &stderr, nil), []string{"version", "extra"}, clikit.Report{}); code != clikit.ExitUsage {
		t.Errorf("version extra: exit %d", code)
	}
	stdout.Reset()
	stderr.Reset()
	if code := clikit.Execute(context.Background(), program(&stdout, &stderr, nil), []string{"version", "-o", "json"}, clikit.Report{}); code != clikit.ExitOK {
		t.Fatalf("version -o json: exit %d, stderr %q", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "{\n  \"program\": \"demo\",") {
		t.Errorf("version -o json printed %q", stdout.String())
	}
}

func TestAction(t *testing.T) {
	plain := errors.New("plain")
	usage := clikit.Usagef("usage")
	failure := &clikit.Failure{Err: plain, Server: "http://h:1"}
	exit := clikit.Exit(3)
	for _, c := range []struct {
		name string
		in   error
		same bool // Action returns in as it is
	}{
		{"nil", nil, true},
		{"usage", usage, true},
		{"wrapped usage", fmt.Errorf("a: %w", usage), true},
		{"failure", failure, true},
		{"exit", exit, true},
		{"plain", plain, false},
		{"coded", clikit.WithExitCode(4, plain), false},
	} {
		got := clikit.Action(func(*cobra.Command, []string) error { return c.in })(nil, nil)
		if c.same {
			if got != c.in {
				t.Errorf("%s: Action returned %v, want %v as it is", c.name, got, c.in)
			}
			continue
		}
		var fe *clikit.Failure
		if !errors.As(got, &fe) || fe.Err != c.in || fe.Server != "" {
			t.Errorf("%s: Action returned %#v, want a Failure of %v", c.name, got, c.in)
		}
	}
	if clikit.Fail(nil) != nil {
		t.Error("Fail(nil) is not nil")
	}
	var fe *clikit.Failure
	if err := clikit.Fail(plain); !errors.As(err, &fe) || !errors.Is(err, plain) || err.Error() != "plain" {
		t.Errorf("Fail(plain) = %#v", err)
	}
	var ue *clikit.UsageError
	if !errors.As(usage, &ue) || usage.Error() != "usage" {
		t.Errorf("Usagef = %#v", usage)
	}
	if coded := clikit.WithExitCode(4, plain); !errors.Is(coded, plain) || coded.Error() != "plain" {
		t.Errorf("WithExitCode(4, plain) = %#v", coded)
	}
}

func TestPrintJSON(t *testing.T) {
	var b bytes.Buffer
	if err := clikit.PrintJSON(&b, map[string]any{"a": 1, "b": []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": 1,\n  \"b\": [\n    \"x\"\n  ]\n}\n"; b.String() != want {
		t.Errorf("PrintJSON printed %q, want %q", b.String(), want)
	}
	if err := clikit.PrintJSON(&b, func() {}); err == nil {
		t.Error("PrintJSON of a func: no error")
	}
}
