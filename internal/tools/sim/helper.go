package sim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gyrum-labs/warp/internal/proc"
)

// The stand-ins for Claude Code and for the background work it starts are
// this very executable, started again with StandInFlag as its first
// argument (the re-exec pattern): a run needs a watched process that starts
// children on request and jobs that use a measured amount of CPU, on every
// machine that runs the simulator, without a compiler or a script. The
// program that calls Run hands its arguments to StandIn first thing in
// main (warpsim does; so does this package's TestMain), so a stand-in never
// reaches the program proper. Nothing in the environment selects them.
const (
	// StandInFlag, as the first argument, makes StandIn run a stand-in.
	StandInFlag = "--stand-in"
	helperAgent = "agent" // the watched stand-in: agentHelper; then JOB_BIN
	helperJob   = "job"   // a background job: jobHelper; then its arguments
)

// StandIn runs the stand-in args (a program's os.Args) ask for, if they
// ask for one: PROG --stand-in agent JOB_BIN, or PROG --stand-in job
// SECONDS BURST_MS PERIOD_MS, as Run starts them. It returns the exit code
// and true then; false when args are not a stand-in's.
func StandIn(args []string) (code int, ok bool) {
	if len(args) < 3 || args[1] != StandInFlag {
		return 0, false
	}
	switch args[2] {
	case helperAgent:
		if len(args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: claude --stand-in agent JOB_BIN")
			return 2, true
		}
		return agentHelper(os.Stdin, os.Stdout, args[3]), true
	case helperJob:
		return jobHelper(args[3:]), true
	}
	return 0, false
}

// agentHelper is the watched stand-in for Claude Code. Like the real client
// it starts the processes of the agent's tool calls as its own children,
// so the heartbeat loop sees them as the agent's descendants. It reads one
// command a line on in:
//
//	fg ID SECONDS                  a foreground Bash call: sleep SECONDS
//	bg ID SECONDS BURST_MS PERIOD  a background job: BURST_MS of CPU every PERIOD ms
//	end ID                         the call ID ended: kill its process if it still runs
//
// and answers each start on out with "started ID PID STARTTIME" (or "error
// ID MESSAGE"), so the simulator can stop what an orphaned stand-in leaves
// behind; a job's "late ID NANOSECONDS" lines say how late each of its CPU
// bursts ended. At the end of in (the simulator closed the pipe, or died)
// it kills its children and exits.
func agentHelper(in io.Reader, out io.Writer, jobBin string) int {
	var mu sync.Mutex // out and children
	children := map[string]*exec.Cmd{}
	var wg sync.WaitGroup
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	start := func(id string, cmd *exec.Cmd) {
		if err := cmd.Start(); err != nil {
			say("error %s %s", id, strings.ReplaceAll(err.Error(), "\n", " "))
			return
		}
		mu.Lock()
		children[id] = cmd
		mu.Unlock()
		wg.Go(func() {
			_ = cmd.Wait()
			mu.Lock()
			if children[id] == cmd {
				delete(children, id)
			}
			mu.Unlock()
		})
		if p, err := proc.Lookup(cmd.Process.Pid); err == nil {
			say("started %s %d %d", id, p.PID, p.StartTime)
		}
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "fg":
			start(f[1], exec.Command("sleep", f[2]))
		case len(f) == 5 && f[0] == "bg" && jobBin != "":
			cmd := exec.Command(jobBin, StandInFlag, helperJob, f[2], f[3], f[4])
			cmd.Args[0] = "sim-job"
			// The job says how late each burst ran; pass it on.
			r, w, err := os.Pipe()
			if err != nil {
				say("error %s %s", f[1], err)
				continue
			}
			cmd.Stdout = w
			start(f[1], cmd)
			w.Close()
			id := f[1]
			wg.Go(func() {
				defer r.Close()
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					if late, ok := strings.CutPrefix(sc.Text(), "late "); ok {
						say("late %s %s", id, late)
					}
				}
			})
		case len(f) == 2 && f[0] == "end":
			mu.Lock()
			if c := children[f[1]]; c != nil {
				_ = c.Process.Kill()
			}
			mu.Unlock()
		default:
			say("error - unknown command %q", sc.Text())
		}
	}
	mu.Lock()
	for _, c := range children {
		_ = c.Process.Kill()
	}
	mu.Unlock()
	wg.Wait()
	return 0
}

// jobHelper is a background job: SECONDS long, it uses BURST_MS of CPU
// (measured, not wall clock: a loaded machine gets the same work) at the
// start of every PERIOD_MS, and prints "late NANOSECONDS" for each burst:
// how much later than planned it ended (a burst that ends past its period
// makes the next ones wait: they are not caught up). It ends early when its
// parent dies, as a job of a killed session would be reaped with it.
func jobHelper(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sim-job --stand-in job SECONDS BURST_MS PERIOD_MS")
		return 2
	}
	secs, err1 := strconv.ParseFloat(args[0], 64)
	burst, err2 := strconv.ParseFloat(args[1], 64)
	period, err3 := strconv.ParseFloat(args[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || period <= 0 {
		fmt.Fprintln(os.Stderr, "sim-job: bad arguments", args)
		return 2
	}
	parent := os.Getppid()
	begin := time.Now()
	deadline := begin.Add(time.Duration(secs * float64(time.Second)))
	every := time.Duration(period * float64(time.Millisecond))
	work := time.Duration(burst * float64(time.Millisecond))
	slot := begin
	for time.Now().Before(deadline) {
		burn(work, deadline)
		if os.Getppid() != parent {
			return 0
		}
		if end := slot.Add(work); end.Before(deadline) {
			fmt.Printf("late %d\n", max(time.Since(end), 0))
		}
		// The next burst starts at the next multiple of the period.
		n := time.Since(begin)/every + 1
		slot = begin.Add(n * every)
		time.Sleep(time.Until(earliest(slot, deadline)))
	}
	return 0
}

// burn spins until the process has used d more CPU time, or deadline.
func burn(d time.Duration, deadline time.Time) uint64 {
	start := cpuTime()
	x := uint64(1)
	for i := 1; ; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i%20000 == 0 && (cpuTime()-start >= d || time.Now().After(deadline)) {
			return x
		}
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func earliest(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.Before(t) {
			t = u
		}
	}
	return t
}
