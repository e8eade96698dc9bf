package claudecode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/claudetest"
)

// mcpOptions returns session options that start this test binary as the
// stdio MCP server e2e, recording its calls into the returned directory.
func mcpOptions(t *testing.T, o claudetest.Options) (claudetest.Options, string) {
	t.Helper()
	rec := t.TempDir()
	cfg := claudetest.MCPConfig(t, t.TempDir(), testBin, []string{mcpArg}, map[string]string{recordDirVar: rec})
	o.Args = append(o.Args, "--mcp-config", cfg, "--strict-mcp-config")
	return o, rec
}

// transcripts returns the session transcripts under the CLI's config dir.
func transcripts(s *claudetest.Session) []string {
	ps, _ := filepath.Glob(filepath.Join(s.ConfigDir, "projects", "*", "*.jsonl"))
	return ps
}

// (m) An MCP tool call and the session transcript: the hook payload's
// transcript_path names the session's JSONL transcript; the call's
// tool_use line is recorded shortly after PreToolUse and no tool_result
// for it until the call returns; the MCP server receives the tool-use id
// in params._meta["claudecode/toolUseId"]. This is what lets the loop
// tell an MCP call in flight from a finished one (docs/agents/claude-code.md).
func TestMCPCallTranscript(t *testing.T) {
	claudetest.Require(t)
	project := newProject(t)
	done := filepath.Join(t.TempDir(), "done")
	quick := claudetest.Tool(claudetest.MCPQuick, nil)
	wait := claudetest.Tool(claudetest.MCPWait, map[string]any{"file": done})
	model := claudetest.NewFakeModel(t, claudetest.Tools(quick), claudetest.Tools(wait), claudetest.Text("all done"))
	rec := newRecorder(t)
	k, v := rec.env()
	o, calls := mcpOptions(t, claudetest.Options{Env: map[string]string{k: v},
		Settings: rec.settings("PreToolUse", "PostToolUse", "PostToolUseFailure")})
	s := start(t, model, project, o)
	poll(t, "the wait call's PreToolUse", func() bool { return len(rec.of("PreToolUse", wait.ID)) == 1 })
	pre := rec.one("PreToolUse", wait.ID)
	if pre.str("tool_name") != claudetest.MCPWait {
		t.Errorf("tool_name %q, want %q", pre.str("tool_name"), claudetest.MCPWait)
	}
	path := pre.str("transcript_path")
	if ts := transcripts(s); len(ts) != 1 || ts[0] != path {
		t.Fatalf("transcript_path %q, transcripts on disk %v", path, ts)
	}
	useKey, resultKey := `"id":"`+wait.ID+`"`, `"tool_use_id":"`+wait.ID+`"`
	poll(t, "the wait call's tool_use line", func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), useKey)
	})
	time.Sleep(time.Second) // the call runs on; nothing may record its end
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), resultKey) {
		t.Fatal("a tool_result for the running MCP call is recorded")
	}
	if got := claudetest.MCPCalls(calls); len(got) != 2 || got[1].ToolUseID != wait.ID || !got[1].Ended.IsZero() {
		t.Fatalf("MCP calls %+v, want quick then the running wait with tool-use id %s", got, wait.ID)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(sessionTimeout)
	data, _ = os.ReadFile(path)
	if !strings.Contains(string(data), resultKey) {
		t.Error("no tool_result for the MCP call after it returned")
	}
	if n := len(rec.of("PostToolUse", wait.ID)); n != 1 {
		t.Errorf("%d PostToolUse for the MCP call, want 1", n)
	}
}
