// Package warpcli is the `warp` command: the server (`warp serve`) and the
// operator commands that talk to a running server over HTTP. It is a
// package so tests run the whole command tree in-process with their own
// output writers, environment and clock; cmd/warp only wires it to the
// process.
package warpcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
)

// Exit codes of the command (those of clikit).
const (
	ExitOK    = clikit.ExitOK
	ExitError = clikit.ExitError // the command ran and failed
	ExitUsage = clikit.ExitUsage // bad flags, arguments or environment
)

// envPrefix starts the environment variable of every flag of warp serve
// (EnvName).
const envPrefix = "WARP_"

// CLI runs the warp command tree. The zero value writes nowhere; set at
// least Stdout and Stderr.
type CLI struct {
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv reads the environment; os.LookupEnv when nil.
	LookupEnv func(key string) (string, bool)
	// Now is the clock ages are computed with; time.Now when nil.
	Now func() time.Time
	// Backoff is how long `ticket list --watch` waits before its
	// attempt-th reconnection in a row, given the server's retry;
	// watch.Backoff when nil (tests shorten it).
	Backoff func(attempt int, retry time.Duration) time.Duration
}

// Execute runs the command line args (without the program name) with the
// process environment, writing to stdout and stderr, and returns the exit
// code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &CLI{Stdout: stdout, Stderr: stderr}
	return c.Run(ctx, args)
}

// Run runs the command line args (without the program name) and returns
// the exit code: 0 success, 1 failure, 2 usage error (see clikit.Execute).
func (c *CLI) Run(ctx context.Context, args []string) int {
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	return clikit.Execute(ctx, c.rootCommand(), args, clikit.Report{Message: apiclient.Message, Hint: hint})
}

func (c *CLI) lookupEnv(key string) (string, bool) { return clikit.LookupEnv(c.LookupEnv, key) }

func (c *CLI) now() time.Time { return clikit.Now(c.Now) }

func (c *CLI) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "warp",
		Short: "Coordination service for fleets of AI coding agents",
		Long: `warp hands out tickets to agents, holds their leases with fencing epochs and
expires leases on real activity (activity-gated heartbeats, ADR-138).

Run the server with 'warp serve'. The other commands talk to a running
server over HTTP: WARP_URL (default ` + client.DefaultURL + `) says where,
WARP_TOKEN is the bearer token (or --url / --token).`,
		Example: `  warp serve --db /var/lib/warp/warp.db
  warp ticket create T-1 --title "fix the flaky test" --label backend
  warp ticket list --state claimed
  warp stale-unlock --older-than 45m --dry-run`,
	}
	clikit.SetupRoot(root, c.Stdout, c.Stderr)
	root.AddCommand(c.serveCommand(), c.ticketCommand(), c.releaseCommand(), c.staleUnlockCommand(),
		c.adoptionCommand(), c.hostsCommand(), c.modeCommand(), c.healthcheckCommand())
	root.AddCommand(movedCommand("simulate", "warpsim"))
	// --version, version, completion, gen-man, -o/--output.
	clikit.Install(root)
	return root
}

// movedCommand is a hidden command that once was name and is now the
// binary to: it says so in one line, exit 2, whatever follows it.
func movedCommand(name, to string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return clikit.Fail(clikit.WithExitCode(ExitUsage, fmt.Errorf("'warp %s' is now its own binary: run %s, with the same flags", name, to)))
		},
	}
}

// hint says what to do about a failure, "" when there is nothing useful to
// say.
func hint(f *clikit.Failure) string {
	err := f.Err
	var ae *client.APIError
	if errors.As(err, &ae) {
		if ae.Guessed {
			return "" // not warp's answer: its codes' hints do not apply (Message says where to look)
		}
		switch ae.Code {
		case client.CodeUnauthorized:
			return "pass a token with --token or WARP_TOKEN (a line of the server's --token-file, or the server's WARP_TOKEN)"
		case client.CodeForbidden:
			return "this command needs an admin token: an admin:TOKEN line of the server's --token-file, or the server's WARP_TOKEN"
		case client.CodeUnavailable:
			return "the server cannot reach its database; check the server's log and retry"
		case client.CodeAdoptionIncomplete:
			return "see which hosts still send v1 with 'warp adoption'; pass --force to switch anyway"
		case client.CodeNotFound:
			return "list tickets with 'warp ticket list'"
		}
		return ""
	}
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Op == "listen" {
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			return "another process already listens there (another warp?): stop it, or give --addr another port"
		case errors.Is(err, syscall.EACCES):
			return "this user may not bind that address: use a port above 1023 in --addr"
		case errors.Is(err, syscall.EADDRNOTAVAIL):
			return "no interface of this host has that address: check the host part of --addr"
		}
		return "check --addr (HOST:PORT)"
	}
	if apiclient.Unreachable(err) {
		serverURL := f.Server
		if serverURL == "" {
			serverURL = client.DefaultURL
		}
		if u, err := url.Parse(serverURL); err == nil {
			serverURL = u.Redacted() // a password in WARP_URL stays off the screen
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
	cmd.Flags().StringVar(&o.url, "url", "", "warp server URL (env WARP_URL, default "+client.DefaultURL+")")
	cmd.Flags().StringVar(&o.token, "token", "", "bearer token (env WARP_TOKEN, which other users cannot read in ps as they can this flag)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the wire JSON instead of a table (also -o json)")
}

// client returns the HTTP client for o, filling URL and token from the
// environment when their flags were not given.
func (c *CLI) client(cmd *cobra.Command, o *clientOptions) (*client.Client, error) {
	u, tok := o.url, o.token
	if !cmd.Flags().Changed("url") {
		u, _ = c.lookupEnv("WARP_URL")
	}
	if !cmd.Flags().Changed("token") {
		tok, _ = c.lookupEnv("WARP_TOKEN")
	}
	if u == "" {
		u = client.DefaultURL
	}
	if !apiclient.ValidURL(u) {
		return nil, clikit.Usagef("server URL %q is invalid: want http://HOST:PORT (set WARP_URL or --url)", u)
	}
	return client.NewClient(u, tok).WithRetry(apiclient.Retry(c.Stderr, "warp")), nil
}

// fail marks err as a failure talking to cl's server.
func fail(cl *client.Client, err error) error {
	if err == nil {
		return nil
	}
	return &clikit.Failure{Err: err, Server: cl.BaseURL()}
}

// printJSON prints v as the --json output of a command.
func (c *CLI) printJSON(v any) error { return clikit.PrintJSON(c.Stdout, v) }

// bindEnv sets every flag of fs the command line did not set from its
// environment variable, WARP_ + the flag name in upper snake case (see
// clikit.BindEnv).
func (c *CLI) bindEnv(fs *pflag.FlagSet) error { return clikit.BindEnv(fs, envPrefix, c.lookupEnv) }

// EnvName returns the environment variable of a serve flag:
// "lease-window" → "WARP_LEASE_WINDOW".
func EnvName(flag string) string { return clikit.EnvName(envPrefix, flag) }
