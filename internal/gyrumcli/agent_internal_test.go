package gyrumcli

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/watchdog"
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

// start-work spawns gyrum itself, heartbeat run, with words the watchdog,
// doctor, release and complete-pr recognise as the loop of that worktree.
func TestLoopArgv(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "gyrum")
	d := gyrumdir.Dir{Worktree: "/w/t", Path: "/w/t/.gyrum"}
	got := loopArgv(exe, d, 1)
	if want := []string{exe, "heartbeat", "run", "--dir", "/w/t", "--schema-version", "1"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if dir, ok := watchdog.LoopDir(got); !ok || dir != "/w/t" {
		t.Errorf("watchdog.LoopDir(%q) = %q, %v; want /w/t, true", got, dir, ok)
	}
}
