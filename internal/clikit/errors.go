package clikit

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by both programs. A command may end with another code
// through an error that has an ExitCode() int method (see Execute).
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // bad flags, arguments or environment
)

// UsageError is a mistake in the command line or environment: exit
// ExitUsage, and Execute points at the command's --help.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef returns a UsageError with the message fmt.Sprintf(format, args...).
func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// Failure is the error of a command that ran and failed: exit ExitError,
// unless Err carries an exit code of its own (see Execute). Action turns
// every error of a command body that is not a usage error into one.
type Failure struct {
	Err error
	// Server is the URL of the server the command talked to, for the
	// program's hint; "" when it talked to none.
	Server string
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Fail marks err as a failure of a command that ran; nil stays nil.
func Fail(err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Err: err}
}

// Failf is Fail of a new error: a refused operation (exit 1) whose message
// says what to do, not a usage error.
func Failf(format string, args ...any) error { return Fail(fmt.Errorf(format, args...)) }

// Exit returns the error that ends a command with code and prints nothing:
// the command already said what there was to say (a report that found
// problems, a child process's exit status).
func Exit(code int) error { return &exitStatus{code: code} }

type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit %d", e.code) }
func (e *exitStatus) ExitCode() int { return e.code }

// WithExitCode returns err with the exit code code: as a failure, Execute
// prints err as usual and exits with code rather than ExitError.
func WithExitCode(code int, err error) error { return &codedError{err: err, code: code} }

type codedError struct {
	err  error
	code int
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) ExitCode() int { return e.code }

// exitCode returns the exit code of a failure: that of the first error of
// its chain with an ExitCode() int method, else ExitError. A child
// process's exit status (*exec.ExitError) is the child's, not the
// command's: a command whose git or systemctl call failed fails with
// ExitError.
func exitCode(f *Failure) int {
	var coded interface{ ExitCode() int }
	if !errors.As(f.Err, &coded) {
		return ExitError
	}
	if _, child := coded.(*exec.ExitError); child {
		return ExitError
	}
	return coded.ExitCode()
}

// NoArgs is cobra.NoArgs with a usage error that says what the command
// works on instead (hint), so `gyrum release T-8` does not read as an
// unknown command.
func NoArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return Usagef("%s takes no arguments (got %q): %s", cmd.CommandPath(), Clean(strings.Join(args, " ")), hint)
	}
}
