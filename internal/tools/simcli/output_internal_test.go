package simcli

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/clikit/clikittest"
)

// Every command of the tree that has --json (warpsim itself, version) also
// has -o/--output.
func TestEveryJSONCommandHasOutputFlag(t *testing.T) {
	clikittest.CheckOutputFlags(t, (&CLI{}).rootCommand(), 2)
}
