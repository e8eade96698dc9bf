// Command gyrum-loop is gyrum's heartbeat loop alone: what
// `gyrum heartbeat run` does, in a binary that links only the loop's code
// path and speaks plain HTTP without net/http or TLS, because a loop lives
// as long as its agent, one per agent on a host, and the whole gyrum CLI
// held in memory costs about twice as much. `gyrum start-work` spawns it
// when it sits beside gyrum and the lease's server is http:// (for https
// the loop runs in gyrum), as
//
//	gyrum-loop heartbeat run --dir WORKTREE --schema-version 1|2
//
// (the words of `gyrum heartbeat run`, so release, complete-pr, the
// watchdog and doctor recognise it by its command line like the other).
// Exit codes: 0 after a loop that ran, 1 when it could not start, 2 on a
// bad command line or settings.
//
// GOMAXPROCS is set once at start (from the CPUs and the cgroup's limit),
// not rechecked: the runtime would otherwise read the cgroup's CPU limit
// again each second the loop is awake, for a process that runs one
// goroutine's worth of work.
//
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/heartbeat"
)

const usage = `usage: gyrum-loop heartbeat run --dir WORKTREE [--schema-version 1|2]

The activity-gated heartbeat loop of one worktree (see 'gyrum heartbeat run
--help' for what it does). gyrum start-work spawns it; run by hand, it is for
debugging.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stderr, os.Getenv))
}

func run(args []string, stderr io.Writer, getenv func(string) string) int {
	dir, schema, err := parse(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stderr, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gyrum-loop: %v\n%s", err, usage)
		return 2
	}
	d, err := gyrumdir.Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "gyrum-loop: %v: was start-work run there?\n", err)
		return 2
	}
	// No TLS: start-work runs gyrum heartbeat run for an https server.
	if err := heartbeat.Detached(context.Background(), d, schema, getenv, nil); err != nil {
		fmt.Fprintf(stderr, "gyrum-loop: %v\n", err)
		if errors.Is(err, heartbeat.ErrSettings) {
			return 2
		}
		return 1
	}
	return 0
}

var errHelp = errors.New("help")

// parse reads `heartbeat run --dir D [--schema-version N]`.
func parse(args []string) (dir string, schema int, err error) {
	schema = 2
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "-h", "--help", "-help":
			return "", 0, errHelp
		case "--dir", "-dir", "--schema-version", "-schema-version":
			if !hasVal {
				if i+1 >= len(args) {
					return "", 0, fmt.Errorf("%s needs a value", name)
				}
				i++
				val = args[i]
			}
			if strings.HasSuffix(name, "dir") {
				dir = val
			} else if schema, err = strconv.Atoi(val); err != nil || (schema != 1 && schema != 2) {
				return "", 0, fmt.Errorf("--schema-version %q: want 1 or 2", val)
			}
		default:
			if strings.HasPrefix(a, "-") {
				return "", 0, fmt.Errorf("unknown flag %s", a)
			}
			words = append(words, a)
		}
	}
	if len(words) != 2 || words[0] != "heartbeat" || words[1] != "run" {
		return "", 0, fmt.Errorf("want the words 'heartbeat run', got %q", strings.Join(words, " "))
	}
	if dir == "" {
		return "", 0, errors.New("--dir is required")
	}
	return dir, schema, nil
}
