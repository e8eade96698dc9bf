package agentproc

import "testing"

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		comm string
		args []string
		want bool
	}{
		{"bash", []string{"/bin/bash", "-c", "gyrum start-work T"}, true},
		{"bash", []string{"bash", "-lc", "gyrum start-work T"}, true},
		{"bash", []string{"/bin/bash", "-c", "-l", "source snap && eval 'x'"}, true}, // Claude Code's
		{"sh", []string{"sh", "-ec", "x"}, true},
		{"zsh", []string{"/bin/zsh", "-o", "pipefail", "-c", "x"}, true},
		{"fish", []string{"fish", "--command", "x"}, true},
		{"bash", []string{"bash", "--noprofile", "--norc", "-c", "x"}, true},
		{"dash", []string{"/bin/sh", "-c", "x"}, true},
		{"env", []string{"/usr/bin/env", "FOO=1", "gyrum", "start-work"}, true},
		{"timeout", []string{"timeout", "600", "gyrum"}, true},
		{"nice", []string{"nice", "-n", "5", "gyrum"}, true},
		{"bash", []string{"-bash"}, false},                      // a login shell at a prompt
		{"bash", []string{"bash", "-i"}, false},                 // interactive
		{"zsh", []string{"zsh", "-l"}, false},                   // login, interactive
		{"bash", []string{"bash", "run-agent.sh", "-c"}, false}, // a script: its process
		{"bash", []string{"bash", "--", "-c"}, false},
		{"node", []string{"node", "/opt/qwen/cli.js"}, false},
		{"MainThread", []string{"copilot"}, false},
		{"pi", []string{"pi", "-c"}, false}, // not a shell: -c is its own flag
	} {
		if got := transient(c.comm, c.args); got != c.want {
			t.Errorf("transient(%q, %q) = %v, want %v", c.comm, c.args, got, c.want)
		}
	}
}
