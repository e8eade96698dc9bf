package warptest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gyrum-labs/warp/internal/proc"
)

// AgentTree is a real process tree of two agents, a Claude Code and a
// Codex the Claude Code started, each a copy of /bin/sh bearing the
// agent's name:
//
//	claude ─┬─ codex ── sleep   (UnderCodex: a tool call of Codex)
//	        └─ sh ── sleep      (UnderClaude: a tool call of the Claude Code)
type AgentTree struct {
	Claude, Codex, UnderCodex, UnderClaude int
}

// StartAgentTree starts an AgentTree, killed at cleanup. Linux only (it
// tells the processes apart by /proc); it skips elsewhere.
func StartAgentTree(t testing.TB) AgentTree {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the agent tree is read from /proc")
	}
	dir := t.TempDir()
	named := func(name string) string {
		data, err := os.ReadFile("/bin/sh")
		if err != nil {
			t.Skip("no /bin/sh")
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	claude, codex := named("claude"), named("codex")
	// A multi-call /bin/sh (busybox) runs under its own name only.
	if err := exec.Command(claude, "-c", "exit 0").Run(); err != nil {
		t.Skipf("a copy of /bin/sh does not run under another name (%v)", err)
	}
	cmd := exec.Command(claude, "-c",
		codex+` -c 'sleep 1000 & echo $$; echo $!; wait' & sh -c 'sleep 1000 & echo $!; wait' & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group
		cmd.Wait()
	})
	tr := AgentTree{Claude: cmd.Process.Pid}
	r := bufio.NewReader(out)
	for range 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the agent tree's pids: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatal(err)
		}
		// The shells print in either order: tell the pids apart by parent,
		// once each is what it will stay (a child just forked bears its
		// shell's name until it execs sleep).
		var in proc.Info
		WaitFor(t, "the agent tree's processes to settle", func() bool {
			in, err = proc.Stat(pid)
			return err != nil || in.PPID == tr.Claude || in.Name == "sleep"
		})
		if err != nil {
			t.Fatal(err)
		}
		switch parent, _ := proc.Stat(in.PPID); {
		case in.PPID == tr.Claude:
			tr.Codex = pid
		case parent.Name == "codex":
			tr.UnderCodex = pid
		default:
			tr.UnderClaude = pid
		}
	}
	if tr.Codex == 0 || tr.UnderCodex == 0 || tr.UnderClaude == 0 {
		t.Fatalf("agent tree %+v: a process is missing", tr)
	}
	return tr
}
