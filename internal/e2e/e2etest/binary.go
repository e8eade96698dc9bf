package e2etest

// The suites run the gyrum and gyrum-hook that Main builds with `go
// build` (warptest.BuildGyrum), a subprocess whose inputs go test's cache
// does not see: a change to the hook, start-work or setup alone would
// leave a suite's cached result standing. These imports put the code of
// both binaries into every suite's test binary, so its cached result goes
// with that code.
import (
	_ "github.com/gyrum-labs/warp/internal/gyrumcli"
	_ "github.com/gyrum-labs/warp/internal/hook"
)
