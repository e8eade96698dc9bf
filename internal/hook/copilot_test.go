package hook_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
)

// GitHub Copilot CLI's payloads for the PascalCase events gyrum setup
// wires (measured, 1.0.102: docs/agents/copilot-cli.md): Claude Code's
// keys, tool_name in Claude's names, no tool_use_id and no transcript.
const (
	copilotPre = `{"hook_event_name":"PreToolUse","session_id":"e4b316c4-93b7-432c-a8b8-7c43130f2db4",` +
		`"timestamp":"2026-12-07T17:48:03.355Z","cwd":"CWD","tool_name":"Bash",` +
		`"tool_input":{"command":"sleep 4; echo slept","description":"a quiet step"}}`
	copilotPost = `{"hook_event_name":"PostToolUse","session_id":"e4b316c4-93b7-432c-a8b8-7c43130f2db4",` +
		`"timestamp":"2026-12-07T17:48:07.672Z","cwd":"CWD","tool_name":"Bash",` +
		`"tool_input":{"command":"sleep 4; echo slept","description":"a quiet step"},` +
		`"tool_result":{"result_type":"success","text_result_for_llm":"slept\n<shellId: 0 completed with exit code 0>"}}`
)

// A Copilot call is tracked from its start to its end: a marker named by
// its input (no id) while it runs, which its PostToolUse removes.
func TestCopilotCallTracked(t *testing.T) {
	d := worktree(t)
	now := time.Now()
	in := func(tmpl string) *strings.Reader {
		return strings.NewReader(strings.ReplaceAll(tmpl, "CWD", d.Worktree))
	}
	if _, err := hook.Run(in(copilotPre), hook.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	ms := markers(t, d)
	if len(ms) != 1 || !strings.HasPrefix(ms[0], "input-") || !strings.HasSuffix(ms[0], "=Bash") {
		t.Fatalf("while the call runs: markers %v, want one named by its input", ms)
	}
	if _, err := hook.Run(in(copilotPost), hook.Options{Now: now.Add(4 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if ms := markers(t, d); len(ms) != 0 {
		t.Errorf("after the call: markers %v", ms)
	}
	rec, ok, _, err := d.ReadActivity()
	if err != nil || !ok || rec.Event != "PostToolUse" || rec.Tool != "Bash" {
		t.Errorf("activity %+v (%v, %v), want PostToolUse of Bash", rec, ok, err)
	}
}

// The notice in each agent's shape: --agent names the agent where its
// event names do not (Copilot sends Claude Code's), and an unknown
// --agent leaves the shape the event name gives.
func TestMainAnnouncedAgentsNotice(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // the key the notice is under
	}{
		{[]string{"--agent", "copilot"}, `"additionalContext"`},
		{[]string{"--agent=copilot"}, `"additionalContext"`},
		{nil, `"hookSpecificOutput"`},
		{[]string{"--agent", "qwen"}, `"hookSpecificOutput"`},
		{[]string{"--agent", "no-such-agent"}, `"hookSpecificOutput"`},
		{[]string{"--agent"}, `"hookSpecificOutput"`}, // no value: ignored
	} {
		home := t.TempDir()
		d := worktree(t)
		if err := gyrumdir.NewPrepared(home).Add(d.Worktree); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteNotice(gyrumdir.LeaseEnded{Ticket: "T-1", Epoch: 1, How: gyrumdir.EndReleased, Reason: "operator", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		env := map[string]string{"GYRUM_HOME": home}
		hook.Main(c.args, hook.Env{
			Stdin:  strings.NewReader(strings.ReplaceAll(copilotPost, "CWD", d.Worktree)),
			Stdout: &out, Getenv: func(k string) string { return env[k] },
			Getwd: func() (string, error) { return filepath.Dir(d.Worktree), nil }, Now: time.Now(),
		})
		var v map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v) != 1 || !strings.Contains(out.String(), c.want) ||
			!strings.Contains(out.String(), "your lease on ticket T-1") {
			t.Errorf("args %q: output %q (%v), want the notice under %s alone", c.args, out.String(), err, c.want)
		}
	}
}

func TestOutputAsShapes(t *testing.T) {
	res := hook.Result{Event: "PostToolUse", Notices: []string{"a", "b"}}
	for n, want := range map[agent.Notice]string{
		agent.NoticeHookSpecific:      `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"a\n\nb"}}` + "\n",
		agent.NoticeTopLevel:          `{"additional_context":"a\n\nb"}` + "\n",
		agent.NoticeAdditionalContext: `{"additionalContext":"a\n\nb"}` + "\n",
	} {
		if got := string(hook.OutputAs(n, "PostToolUse", res)); got != want {
			t.Errorf("OutputAs(%d) = %q, want %q", n, got, want)
		}
		if got := hook.OutputAs(n, "PostToolUse", hook.Result{}); got != nil {
			t.Errorf("OutputAs(%d) with nothing to tell = %q", n, got)
		}
	}
}
