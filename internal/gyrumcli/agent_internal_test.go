package gyrumcli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// Beyond the known agents (agentproc.Name, tested there), the walk takes
// what GYRUM_AGENT_PROCESS matches: any of a process's names, or its whole
// command line.
func TestAgentName(t *testing.T) {
	extra := regexp.MustCompile(`^my-agent-[0-9]+$|--agent-mode`)
	for _, c := range []struct {
		comm string
		args []string
		want string
	}{
		{"claude", []string{"claude"}, "claude"},
		{"my-agent-7", []string{"/opt/bin/my-agent-7"}, "my-agent-7"},
		{"python3", []string{"python3", "/opt/my-agent-2"}, "my-agent-2"},
		{"node", []string{"node", "run.js", "--agent-mode"}, "run.js"},
		{"bash", []string{"/bin/bash", "-c", "true"}, ""},
	} {
		got, ok := agentName(c.comm, c.args, extra)
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
