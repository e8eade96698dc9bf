package agentproc_test

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/agentproc"
	"github.com/gyrum-labs/warp/internal/warptest"
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
		{"cursor-agent", []string{"cursor-agent"}, "cursor-agent"},
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
