// Command gyrum is the agent side of warp. The behaviour lives in
// internal/gyrumcli; main only wires the process to it: arguments, standard
// streams and the exit code. Signals are handled by the commands that need
// them (heartbeat run, start-work -- CMD).
package main

import (
	"context"
	"os"

	"github.com/gyrum-labs/warp/internal/gyrumcli"
)

func main() {
	os.Exit(gyrumcli.Execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
