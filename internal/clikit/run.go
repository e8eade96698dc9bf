package clikit

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// RunE is the body of a cobra command.
type RunE = func(cmd *cobra.Command, args []string) error

// Action adapts a command body: usage errors keep exit code ExitUsage,
// failures and Exit pass as they are, and every other error becomes a
// Failure (exit ExitError). Errors cobra raises itself (unknown flags, wrong
// argument counts, unknown commands) never pass here and stay usage errors.
func Action(fn RunE) RunE {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var ue *UsageError
		var fe *Failure
		var es *exitStatus
		if err == nil || errors.As(err, &ue) || errors.As(err, &fe) || errors.As(err, &es) {
			return err
		}
		return &Failure{Err: err}
	}
}

// SetupRoot prepares root, a program's root command, for Execute: cobra
// prints neither errors nor usage (Execute reports errors), the tree writes
// to stdout and stderr, and a bad flag or flag value is a UsageError. Call
// it before Install.
func SetupRoot(root *cobra.Command, stdout, stderr io.Writer) {
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return Usagef("%v", err) })
}

// Report says what Execute prints about an error, after "PROG: ".
type Report struct {
	// Message returns what to print of err; err.Error() when nil.
	Message func(err error) string
	// Hint returns a line of advice about a failure, "" for none; nil
	// gives none.
	Hint func(f *Failure) string
}

// message is what to print of err, made safe for a terminal (CleanLines): an
// error can quote a server's or a proxy's text.
func (r Report) message(err error) string {
	if r.Message != nil {
		return CleanLines(r.Message(err))
	}
	return CleanLines(err.Error())
}

// Execute runs the command line args (without the program name) on root,
// prepared with SetupRoot, and returns the exit code. What it prints goes
// to root's error stream, PROG being root's name:
//
//   - success: nothing; ExitOK;
//   - Exit(code) anywhere in the error's chain: nothing; code;
//   - a Failure: "PROG: MESSAGE", then "  HINT" when r.Hint has one; the
//     code of the first error of the failure's chain with an ExitCode() int
//     method (a *exec.ExitError does not count), else ExitError;
//   - any other error (a UsageError, or what cobra raised about flags,
//     arguments or an unknown command): "PROG: MESSAGE" and
//     "  run 'COMMAND --help' for usage"; ExitUsage.
func Execute(ctx context.Context, root *cobra.Command, args []string, r Report) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var es *exitStatus
	if errors.As(err, &es) {
		return es.code
	}
	w, prog := root.ErrOrStderr(), root.Name()
	var fe *Failure
	if errors.As(err, &fe) {
		fmt.Fprintf(w, "%s: %s\n", prog, r.message(fe.Err))
		if r.Hint != nil {
			if h := r.Hint(fe); h != "" {
				fmt.Fprintf(w, "  %s\n", h)
			}
		}
		return exitCode(fe)
	}
	fmt.Fprintf(w, "%s: %s\n", prog, r.message(err))
	path := prog
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(w, "  run '%s --help' for usage\n", path)
	return ExitUsage
}
