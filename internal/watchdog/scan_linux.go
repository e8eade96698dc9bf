package watchdog

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gyrum-labs/warp/internal/proc"
)

// candidate is a `gyrum heartbeat run` process found by the /proc scan.
type candidate struct {
	id  proc.Identity
	dir string // absolute
}

// scanLoops lists the `gyrum heartbeat run` processes of this user, with
// their worktree. Processes of other users are not this user's loops (and
// their registry is elsewhere), so they are never looked at.
func scanLoops() ([]candidate, error) {
	pids, err := proc.List()
	if err != nil {
		return nil, err
	}
	uid := uint32(os.Getuid())
	var out []candidate
	for _, pid := range pids {
		fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
			continue
		}
		// The identity first, the command line and directory after, then
		// the identity again: a loop that exits between the reads and whose
		// pid is taken at once would otherwise lend its --dir to an
		// unrelated process's identity, which the watchdog would signal.
		id, err := proc.Lookup(pid)
		if err != nil {
			continue
		}
		argv, err := proc.Cmdline(pid)
		if err != nil {
			continue
		}
		dir, ok := LoopDir(argv)
		if !ok {
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = resolveDir(pid, dir)
			if !filepath.IsAbs(dir) {
				continue // cannot tell which worktree: leave it alone
			}
		}
		if !id.Alive() {
			continue // gone (or its pid reused) while it was read
		}
		out = append(out, candidate{id: id, dir: filepath.Clean(dir)})
	}
	return out, nil
}

// resolveDir makes a loop's relative --dir absolute against the process's
// current directory; it returns dir unchanged when that cannot be read.
func resolveDir(pid int, dir string) string {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return dir
	}
	// The kernel marks a directory removed since with this suffix.
	cwd = strings.TrimSuffix(cwd, " (deleted)")
	return filepath.Join(cwd, dir)
}
