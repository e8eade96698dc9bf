package watchdog

import "github.com/gyrum-labs/warp/internal/proc"

// candidate is a `gyrum heartbeat run` process found by the process scan.
type candidate struct {
	id  proc.Identity
	dir string
}

// scanLoops finds nothing on macOS: the design scans /proc on Linux only,
// and there the registry alone is swept.
func scanLoops() ([]candidate, error) { return nil, nil }

// resolveDir returns dir unchanged: macOS offers no portable way to read
// another process's current directory.
func resolveDir(pid int, dir string) string { return dir }
