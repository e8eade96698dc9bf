// Command warpsim is the fleet simulator: a simulated fleet of real
// processes against an embedded warp, and a verdict on the product's
// claims. The behaviour lives in internal/tools/simcli; main only wires the
// process to it: arguments, standard streams, SIGINT/SIGTERM and the exit
// code. The simulator's stand-ins (the watched agent named claude, its
// background jobs) are this binary started again with sim.StandInFlag
// first; they are handed to sim.StandIn before anything else.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gyrum-labs/warp/internal/tools/sim"
	"github.com/gyrum-labs/warp/internal/tools/simcli"
)

func main() {
	if code, ok := sim.StandIn(os.Args); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := simcli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
