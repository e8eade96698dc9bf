// Package simcli is the warpsim command: the fleet simulator of package sim
// behind flags, a table or JSON report and an exit status. It is a package
// so tests run it in-process with their own output writers; cmd/warpsim
// only wires it to the process (and hands its arguments to sim.StandIn
// first: the simulator's stand-ins are warpsim started again).
package simcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/tools/sim"
	"github.com/gyrum-labs/warp/internal/warp"
)

// Exit codes of warpsim (those of clikit, and one of its own).
const (
	ExitOK    = clikit.ExitOK
	ExitError = clikit.ExitError // a claim does not hold, or the run failed
	ExitUsage = clikit.ExitUsage // bad flags or arguments
	// ExitTooLoaded: the claims were not judged, the machine did not keep
	// up with the time scale.
	ExitTooLoaded = 3
)

// CLI runs warpsim. The zero value writes nowhere; set at least Stdout and
// Stderr.
type CLI struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Execute runs the command line args (without the program name), writing
// to stdout and stderr, and returns the exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &CLI{Stdout: stdout, Stderr: stderr}
	return c.Run(ctx, args)
}

// Run runs the command line args (without the program name) and returns
// the exit code: 0 every claim holds, 1 one does not (or the run failed),
// 2 usage error, 3 the machine was too loaded to judge the claims.
func (c *CLI) Run(ctx context.Context, args []string) int {
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	return clikit.Execute(ctx, c.rootCommand(), args, clikit.Report{})
}

// options are warpsim's flags that need parsing before they go in a
// sim.Config.
type options struct {
	client, mode, gyrum string
	asJSON, silent      bool
}

func (c *CLI) rootCommand() *cobra.Command {
	var (
		cfg sim.Config
		o   options
	)
	root := &cobra.Command{
		Use:   "warpsim [flags]",
		Short: "Run a simulated fleet on real processes and check that the heartbeat tells the truth",
		Long:  long,
		Example: `  go build -o bin/ ./cmd/... && bin/warpsim
  bin/warpsim --client v1 --mode legacy
  bin/warpsim --client mixed --watchdog --json
  bin/warpsim --time-scale 200     # a slow or busy machine`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if err := o.complete(&cfg); err != nil {
				return err
			}
			cfg.Logger = c.logger(o.silent)
			rep, err := sim.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return c.report(rep, o.asJSON)
		}),
	}
	f := root.Flags()
	f.StringVar(&cfg.Scenario, "scenario", sim.ScenarioADR138, "scenario to run")
	clikit.IntVar(f, &cfg.Agents, "agents", sim.DefaultAgents, "simulated agents (the scenario keeps its proportions)")
	f.Float64Var(&cfg.TimeScale, "time-scale", sim.DefaultTimeScale, "divide every product duration by this")
	f.StringVar(&o.client, "client", string(sim.ClientV2), "heartbeat client: v2 (gyrum), v1 (unmigrated hosts: gyrum --schema-version 1) or mixed (the second agent of each class, and every third after it, on a v1 host)")
	f.StringVar(&o.mode, "mode", string(warp.DefaultMode), "expiry mode of the embedded warp: legacy, transition or activity")
	f.BoolVar(&cfg.Watchdog, "watchdog", false, "run 'gyrum watchdog sweep' every 5 min (scaled) and once at the end")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.StringVar(&o.gyrum, "gyrum", "", "the gyrum binary (default: next to this executable, else PATH)")
	f.BoolVar(&o.silent, "quiet", false, "no progress lines on stderr")
	clikit.SetupRoot(root, c.Stdout, c.Stderr)
	// --version, version, completion, gen-man, -o/--output.
	clikit.Install(root)
	return root
}

// complete checks the flags and fills the rest of cfg from them: a bad
// value is a usage error, before anything starts.
func (o *options) complete(cfg *sim.Config) error {
	cl, err := sim.ParseClient(o.client)
	if err != nil {
		return clikit.Usagef("--client: %s", warp.ErrorMessage(err))
	}
	m, err := warp.ParseMode(o.mode)
	if err != nil {
		return clikit.Usagef("--mode: %s", warp.ErrorMessage(err))
	}
	if cfg.TimeScale < sim.MinTimeScale || cfg.TimeScale > sim.MaxTimeScale || cfg.TimeScale != cfg.TimeScale {
		return clikit.Usagef("--time-scale %v: want %d to %d", cfg.TimeScale, sim.MinTimeScale, sim.MaxTimeScale)
	}
	if cfg.Agents < sim.MinAgents || cfg.Agents > sim.MaxAgents {
		return clikit.Usagef("--agents %d: want %d to %d", cfg.Agents, sim.MinAgents, sim.MaxAgents)
	}
	if cfg.Scenario != sim.ScenarioADR138 {
		return clikit.Usagef("--scenario %q: the only scenario is %s", cfg.Scenario, sim.ScenarioADR138)
	}
	cfg.Client, cfg.Mode = cl, m
	if cfg.Gyrum, err = sim.FindGyrum(o.gyrum); err != nil {
		return clikit.Usagef("%v", err)
	}
	return nil
}

// logger writes the run's progress lines to stderr; only warnings with
// --quiet.
func (c *CLI) logger(silent bool) *slog.Logger {
	level := slog.LevelInfo
	if silent {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(c.Stderr, &slog.HandlerOptions{Level: level}))
}

// report prints rep and turns its verdict into the exit status.
func (c *CLI) report(rep *sim.Report, asJSON bool) error {
	var err error
	if asJSON {
		err = clikit.PrintJSON(c.Stdout, rep)
	} else {
		err = rep.WriteTable(c.Stdout)
	}
	if err != nil {
		return err
	}
	if rep.Verdict == sim.VerdictTooLoaded {
		// The claims were not judged: exit ExitTooLoaded, saying why once —
		// the table already ends with it; beside JSON it goes to stderr.
		if !asJSON {
			return clikit.Exit(ExitTooLoaded)
		}
		return clikit.WithExitCode(ExitTooLoaded, errors.New(rep.TooLoaded()))
	}
	if !rep.OK {
		failed := 0
		for _, ch := range rep.Checks {
			if !ch.OK {
				failed++
			}
		}
		return fmt.Errorf("%d of %d claims do not hold for client %s in %s mode (see the report)", failed, len(rep.Checks), rep.Client, rep.Mode)
	}
	return nil
}

const long = `warpsim runs a fleet of simulated agents against an embedded warp and reports,
per class of agent, whether the product kept its claims: every orphaned or
wedged agent's lease lapses within the lease window + one tick, no healthy
agent loses its lease, no heartbeat claims progress after a failure (a wedged
agent's loop sends stale reports until the lapse; an orphan's loop one exit
report), every agent whose lease ended under it is told on its next tool call,
no loop is left behind, and no operator action is needed.

Everything is real except time: warp runs in-process on 127.0.0.1 with a
temporary SQLite file; every agent is a watched stand-in process named claude
(warpsim started again) that starts its tool calls' processes as its own
children (a sleep for each foreground Bash call, a job using a little CPU for
each background one), a real 'gyrum start-work' with its detached heartbeat
loop, and the real 'gyrum touch-activity' hook run with Claude Code hook
payloads and CLAUDE_PID. Every product duration is divided by --time-scale
(600: the 240 s heartbeat interval becomes 0.4 s, the 30 min lease window 3 s).

The adr-138 scenario replays the night of the decision record with agents
that behave like the measured Claude Code: 30 agents, 6 orphans (watched
process SIGKILLed; 3 of them with the worktree deleted), 4 wedged agents
(alive, no more tool calls) and 2 wedged after a denied call (PreToolUse, no
Post event), healthy agents with a 10-minute foreground call and a 20- or
40-minute background job (no hook while it works), healthy agents idle
between bursts (with a denied call and failing Bash calls), healthy agents
whose hook cwd is the project, not the worktree, 2 agents whose lease an
operator releases mid-run (the next PostToolUse hook tells them), and a warp
restart on the same database and port. --client v1 --mode legacy shows the
pre-ADR world.

The simulator judges its own timing: the scale divides product time, not the
machine's latencies. When the machine runs it too late for the time scale (at
p95: the loops' heartbeats arriving late, the embedded warp answering slowly or
the background jobs' CPU bursts ending late by over a quarter of the scaled
heartbeat interval; its scheduled actions running late or the hook's execs
taking over half of it), or cannot give the background jobs the CPU the scale
asks for, it prints "machine too loaded for --time-scale N: ...; rerun with
--time-scale M" and does not judge the claims.

warpsim needs the gyrum binary: --gyrum, else one next to this warpsim
binary, else PATH (build them all with 'go build -o bin/ ./cmd/...'; a
release ships them side by side). It only signals processes it started and
removes its temporary directory when it ends, also on Ctrl-C.

Exit status: 0 when every claim holds, 1 when one does not,
3 when the machine was too loaded to judge them.`
