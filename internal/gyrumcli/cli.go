// Package gyrumcli is the `gyrum` command, the agent side of warp: it
// claims tickets and prepares the worktree's .gyrum/ (start-work), runs the
// activity-gated heartbeat loop (heartbeat run), is the agent's tool-call
// hook (touch-activity), declares long steps (wait), reaps loops and ends
// leases (complete-pr, release, heartbeat kill) and shows what runs on the
// host (status, heartbeat status). It is a package so tests run the whole
// tree in-process with their own streams and environment; cmd/gyrum only
// wires it to the process.
//
// Client settings: WARP_URL (default http://127.0.0.1:7077), WARP_TOKEN,
// GYRUM_AGENT, GYRUM_HOST, GYRUM_HOME (default ~/.gyrum), and the loop's
// HEARTBEAT_INTERVAL_SECS, HEARTBEAT_ACTIVITY_STALENESS_SECS,
// HEARTBEAT_INFLIGHT_MAX_SECS.
package gyrumcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/httpapi"
)

// Exit codes of the command (start-work -- CMD passes CMD's through).
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // bad flags, arguments or environment
)

// App runs the gyrum command tree. Nil fields take the process's own.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; os.Getenv when nil. The variables the
	// loop needs are passed on to the processes gyrum spawns.
	Getenv func(string) string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Executable is the gyrum binary spawned for `heartbeat run`;
	// os.Executable when empty (tests point it at a built binary).
	Executable string
	// Getwd returns the working directory; os.Getwd when nil.
	Getwd func() (string, error)
	// StopGrace is the wait between SIGTERM and SIGKILL when gyrum stops a
	// loop; DefaultStopGrace (5 s) when zero.
	StopGrace time.Duration
}

// Execute runs the command line args (without the program name) with the
// process environment and streams and returns the exit code.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &App{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return a.Run(ctx, args)
}

// Run runs the command line args and returns the exit code. The hook,
// `touch-activity`, takes a fast path that builds no command tree: it is
// called on every tool call of every agent.
func (a *App) Run(ctx context.Context, args []string) int {
	if len(args) > 0 && args[0] == "touch-activity" && !wantsHelp(args[1:]) {
		a.touchActivity(args[1:])
		return ExitOK
	}
	if a.Stdout == nil {
		a.Stdout = io.Discard
	}
	if a.Stderr == nil {
		a.Stderr = io.Discard
	}
	root := a.RootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ce *exitCode
	if errors.As(err, &ce) {
		return ce.code
	}
	var fe *failure
	if errors.As(err, &fe) {
		fmt.Fprintf(a.Stderr, "gyrum: %s\n", message(fe.err))
		if h := hint(fe.err); h != "" {
			fmt.Fprintf(a.Stderr, "  %s\n", h)
		}
		if fe.code != 0 {
			return fe.code
		}
		return ExitError
	}
	fmt.Fprintf(a.Stderr, "gyrum: %s\n", message(err))
	path := "gyrum"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(a.Stderr, "  run '%s --help' for usage\n", path)
	return ExitUsage
}

func wantsHelp(args []string) bool {
	for _, s := range args {
		if s == "-h" || s == "--help" {
			return true
		}
	}
	return false
}

// RootCommand returns the gyrum command tree.
func (a *App) RootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "gyrum",
		Short: "Agent side of warp: claim a ticket, keep its lease alive while the agent works",
		Long: `gyrum claims warp tickets for AI coding agents and keeps each lease alive exactly
as long as the agent is alive and working (activity-gated heartbeats, ADR-138).

  gyrum start-work T-1          claim T-1 here, prepare .gyrum/, spawn the loop
  gyrum touch-activity          the agent's tool-call hook (see 'gyrum setup')
  gyrum complete-pr --pr URL    stop the loop, complete the ticket
  gyrum release                 stop the loop, hand the ticket back

WARP_URL (default ` + httpapi.DefaultURL + `) says where warp is, WARP_TOKEN
is the bearer token, GYRUM_HOME (default ~/.gyrum) holds the registry of
running loops.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetIn(a.stdin())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageErrorf("%v", err) })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(a.startWorkCommand(), a.heartbeatCommand(), a.touchActivityCommand(),
		a.completePRCommand(), a.releaseCommand(), a.waitCommand(), a.statusCommand())
	// The host-maintenance commands of issue 4 go here, one line each:
	root.AddCommand(a.setupCommand())
	root.AddCommand(a.doctorCommand())
	root.AddCommand(a.watchdogCommand())
	return root
}

func (a *App) getenv(k string) string {
	if a.Getenv != nil {
		return a.Getenv(k)
	}
	return os.Getenv(k)
}

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *App) getwd() (string, error) {
	if a.Getwd != nil {
		return a.Getwd()
	}
	return os.Getwd()
}

func (a *App) stdin() io.Reader {
	if a.Stdin != nil {
		return a.Stdin
	}
	return os.Stdin
}

func (a *App) executable() (string, error) {
	if a.Executable != "" {
		return a.Executable, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the gyrum binary: %w", err)
	}
	return exe, nil
}

// registry returns the registry of running loops under GYRUM_HOME.
func (a *App) registry() (gyrumdir.Registry, error) {
	home, err := gyrumdir.Home(a.getenv)
	if err != nil {
		return gyrumdir.Registry{}, usageErrorf("%v", err)
	}
	return gyrumdir.NewRegistry(home), nil
}

// durations returns the loop's settings from the environment.
func (a *App) durations() (heartbeat.Durations, error) {
	d, err := heartbeat.DurationsFromEnv(a.getenv)
	if err != nil {
		return d, usageErrorf("%v", err)
	}
	return d, nil
}

// client returns a warp client for url ("" → WARP_URL, else the default).
func (a *App) client(serverURL string) *httpapi.Client {
	if serverURL == "" {
		serverURL = a.getenv("WARP_URL")
	}
	return httpapi.NewClient(serverURL, a.getenv("WARP_TOKEN"))
}

// findDir returns the .gyrum/ of --dir (which must hold one) or the nearest
// one above the working directory.
func (a *App) findDir(dirFlag string) (gyrumdir.Dir, error) {
	if dirFlag != "" {
		d, err := gyrumdir.Open(dirFlag)
		if err != nil {
			return d, usageErrorf("%v: was start-work run there?", err)
		}
		return d, nil
	}
	wd, err := a.getwd()
	if err != nil {
		return gyrumdir.Dir{}, fmt.Errorf("working directory: %w", err)
	}
	d, err := gyrumdir.Find(wd)
	if err != nil {
		return d, usageErrorf("%v: run this in a worktree prepared by 'gyrum start-work', or pass --dir", err)
	}
	return d, nil
}

// touchActivity is the hook's fast path: a hand-rolled --dir parse, then
// internal/hook. Silent, whatever happens.
func (a *App) touchActivity(args []string) {
	defer func() { _ = recover() }()
	o := hook.Options{Now: a.now()}
	for i := 0; i < len(args); i++ {
		s := args[i]
		if s == "--dir" || s == "-dir" {
			if i+1 < len(args) {
				o.Dir = args[i+1]
				i++
			}
		} else if v, ok := strings.CutPrefix(s, "--dir="); ok {
			o.Dir = v
		} else if v, ok := strings.CutPrefix(s, "-dir="); ok {
			o.Dir = v
		}
	}
	o.Cwd, _ = a.getwd()
	_ = hook.Run(a.stdin(), o)
}

func (a *App) touchActivityCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "touch-activity [--dir D]",
		Short: "The agent's tool-call hook: record activity for the heartbeat loop",
		Long: `touch-activity is the hook Claude Code runs before and after every tool call
('gyrum setup' installs it). It reads the hook's JSON from stdin and finds the
worktree's .gyrum/ by walking up from --dir, then the payload's cwd, then the
working directory:

  PreToolUse                       create .gyrum/in-flight/<tool_use_id>
  PostToolUse, PostToolUseFailure  remove that marker, touch .gyrum/last-activity
  anything else, or no payload     touch .gyrum/last-activity

It prints nothing and exits 0 whatever happens (no .gyrum/, garbage on stdin,
a read-only worktree), so it can never break the agent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.touchActivity([]string{"--dir", dir})
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "worktree to start the search from")
	return cmd
}

// usageError is a mistake in the command line or environment: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// failure is an error of a command that ran: exit 1, or code when set.
type failure struct {
	err  error
	code int
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// exitCode ends the command with code and no message (start-work -- CMD).
type exitCode struct{ code int }

func (e *exitCode) Error() string { return fmt.Sprintf("exit %d", e.code) }

// action adapts a command body: usage errors keep exit code 2, every other
// error is a failure (exit 1).
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var ue *usageError
		var fe *failure
		var ce *exitCode
		if err == nil || errors.As(err, &ue) || errors.As(err, &fe) || errors.As(err, &ce) {
			return err
		}
		return &failure{err: err}
	}
}

// message returns what to print after "gyrum: ".
func message(err error) string {
	var ae *httpapi.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%s (HTTP %d %s)", ae.Message, ae.Status, ae.Code)
	}
	return err.Error()
}

// hint says what to do about err, "" when there is nothing useful to say.
func hint(err error) string {
	var ae *httpapi.APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case httpapi.CodeUnauthorized, httpapi.CodeForbidden:
			return "set WARP_TOKEN to an agent token of the server (a line of its --token-file)"
		}
		return ""
	}
	var ue *url.Error
	var ne *net.OpError
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return "is warp running there? start it with 'warp serve', or point WARP_URL at it"
	}
	return ""
}
