package warpcli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/sim"
	"github.com/gyrum-labs/warp/internal/warp"
)

func (c *CLI) simulateCommand() *cobra.Command {
	var (
		cfg            sim.Config
		client, mode   string
		gyrum          string
		asJSON, silent bool
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run a simulated fleet on real processes and check that the heartbeat tells the truth",
		Long: `Run a fleet of simulated agents against an embedded warp and report, per class
of agent, whether the product kept its claims: every orphaned or wedged agent's
lease lapses within the lease window + one tick, no healthy agent loses its
lease, no heartbeat claims progress after a failure (a wedged agent's loop
sends stale reports until the lapse; an orphan's loop one exit report), every
agent whose lease ended under it is told on its next tool call, no loop is
left behind, and no operator action is needed.

Everything is real except time: warp runs in-process on 127.0.0.1 with a
temporary SQLite file; every agent is a watched stand-in process named claude
that starts its tool calls' processes as its own children (a sleep for each
foreground Bash call, a job using a little CPU for each background one), a
real 'gyrum start-work' with its detached heartbeat loop, and the real
'gyrum touch-activity' hook run with Claude Code hook payloads and CLAUDE_PID.
Every product duration is divided by --time-scale (600: the 240 s heartbeat
interval becomes 0.4 s, the 30 min lease window 3 s).

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

The simulator needs the gyrum binary: --gyrum, else one next to this warp
binary, else PATH (build both with 'go build -o bin/ ./cmd/...'). It only
signals processes it started and removes its temporary directory when it ends,
also on Ctrl-C. Exit status 0 when every claim holds, 1 when one does not,
3 when the machine was too loaded to judge them.`,
		Example: `  go build -o bin/ ./cmd/... && bin/warp simulate
  bin/warp simulate --client v1 --mode legacy
  bin/warp simulate --client mixed --watchdog --json
  bin/warp simulate --time-scale 200     # a slow or busy machine`,
		Args: cobra.NoArgs,
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			cl, err := sim.ParseClient(client)
			if err != nil {
				return clikit.Usagef("--client: %s", warp.ErrorMessage(err))
			}
			m, err := warp.ParseMode(mode)
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
			if cfg.Gyrum, err = sim.FindGyrum(gyrum); err != nil {
				return clikit.Usagef("%v", err)
			}
			level := slog.LevelInfo
			if silent {
				level = slog.LevelWarn
			}
			cfg.Logger = slog.New(slog.NewTextHandler(c.Stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := sim.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				err = c.printJSON(rep)
			} else {
				err = rep.WriteTable(c.Stdout)
			}
			if err != nil {
				return err
			}
			if rep.Verdict == sim.VerdictTooLoaded {
				// The claims were not judged: exit ExitTooLoaded.
				return clikit.WithExitCode(ExitTooLoaded, errors.New(rep.TooLoaded()))
			}
			if !rep.OK {
				failed := 0
				for _, ch := range rep.Checks {
					if !ch.OK {
						failed++
					}
				}
				return fmt.Errorf("%d of %d claims do not hold for client %s in %s mode (see the report)", failed, len(rep.Checks), cl, m)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Scenario, "scenario", sim.ScenarioADR138, "scenario to run")
	clikit.IntVar(f, &cfg.Agents, "agents", sim.DefaultAgents, "simulated agents (the scenario keeps its proportions)")
	f.Float64Var(&cfg.TimeScale, "time-scale", sim.DefaultTimeScale, "divide every product duration by this")
	f.StringVar(&client, "client", string(sim.ClientV2), "heartbeat client: v2 (gyrum), v1 (unmigrated hosts: gyrum --schema-version 1) or mixed (the second agent of each class, and every third after it, on a v1 host)")
	f.StringVar(&mode, "mode", string(warp.DefaultMode), "expiry mode of the embedded warp: legacy, transition or activity")
	f.BoolVar(&cfg.Watchdog, "watchdog", false, "run 'gyrum watchdog sweep' every 5 min (scaled) and once at the end")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&gyrum, "gyrum", "", "the gyrum binary (default: next to this executable, else PATH)")
	f.BoolVar(&silent, "quiet", false, "no progress lines on stderr")
	return cmd
}
