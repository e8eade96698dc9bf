// Package gyrumcli is the `gyrum` command, the agent side of warp: it
// claims tickets and prepares the worktree's .gyrum/ (start-work), runs the
// activity-gated heartbeat loop (heartbeat run), is the agent's tool-call
// hook (touch-activity), declares long steps (wait), reaps loops and ends
// leases (complete-pr, release, heartbeat kill) and shows what runs on the
// host (status, heartbeat status). It is a package so tests run the whole
// tree in-process with their own streams and environment; cmd/gyrum only
// wires it to the process.
//
// Client settings: WARP_URL (default http://127.0.0.1:7077), WARP_TOKEN
// (the root flags --url and --token win over both), GYRUM_AGENT,
// GYRUM_HOST, GYRUM_HOME (default ~/.gyrum), and the loop's
// HEARTBEAT_INTERVAL_SECS, HEARTBEAT_ACTIVITY_STALENESS_SECS,
// HEARTBEAT_INFLIGHT_MAX_SECS.
package gyrumcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
	"github.com/gyrum-labs/warp/internal/hook"
)

// Exit codes of the command, those of clikit (start-work -- CMD passes
// CMD's through).
const (
	ExitOK    = clikit.ExitOK
	ExitError = clikit.ExitError // the command ran and failed
	ExitUsage = clikit.ExitUsage // bad flags, arguments or environment
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

	// flagURL and flagToken are the root's --url and --token; overrides
	// holds those given on the command line (WARP_URL, WARP_TOKEN) for the
	// run (see applyClientFlags).
	flagURL, flagToken string
	overrides          map[string]string
	// withheld is the server the token was kept from this run (client):
	// a 401 from it is that, not a wrong token.
	withheld string
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
	// --url / --token wrap Getenv for this run only (applyClientFlags).
	defer func(getenv func(string) string) { a.Getenv, a.overrides = getenv, nil }(a.Getenv)
	return clikit.Execute(ctx, a.RootCommand(), args, clikit.Report{Message: apiclient.Message, Hint: a.hint})
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

WARP_URL (default ` + client.DefaultURL + `) says where warp is, WARP_TOKEN
is the bearer token (--url and --token win over them, for every command that
talks to warp), GYRUM_HOME (default ~/.gyrum) holds the registry of running
loops.`,
		Example: `  gyrum start-work T-42
  gyrum --url https://warp.internal:7077 --token "$AGENT_TOKEN" start-work --next --label backend
  gyrum complete-pr --pr https://github.com/acme/billing/pull/7 -o json`,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.flagURL, "url", "", "warp server URL for commands that talk to warp (env WARP_URL, default "+client.DefaultURL+
		"); also wins over the warp_url of lease.json for release and complete-pr")
	pf.StringVar(&a.flagToken, "token", "", "bearer token for commands that talk to warp; passed on to the loop start-work spawns. Prefer env WARP_TOKEN: other users can read this flag in ps for as long as gyrum runs (a whole session with start-work -- CMD)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error { return a.applyClientFlags(pf) }
	clikit.SetupRoot(root, a.Stdout, a.Stderr)
	root.SetIn(a.stdin())
	root.AddCommand(a.startWorkCommand(), a.heartbeatCommand(), a.touchActivityCommand(),
		a.completePRCommand(), a.releaseCommand(), a.waitCommand(), a.noteCommand(), a.statusCommand())
	// The host-maintenance commands, one line each:
	root.AddCommand(a.setupCommand())
	root.AddCommand(a.doctorCommand())
	root.AddCommand(a.watchdogCommand())
	// --version, version, completion, gen-man, -o/--output.
	clikit.Install(root)
	return root
}

// applyClientFlags makes --url and --token, when given, win over WARP_URL
// and WARP_TOKEN for the rest of the run: Getenv answers them (so the
// client, doctor's probe and the loop's token see them) and the loop
// start-work spawns gets them in its environment. The touch-activity fast
// path never gets here: it does not talk to warp.
func (a *App) applyClientFlags(pf *pflag.FlagSet) error {
	over := map[string]string{}
	if pf.Changed("url") {
		if !apiclient.ValidURL(a.flagURL) {
			return clikit.Usagef("--url %q is invalid: want http://HOST:PORT", a.flagURL)
		}
		over["WARP_URL"] = a.flagURL
	}
	if pf.Changed("token") {
		over["WARP_TOKEN"] = a.flagToken
	}
	if len(over) == 0 {
		return nil
	}
	a.overrides = over
	getenv := a.Getenv
	a.Getenv = func(k string) string {
		if v, ok := over[k]; ok {
			return v
		}
		return clikit.Getenv(getenv, k)
	}
	return nil
}

func (a *App) getenv(k string) string { return clikit.Getenv(a.Getenv, k) }

func (a *App) now() time.Time { return clikit.Now(a.Now) }

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
		return gyrumdir.Registry{}, clikit.Usagef("%v", err)
	}
	return gyrumdir.NewRegistry(home), nil
}

// agents returns $GYRUM_HOME/agents, the index of which agent holds which
// worktree's lease.
func (a *App) agents() (gyrumdir.AgentIndex, error) {
	home, err := gyrumdir.Home(a.getenv)
	if err != nil {
		return gyrumdir.AgentIndex{}, clikit.Usagef("%v", err)
	}
	return gyrumdir.NewAgentIndex(home), nil
}

// durations returns the loop's settings from the environment.
func (a *App) durations() (heartbeat.Durations, error) {
	d, err := heartbeat.DurationsFromEnv(a.getenv)
	if err != nil {
		return d, clikit.Usagef("%v", err)
	}
	return d, nil
}

// client returns a warp client for url ("" → WARP_URL, else the default);
// --url, when given, wins over both. The token (WARP_TOKEN or --token)
// goes only to the server WARP_URL (or --url) names
// (heartbeat.SameServer): url comes from a lease.json, which a repository
// can commit with a warp_url of its choosing.
func (a *App) client(serverURL string) *client.Client {
	if u, ok := a.overrides["WARP_URL"]; ok {
		serverURL = u
	}
	configured := a.getenv("WARP_URL")
	if serverURL == "" {
		serverURL = configured
	}
	token := a.getenv("WARP_TOKEN")
	if token != "" && !heartbeat.SameServer(serverURL, configured) {
		fmt.Fprintf(a.Stderr, "gyrum: the token was not sent to %s: the lease names another warp than WARP_URL (%s); only the lease's own secret goes there (give --url to send it there)\n",
			clikit.Clean(serverURL), clikit.Clean(firstOf(configured, client.DefaultURL)))
		token = ""
		a.withheld = clikit.Clean(serverURL)
	}
	return client.NewClient(serverURL, token).WithRetry(apiclient.Retry(a.Stderr, "gyrum"))
}

// findDir returns the .gyrum/ of --dir (which must hold one) or the nearest
// one above the working directory.
func (a *App) findDir(dirFlag string) (gyrumdir.Dir, error) {
	if dirFlag != "" {
		d, err := gyrumdir.Open(dirFlag)
		if err != nil {
			return d, clikit.Usagef("%v: was start-work run there?", err)
		}
		return d, nil
	}
	wd, err := a.getwd()
	if err != nil {
		return gyrumdir.Dir{}, fmt.Errorf("working directory: %w", err)
	}
	d, err := gyrumdir.Find(wd)
	if err != nil {
		return d, clikit.Usagef("%v: run this in a worktree prepared by 'gyrum start-work', or pass --dir", err)
	}
	return d, nil
}

// touchActivity is the hook's fast path: a hand-rolled --dir parse, then
// internal/hook. Silent, whatever happens.
func (a *App) touchActivity(args []string) {
	hook.Main(args, hook.Env{Stdin: a.stdin(), Stdout: a.Stdout, Getenv: a.getenv, Getwd: a.getwd, Now: a.now(), Ask: a.askEnd})
}

func (a *App) touchActivityCommand() *cobra.Command {
	var dir, agentName string
	cmd := &cobra.Command{
		Use:   "touch-activity [--dir D] [--agent NAME]",
		Short: "The agent's tool-call hook: record activity for the heartbeat loop",
		Example: `  gyrum touch-activity < payload.json        # what the agent's hook runs, payload on stdin
  gyrum touch-activity --dir ../wt-T-42 < /dev/null`,
		Long: `touch-activity is the hook Claude Code runs before and after every tool call
('gyrum setup' installs it). It reads the hook's JSON from stdin and finds the
.gyrum/ to update: with --dir, the one found walking up from it; else the
worktrees whose leases its agent holds (CLAUDE_PID in $GYRUM_HOME/agents/, so a
worktree made from inside a session is credited whatever the shell's cwd);
else the one found walking up from the payload's cwd, then the working
directory. It writes only into worktrees a start-work on this host prepared
($GYRUM_HOME/worktrees/); a .gyrum/ a repository commits is left alone.

  PreToolUse                       create .gyrum/in-flight/<tool_use_id>
  PostToolUse, PostToolUseFailure  remove that marker, touch .gyrum/last-activity
  anything else, or no payload     touch .gyrum/last-activity

It exits 0 whatever happens (no .gyrum/, garbage on stdin, a read-only
worktree, a FIFO or symlink in .gyrum/), so it can never break the agent. It
prints nothing, except once after the lease ended without the agent asking:
on the next PostToolUse/PostToolUseFailure it prints Claude Code's hook output
{"hookSpecificOutput":{"hookEventName":...,"additionalContext":"gyrum: your
lease on ticket ... "}}, which Claude Code shows the model (with --agent, that
agent's shape: GitHub Copilot CLI reads a top-level "additionalContext").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.touchActivity([]string{"--dir", dir, "--agent", agentName})
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "worktree to start the search from")
	cmd.Flags().StringVar(&agentName, "agent", "", "the agent running the hook, where its payload does not say (gyrum setup writes it: copilot)")
	return cmd
}

// hint says what to do about a failure, "" when there is nothing useful to
// say.
func (a *App) hint(f *clikit.Failure) string {
	var ae *client.APIError
	if errors.As(f.Err, &ae) {
		if ae.Guessed {
			return "" // not warp's answer: its codes' hints do not apply (Message says where to look)
		}
		switch ae.Code {
		case client.CodeUnauthorized, client.CodeForbidden:
			if a.withheld != "" {
				return "the token was kept from " + a.withheld + " (not WARP_URL's server): if that is your warp, run the command again with --url " + a.withheld
			}
			return "set WARP_TOKEN (or pass --token) to an agent token of the server (a line of its --token-file)"
		case client.CodeNotFound:
			return "check the ticket id ('warp ticket list' shows the open ones), or take the oldest open ticket with 'gyrum start-work --next'"
		case client.CodeNoOpenTicket:
			return "no open ticket matches: create one with 'warp ticket create', or drop --label"
		case client.CodeUnavailable:
			return "warp cannot reach its database: retry in a moment; an operator finds why in warp's log"
		}
		return ""
	}
	if apiclient.Unreachable(f.Err) {
		return "is warp running there? start it with 'warp serve', or point WARP_URL (or --url) at it"
	}
	return ""
}
