package gyrumcli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/proc"
)

// benchHome is the GYRUM_HOME of the benchmarks' hooks.
var benchHome string

// benchWorktree is a worktree prepared like start-work does: .gyrum/ with
// a lease, recorded as prepared in benchHome (the hook writes only there).
func benchWorktree(b *testing.B) gyrumdir.Dir {
	b.Helper()
	d, err := gyrumdir.Create(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d.WriteLease(gyrumdir.Lease{Ticket: "T-b", Epoch: 1, WarpURL: "http://127.0.0.1:9"})
	d.TouchActivity(time.Now().Add(-time.Hour))
	benchHome = b.TempDir()
	if err := gyrumdir.NewPrepared(benchHome).Add(d.Worktree); err != nil {
		b.Fatal(err)
	}
	return d
}

// hookEnv is the environment of an exec'd benchmark hook.
func hookEnv() []string { return append(os.Environ(), "GYRUM_HOME="+benchHome, "CLAUDE_PID=") }

// mustHaveTouched fails b when the hook did not move d's last-activity:
// a benchmark of a hook that does nothing measures nothing.
func mustHaveTouched(b *testing.B, d gyrumdir.Dir) {
	b.Helper()
	if at, err := d.LastActivity(); err != nil || time.Since(at) > time.Minute {
		b.Fatalf("the hook did not touch %s: %v %v", d.Path, at, err)
	}
}

// call makes payload the i-th call: its own tool_use_id, as an agent
// gives every call (a repeated event of one call is credited once, which
// costs less).
func call(payload []byte, i int) []byte {
	return bytes.Replace(payload, []byte(`"tool_use_id":"toolu_`), []byte(`"tool_use_id":"toolu_`+strconv.Itoa(i)+`_`), 1)
}

// BenchmarkTouchActivity execs `gyrum touch-activity` with a PostToolUse
// payload, as Claude Code does after every tool call.
func BenchmarkTouchActivity(b *testing.B) {
	d := benchWorktree(b)
	payload := []byte(`{"session_id":"abc123","transcript_path":"/t.jsonl","cwd":"` + d.Worktree +
		`","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},` +
		`"tool_response":{"stdout":"ok","stderr":"","interrupted":false},"tool_use_id":"toolu_01ABC123"}`)
	b.ResetTimer()
	for i := range b.N {
		cmd := exec.Command(gyrumBin, "touch-activity")
		cmd.Stdin, cmd.Env = bytes.NewReader(call(payload, i)), hookEnv()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	mustHaveTouched(b, d)
}

// BenchmarkTouchActivityAgentIndex: the same as Claude Code runs it from a
// session whose lease is in another worktree: CLAUDE_PID set, the payload's
// cwd the project, the lease found through $GYRUM_HOME/agents.
func BenchmarkTouchActivityAgentIndex(b *testing.B) {
	d := benchWorktree(b)
	home := b.TempDir()
	self, err := proc.Self()
	if err != nil {
		b.Fatal(err)
	}
	if err := gyrumdir.NewAgentIndex(home).Add(self, d.Worktree); err != nil {
		b.Fatal(err)
	}
	project := b.TempDir()
	payload := []byte(`{"session_id":"abc123","transcript_path":"/t.jsonl","cwd":"` + project +
		`","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},` +
		`"tool_response":{"stdout":"ok","stderr":"","interrupted":false},"tool_use_id":"toolu_01ABC123"}`)
	env := append(os.Environ(), "CLAUDE_PID="+strconv.Itoa(self.PID), "GYRUM_HOME="+home)
	before, _ := d.LastActivity()
	b.ResetTimer()
	for i := range b.N {
		cmd := exec.Command(gyrumBin, "touch-activity")
		cmd.Stdin, cmd.Env = bytes.NewReader(call(payload, i)), env
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if after, _ := d.LastActivity(); !after.After(before) {
		b.Fatal("the hook did not credit the agent's worktree")
	}
}

// BenchmarkTouchActivityLargePayload: the same with a 1 MiB tool_response.
func BenchmarkTouchActivityLargePayload(b *testing.B) {
	d := benchWorktree(b)
	payload := []byte(`{"cwd":"` + d.Worktree + `","hook_event_name":"PostToolUse","tool_name":"Read","tool_response":{"content":"` +
		strings.Repeat("x", 1<<20) + `"},"tool_use_id":"toolu_big"}`)
	b.ResetTimer()
	for i := range b.N {
		cmd := exec.Command(gyrumBin, "touch-activity")
		cmd.Stdin, cmd.Env = bytes.NewReader(call(payload, i)), hookEnv()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	mustHaveTouched(b, d)
}

// BenchmarkTouch execs coreutils touch on the same file: the floor.
func BenchmarkTouch(b *testing.B) {
	d := benchWorktree(b)
	touch, err := exec.LookPath("touch")
	if err != nil {
		b.Skip("no touch")
	}
	f := d.File(gyrumdir.ActivityFile)
	b.ResetTimer()
	for range b.N {
		if err := exec.Command(touch, f).Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuOf returns utime+stime of pid in clock ticks (/proc/PID/stat fields
// 14 and 15) and the on-CPU time of its threads' schedstat in ns (0 when
// absent; threads that ended are not counted there).
func cpuOf(b *testing.B, pid int) (ticks int64, ns int64) {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	// schedstat is per thread: sum the process's threads.
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		if s, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name())); err == nil {
			v, _ := strconv.ParseInt(strings.Fields(string(s))[0], 10, 64)
			ns += v
		}
	}
	return ut + st, ns
}

// switches sums the voluntary and involuntary context switches of pid's threads.
func switches(pid int) int64 {
	var n int64
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasSuffix(strings.SplitN(line, ":", 2)[0], "voluntary_ctxt_switches") {
				v, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ":", 2)[1]), 10, 64)
				n += v
			}
		}
	}
	return n
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on Linux.
const clockTicks = 100

func rssKiB(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkLoopTick runs a real detached loop (interval 0.5 s, real warp
// in this process) and measures it over b.N ticks: CPU per tick from
// utime+stime and from the threads' schedstat (ns resolution), context
// switches per tick, and the resident set size at the end. Run with
// -benchtime=20x: ns/op is the tick interval, the metrics are the result.
func BenchmarkLoopTick(b *testing.B) { loopTick(b, "3600") }

// BenchmarkLoopTickSampling: the same loop when its evidence is near stale,
// so every tick also samples the process tree (every /proc/PID/stat).
func BenchmarkLoopTickSampling(b *testing.B) { loopTick(b, "1") }

func loopTick(b *testing.B, staleness string) {
	e := &env{ws: newWarp(b), home: b.TempDir()}
	e.vars = map[string]string{"WARP_URL": e.ws.URL(), "GYRUM_HOME": e.home, "HEARTBEAT_INTERVAL_SECS": "0.5",
		"HEARTBEAT_ACTIVITY_STALENESS_SECS": staleness, "CLAUDE_PID": "", "GYRUM_AGENT_PROCESS": ""}
	e.ws.Create("T-bench")
	sleep := exec.Command("sleep", "100000")
	if err := sleep.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	wt := b.TempDir()
	cmd := exec.Command(gyrumBin, "start-work", "T-bench", "--watch-pid", strconv.Itoa(sleep.Process.Pid), "--json")
	cmd.Dir, cmd.Env = wt, e.environ()
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("start-work: %v", err)
	}
	var pid int
	fmt.Sscanf(string(out[bytes.Index(out, []byte(`"loop_pid": `))+len(`"loop_pid": `):]), "%d", &pid)
	loop, err := proc.Lookup(pid)
	if err != nil {
		b.Fatal(err)
	}
	defer proc.Stop(context.Background(), loop, time.Second)
	for e.ws.Count() < 3 { // warm up: connections, first allocations
		time.Sleep(5 * time.Millisecond)
	}
	start := e.ws.Count()
	t0, n0 := cpuOf(b, pid)
	w0 := switches(pid)
	b.ResetTimer()
	for e.ws.Count() < start+b.N {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	t1, n1 := cpuOf(b, pid)
	w1 := switches(pid)
	ticks := float64(e.ws.Count() - start)
	b.ReportMetric(float64(w1-w0)/ticks, "ctxsw/tick")
	b.ReportMetric(float64(t1-t0)*1e6/clockTicks/ticks, "cpu-µs/tick")
	if n1 > 0 {
		b.ReportMetric(float64(n1-n0)/1e3/ticks, "sched-µs/tick")
	}
	b.ReportMetric(rssKiB(b, pid), "rss-KiB")
}
