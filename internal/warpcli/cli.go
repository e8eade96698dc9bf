// Package warpcli is the `warp` command: the server (`warp serve`) and the
// operator commands that talk to a running server over HTTP. It is a
// package so tests run the whole command tree in-process with their own
// output writers, environment and clock; cmd/warp only wires it to the
// process.
package warpcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/internal/httpapi"
)

// Exit codes of the command.
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // bad flags, arguments or environment
)

// CLI runs the warp command tree. The zero value writes nowhere; set at
// least Stdout and Stderr.
type CLI struct {
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv reads the environment; os.LookupEnv when nil.
	LookupEnv func(key string) (string, bool)
	// Now is the clock ages are computed with; time.Now when nil.
	Now func() time.Time
}

// Execute runs the command line args (without the program name) with the
// process environment, writing to stdout and stderr, and returns the exit
// code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &CLI{Stdout: stdout, Stderr: stderr}
	return c.Run(ctx, args)
}

// Run runs the command line args (without the program name) and returns
// the exit code: 0 success, 1 failure, 2 usage error.
func (c *CLI) Run(ctx context.Context, args []string) int {
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	root := c.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var fe *failure
	if errors.As(err, &fe) {
		fmt.Fprintf(c.Stderr, "warp: %s\n", message(fe.err))
		if h := hint(fe.err, fe.url); h != "" {
			fmt.Fprintf(c.Stderr, "  %s\n", h)
		}
		return ExitError
	}
	fmt.Fprintf(c.Stderr, "warp: %s\n", message(err))
	path := "warp"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(c.Stderr, "  run '%s --help' for usage\n", path)
	return ExitUsage
}

func (c *CLI) lookupEnv(key string) (string, bool) {
	if c.LookupEnv != nil {
		return c.LookupEnv(key)
	}
	return os.LookupEnv(key)
}

func (c *CLI) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *CLI) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "warp",
		Short: "Coordination service for fleets of AI coding agents",
		Long: `warp hands out tickets to agents, holds their leases with fencing epochs and
expires leases on real activity (activity-gated heartbeats, ADR-138).

Run the server with 'warp serve'. The other commands talk to a running
server over HTTP: WARP_URL (default ` + httpapi.DefaultURL + `) says where,
WARP_TOKEN is the bearer token (or --url / --token).`,
		Example: `  warp serve --db /var/lib/warp/warp.db
  warp ticket create T-1 --title "fix the flaky test" --label backend
  warp ticket list --state claimed
  warp stale-unlock --older-than 45m --dry-run`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(c.Stdout)
	root.SetErr(c.Stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageErrorf("%v", err) })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(c.serveCommand(), c.ticketCommand(), c.releaseCommand(), c.staleUnlockCommand(),
		c.adoptionCommand(), c.hostsCommand(), c.modeCommand())
	root.AddCommand(c.simulateCommand())
	return root
}

// usageError is a mistake in the command line or environment: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// failure is an error of a command that ran: exit 1. url is the server the
// command talked to, for the hint.
type failure struct {
	err error
	url string
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// action adapts a command body: usage errors keep exit code 2, every other
// error is a failure (exit 1). Errors cobra raises itself (unknown flags,
// wrong argument counts, unknown commands) never pass here and stay usage
// errors.
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var ue *usageError
		if err == nil || errors.As(err, &ue) {
			return err
		}
		var fe *failure
		if errors.As(err, &fe) {
			return err
		}
		return &failure{err: err}
	}
}

// message returns what to print after "warp: ".
func message(err error) string {
	var ae *httpapi.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%s (HTTP %d %s)", ae.Message, ae.Status, ae.Code)
	}
	return err.Error()
}

// hint says what to do about err, "" when there is nothing useful to say.
func hint(err error, serverURL string) string {
	var ae *httpapi.APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case httpapi.CodeUnauthorized:
			return "pass a token with --token or WARP_TOKEN (a line of the server's --token-file, or the server's WARP_TOKEN)"
		case httpapi.CodeForbidden:
			return "this command needs an admin token: an admin:TOKEN line of the server's --token-file, or the server's WARP_TOKEN"
		case httpapi.CodeUnavailable:
			return "the server cannot reach its database; check the server's log and retry"
		case httpapi.CodeAdoptionIncomplete:
			return "see which hosts still send v1 with 'warp adoption'; pass --force to switch anyway"
		case httpapi.CodeNotFound:
			return "list tickets with 'warp ticket list'"
		}
		return ""
	}
	var ue *url.Error
	var ne *net.OpError
	if errors.As(err, &ue) || errors.As(err, &ne) {
		if serverURL == "" {
			serverURL = httpapi.DefaultURL
		}
		return fmt.Sprintf("is warp running at %s? start it with 'warp serve', or point WARP_URL / --url at it", serverURL)
	}
	return ""
}

// clientOptions are the flags of every command that talks to a server.
type clientOptions struct {
	url   string
	token string
	json  bool
}

func (c *CLI) addClientFlags(cmd *cobra.Command, o *clientOptions) {
	cmd.Flags().StringVar(&o.url, "url", "", "warp server URL (env WARP_URL, default "+httpapi.DefaultURL+")")
	cmd.Flags().StringVar(&o.token, "token", "", "bearer token (env WARP_TOKEN)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the wire JSON instead of a table")
}

// client returns the HTTP client for o, filling URL and token from the
// environment when their flags were not given.
func (c *CLI) client(cmd *cobra.Command, o *clientOptions) (*httpapi.Client, error) {
	u, tok := o.url, o.token
	if !cmd.Flags().Changed("url") {
		u, _ = c.lookupEnv("WARP_URL")
	}
	if !cmd.Flags().Changed("token") {
		tok, _ = c.lookupEnv("WARP_TOKEN")
	}
	if u == "" {
		u = httpapi.DefaultURL
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, usageErrorf("server URL %q is invalid: want http://HOST:PORT (set WARP_URL or --url)", u)
	}
	return httpapi.NewClient(u, tok), nil
}

// fail marks err as a failure talking to cl's server.
func fail(cl *httpapi.Client, err error) error {
	if err == nil {
		return nil
	}
	return &failure{err: err, url: cl.BaseURL()}
}

func (c *CLI) printJSON(v any) error {
	enc := json.NewEncoder(c.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// bindEnv sets every flag of fs the command line did not set from its
// environment variable, WARP_ + the flag name in upper snake case.
func (c *CLI) bindEnv(fs *pflag.FlagSet) error {
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		key := EnvName(f.Name)
		v, ok := c.lookupEnv(key)
		if !ok || v == "" {
			return
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v", key, v, err))
		}
	})
	if len(errs) > 0 {
		return usageErrorf("invalid environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// EnvName returns the environment variable of a serve flag:
// "lease-window" → "WARP_LEASE_WINDOW".
func EnvName(flag string) string {
	return "WARP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}
