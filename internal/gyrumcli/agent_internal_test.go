package gyrumcli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// The ancestor walk knows agents by the names their real processes have.
func TestAgentName(t *testing.T) {
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
		{"cursor-agent", []string{"cursor-agent"}, "cursor-agent"},
		{"python3", []string{"python3", "-m", "aider"}, "aider"},
		{"python3", []string{"/usr/bin/python3", "/home/u/.local/bin/aider"}, "aider"},
		{"bash", []string{"/bin/bash", "-c", "claude"}, ""},
		{"node", []string{"node", "server.js"}, ""},
		{"sh", nil, ""},
	} {
		got, ok := agentName(c.comm, c.args, nil)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("agentName(%q, %q) = %q, %v; want %q", c.comm, c.args, got, ok, c.want)
		}
	}
}

// start-work runs gyrum-loop when it sits beside gyrum (and is an
// executable file) and the server speaks plain http, gyrum heartbeat run
// otherwise; the words are the same.
func TestLoopArgv(t *testing.T) {
	bin := t.TempDir()
	exe := filepath.Join(bin, "gyrum")
	d := gyrumdir.Dir{Worktree: "/w/t", Path: "/w/t/.gyrum"}
	want := []string{"heartbeat", "run", "--dir", "/w/t", "--schema-version", "2"}
	if got := loopArgv(exe, d, 2, "http://127.0.0.1:7077"); !slices.Equal(got, append([]string{exe}, want...)) {
		t.Errorf("alone: got %q", got)
	}
	small := filepath.Join(bin, LoopBinaryName)
	if err := os.WriteFile(small, []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := loopArgv(exe, d, 2, "http://127.0.0.1:7077"); got[0] != exe {
		t.Errorf("a gyrum-loop that is not executable: got %q, want gyrum", got)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := loopArgv(exe, d, 1, "http://warp.internal:7077"); !slices.Equal(got, []string{small, "heartbeat", "run", "--dir", "/w/t", "--schema-version", "1"}) {
		t.Errorf("beside: got %q", got)
	}
	// gyrum-loop has no TLS: an https server keeps the loop in gyrum.
	if got := loopArgv(exe, d, 2, "HTTPS://warp.example.com"); got[0] != exe {
		t.Errorf("https: got %q, want gyrum", got)
	}
}
