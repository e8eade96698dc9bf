// Command warp is the coordination server and its operator CLI. The
// behaviour lives in internal/warpcli; main only wires the process to it:
// arguments, standard streams, SIGINT/SIGTERM and the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gyrum-labs/warp/internal/warpcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := warpcli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
