package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// ErrSettings marks a loop that cannot start because of its settings (the
// environment): the CLI reports it as a usage error.
var ErrSettings = errors.New("bad settings")

// Detached runs the loop of worktree d as `gyrum heartbeat run` does: it
// logs to .gyrum/heartbeat.log, reads its settings (HEARTBEAT_*,
// GYRUM_HOME, WARP_TOKEN and the WARP_URL it is for) through getenv, runs
// on one P unless GOMAXPROCS is set, and ends on SIGTERM, SIGINT or SIGHUP
// (unless started with SIGHUP ignored: nohup). The error is for a loop
// that could not start; it is logged too.
func Detached(ctx context.Context, d gyrumdir.Dir, schema int, getenv func(string) string) error {
	lg, err := d.OpenLog(gyrumdir.DefaultLogMax)
	if err != nil {
		return err
	}
	defer lg.Close()
	logger := slog.New(slog.NewTextHandler(lg, nil))
	fail := func(err error) error {
		logger.Error("loop cannot start", "err", err)
		return err
	}
	dur, err := DurationsFromEnv(getenv)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrSettings, err))
	}
	home, err := gyrumdir.Home(getenv)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrSettings, err))
	}
	loop, err := New(Config{Dir: d, Registry: gyrumdir.NewRegistry(home), Agents: gyrumdir.NewAgentIndex(home), Prepared: gyrumdir.NewPrepared(home),
		Token: getenv("WARP_TOKEN"), Server: getenv("WARP_URL"), Durations: dur, SchemaVersion: schema, Logger: logger})
	if err != nil {
		return fail(err)
	}
	if getenv("GOMAXPROCS") == "" {
		// One tick at a time: a single P saves threads and wake-ups.
		runtime.GOMAXPROCS(1)
	}
	if getenv("GOGC") == "" {
		// The live heap is a few hundred KiB and a tick allocates tens of
		// KiB: the default GOGC lets ~4 MiB of garbage stay resident
		// between collections, for a process that idles for minutes. A
		// collection of so small a heap costs tens of microseconds.
		debug.SetGCPercent(25)
	}
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	if !signal.Ignored(syscall.SIGHUP) {
		// A loop started under nohup (doctor's restart command) must
		// outlive the terminal: Notify would undo nohup's ignoring it.
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(ctx, sigs...)
	defer stop()
	if _, err := loop.Run(ctx); err != nil {
		return fail(err)
	}
	return nil
}
