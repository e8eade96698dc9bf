package agentproc_test

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

	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

func TestInherited(t *testing.T) {
	tr := warptest.StartAgentTree(t)
	outer, codexPID, underCodex, underSh := tr.Claude, tr.Codex, tr.UnderCodex, tr.UnderClaude
	in, name, ok := agentproc.Inherited(outer, underCodex)
	if !ok || name != "codex" || in.PID != codexPID {
		t.Errorf("under codex: Inherited = %+v %q %v, want codex %d", in, name, ok, codexPID)
	}
	if _, _, ok := agentproc.Inherited(outer, codexPID); !ok {
		t.Error("codex itself: CLAUDE_PID was not seen as handed down")
	}
	if in, name, ok := agentproc.Inherited(outer, underSh); ok {
		t.Errorf("the Claude Code's own call: Inherited = %+v %q, want CLAUDE_PID to stand", in, name)
	}
	if _, _, ok := agentproc.Inherited(outer, outer); ok {
		t.Error("the agent itself: CLAUDE_PID should stand")
	}
	// CLAUDE_PID naming no ancestor (set by hand, say) stands too.
	if _, _, ok := agentproc.Inherited(underSh, underCodex); ok {
		t.Error("a CLAUDE_PID that is no ancestor was overridden")
	}
}

// Nearest finds the agent a tool call runs under without being told its
// pid: the nearest one, a nested agent before the one that started it.
func TestNearest(t *testing.T) {
	tr := warptest.StartAgentTree(t)
	if in, name, ok := agentproc.Nearest(tr.UnderCodex); !ok || name != "codex" || in.PID != tr.Codex {
		t.Errorf("under codex: Nearest = %+v %q %v, want codex %d", in, name, ok, tr.Codex)
	}
	if in, name, ok := agentproc.Nearest(tr.UnderClaude); !ok || name != "claude" || in.PID != tr.Claude {
		t.Errorf("under claude: Nearest = %+v %q %v, want claude %d", in, name, ok, tr.Claude)
	}
	if in, _, ok := agentproc.Nearest(tr.Claude); !ok || in.PID != tr.Claude {
		t.Errorf("the agent itself: Nearest = %+v %v, want itself", in, ok)
	}
}

// The walk knows agents by the names their real processes have.
func TestName(t *testing.T) {
	for _, c := range []struct {
		comm string
		args []string
		want string
	}{
		{"claude.exe", []string{"/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "-p", "x"}, "claude"},
		{"claude", []string{"claude"}, "claude"},
		{"node", []string{"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}, "claude"},
		{"MainThread", []string{"/home/u/.local/bin/claude"}, "claude"}, // a renamed thread: argv[0] decides
		{"codex", []string{"codex", "exec"}, "codex"},
		{"node", []string{"node", "/usr/local/lib/node_modules/@openai/codex/bin/codex.js"}, "codex"},
		{"node", []string{"/usr/bin/node", "/usr/local/lib/node_modules/@google/gemini-cli/dist/index.js"}, "gemini"},
		{"gemini", []string{"gemini"}, "gemini"},
		// Gemini CLI 0.61's launcher and the child it relaunches (measured).
		{"node", []string{"node", "/home/u/.npm-global/lib/node_modules/.bin/gemini", "-p", "x", "--yolo"}, "gemini"},
		{"node", []string{"/usr/bin/node", "--max-old-space-size=12052", "/home/u/node_modules/.bin/gemini", "-p", "x"}, "gemini"},
		{"node", []string{"/usr/bin/node", "--max-old-space-size=12052", "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js"}, "gemini"},
		{"node", []string{"node", "--inspect"}, ""},
		{"cursor-agent", []string{"cursor-agent"}, "cursor-agent"},
		// opencode 1.18.33's native binary; Kilo CLI 7.7.7's node launcher
		// and the native .kilo it runs (measured).
		{"opencode", []string{"/home/u/node_modules/.bin/opencode", "run", "x"}, "opencode"},
		{"node", []string{"node", "/home/u/node_modules/.bin/kilo", "run", "x"}, "kilo"},
		{".kilo", []string{"/home/u/node_modules/@kilocode/cli/bin/.kilo", "run", "x"}, "kilo"},
		// pi 0.73.1 as node starts it, and as it retitles itself (argv
		// overwritten: "pi" and spaces).
		{"node", []string{"node", "/home/u/node_modules/@mariozechner/pi-coding-agent/dist/cli.js", "-p", "x"}, "pi"},
		{"pi", []string{"pi" + strings.Repeat(" ", 60)}, "pi"},
		{"python3", []string{"python3", "-m", "aider"}, "aider"},
		{"python3", []string{"/usr/bin/python3", "/home/u/.local/bin/aider"}, "aider"},
		{"bash", []string{"/bin/bash", "-c", "claude"}, ""},
		{"bash", []string{"/bin/bash", "-c", "source /root/.claude/shell-snapshots/s.sh && eval 'claude'"}, ""},
		{"node", []string{"node", "server.js"}, ""},
		{"sh", nil, ""},
	} {
		got, ok := agentproc.Name(c.comm, c.args)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Name(%q, %q) = %q, %v; want %q", c.comm, c.args, got, ok, c.want)
		}
	}
}

// BenchmarkInherited: the hook's walk in a Claude Code session, from the
// tool call's process two levels below claude (what the hook pays, only
// when its agent holds leases in the index):
//
//	go test ./internal/agentproc -run '^$' -bench Inherited -benchmem
func BenchmarkInherited(b *testing.B) {
	tr := warptest.StartAgentTree(b)
	for b.Loop() {
		if _, _, ok := agentproc.Inherited(tr.Claude, tr.UnderClaude); ok {
			b.Fatal("the Claude Code's own call was taken for another agent's")
		}
	}
}

func TestSharedServer(t *testing.T) {
	daemon := "/h/.codex/packages/app-server-daemon/releases/0.169.0-x86_64-unknown-linux-musl/bin/codex"
	for _, c := range []struct {
		args           []string
		server, remote bool
	}{
		// As measured (0.169.0): the daemon `codex app-server daemon start` runs.
		{[]string{daemon, "app-server", "--listen", "unix://", "--analytics-default-enabled", "--managed-daemon"}, true, false},
		{[]string{daemon, "app-server", "--managed-daemon"}, true, false},
		{[]string{"codex", "app-server", "--listen", "ws://127.0.0.1:4500"}, true, true},
		{[]string{"codex", "app-server", "--listen=ws://127.0.0.1:4500"}, true, true},
		{[]string{"codex", "app-server", "--listen", "unix:///tmp/s.sock"}, true, false},
		// Not a shared server: stdio (an IDE's, TrustHooks'), the TUI, exec,
		// the daemon's helper, another program.
		{[]string{"codex", "app-server"}, false, false},
		{[]string{"codex", "app-server", "--listen", "stdio://"}, false, false},
		{[]string{"codex"}, false, false},
		{[]string{"codex", "--remote", "ws://127.0.0.1:4500"}, false, false},
		{[]string{"codex", "exec", "--managed-daemon"}, false, false},
		{[]string{daemon, "app-server", "daemon", "pid-update-loop"}, false, false},
		{[]string{"gemini", "app-server", "--managed-daemon"}, false, false},
	} {
		_, s, r := agentproc.SharedServer(filepath.Base(c.args[0]), c.args)
		if s != c.server || r != c.remote {
			t.Errorf("SharedServer(%q) = %v, %v; want %v, %v", c.args, s, r, c.server, c.remote)
		}
	}
}

// startTree runs script under bash -c from this test and returns the pid
// it echoes first.
func startTree(t *testing.T, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// An agent gyrum does not know runs start-work in a tool call's shell:
// Caller walks past the command-string shells and wrappers to the process
// that runs them (here, this test), and stops at a shell a person or a
// script runs.
func TestCaller(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process trees are read from /proc here")
	}
	// this test → bash -c → sh -c → timeout → sleep (start-work's place).
	timeoutPID := startTree(t, "bash", "-c", `sh -c 'timeout 60 sleep 60 & echo $!; wait'; true`)
	if in, passed, ok := agentproc.Caller(timeoutPID); !ok || in.PID != os.Getpid() || passed != 3 {
		t.Errorf("under bash -c, sh -c, timeout: Caller = pid %d, passed %d, %v; want this test (%d), 3 passed", in.PID, passed, ok, os.Getpid())
	}
	// An interactive shell is the caller itself.
	interactive := exec.Command("bash", "--norc", "--noprofile", "-i")
	interactive.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := interactive.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := interactive.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); interactive.Process.Kill(); interactive.Wait() })
	if in, passed, ok := agentproc.Caller(interactive.Process.Pid); !ok || in.PID != interactive.Process.Pid || passed != 0 {
		t.Errorf("interactive bash: Caller = pid %d, passed %d, %v; want the shell (%d), 0 passed", in.PID, passed, ok, interactive.Process.Pid)
	}
	// A shell running a script lives as long as the script's work: it is
	// the caller; the command-string shell inside it is passed.
	script := filepath.Join(t.TempDir(), "run-agent.sh")
	if err := os.WriteFile(script, []byte("sh -c 'sleep 60 & echo $$; wait'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	innerSh := startTree(t, "bash", script)
	scriptShell, err := proc.Parent(innerSh)
	if err != nil {
		t.Fatal(err)
	}
	if in, passed, ok := agentproc.Caller(innerSh); !ok || in.PID != scriptShell || passed != 1 {
		t.Errorf("sh -c under bash run-agent.sh: Caller = pid %d, passed %d, %v; want the script's shell (%d), 1 passed", in.PID, passed, ok, scriptShell)
	}
	if _, _, ok := agentproc.Caller(1 << 30); ok {
		t.Error("no such process: Caller said ok")
	}
}
