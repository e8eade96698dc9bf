package hook_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
	"github.com/gyrum-labs/warp/internal/proc"
	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

func leased(t *testing.T, ticket string) gyrumdir.Dir {
	t.Helper()
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteLease(gyrumdir.Lease{Ticket: ticket, Epoch: 1, WarpURL: "http://127.0.0.1:1", ClaimedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return d
}

// Claude Code resets the Bash cwd to the project after every call, so the
// payload's cwd is the project while the agent works in the worktree that
// `start-work --worktree` made. The hook credits the lease of its agent
// (CLAUDE_PID in the agent index), not a stale lease.json in the project.
func TestHookCreditsItsAgentsLeaseWhereverTheCwd(t *testing.T) {
	project := leased(t, "T-stale") // left behind by an earlier session
	wt := leased(t, "T-mine")
	agent, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	x := gyrumdir.NewAgentIndex(t.TempDir())
	if err := x.Add(agent, wt.Worktree); err != nil {
		t.Fatal(err)
	}
	o := hook.Options{AgentPID: agent.PID, Agents: x, Cwd: project.Worktree}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	o.Now = t0
	if _, err := hook.Run(strings.NewReader(payload(prePayload, project.Worktree)), o); err != nil {
		t.Fatal(err)
	}
	if ms, _ := wt.InFlight(); len(ms) != 1 || ms[0].Tool != "Bash" {
		t.Fatalf("worktree markers after PreToolUse: %+v", ms)
	}
	o.Now = t0.Add(time.Second)
	if _, err := hook.Run(strings.NewReader(payload(postPayload, project.Worktree)), o); err != nil {
		t.Fatal(err)
	}
	if last, err := wt.LastActivity(); err != nil || !last.Equal(o.Now) {
		t.Errorf("worktree last-activity %v %v, want %v", last, err, o.Now)
	}
	if ms, _ := wt.InFlight(); len(ms) != 0 {
		t.Errorf("worktree markers after PostToolUse: %+v", ms)
	}
	if _, err := project.LastActivity(); err == nil {
		t.Error("the project's stale lease was credited")
	}

	// Another process that reuses the agent's pid is not the agent: the
	// cwd walk applies again.
	x2 := gyrumdir.NewAgentIndex(t.TempDir())
	x2.Add(proc.Identity{PID: agent.PID, StartTime: agent.StartTime + 1}, wt.Worktree)
	o2 := hook.Options{AgentPID: agent.PID, Agents: x2, Now: t0.Add(2 * time.Second)}
	if _, err := hook.Run(strings.NewReader(payload(postPayload, project.Worktree)), o2); err != nil {
		t.Fatal(err)
	}
	if last, _ := wt.LastActivity(); !last.Equal(o.Now) {
		t.Errorf("a recycled pid's entry credited the worktree at %v", last)
	}
	if last, err := project.LastActivity(); err != nil || !last.Equal(o2.Now) {
		t.Errorf("cwd fallback: project last-activity %v %v", last, err)
	}
}

// The agent is told once, on its next Post event, that its lease ended,
// through Claude Code's hook output (additionalContext); its index entry
// goes with the notice.
func TestHookTellsTheAgentItsLeaseEnded(t *testing.T) {
	wt := leased(t, "T-9")
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	agent, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	x := gyrumdir.NewAgentIndex(t.TempDir())
	x.Add(agent, wt.Worktree)
	if err := wt.WriteNotice(gyrumdir.LeaseEnded{Ticket: "T-9", Epoch: 1, How: gyrumdir.EndReleased, Reason: "operator", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	o := hook.Options{AgentPID: agent.PID, Agents: x, Now: time.Now()}
	// PreToolUse does not show it (not every client reads its output).
	res, err := hook.Run(strings.NewReader(payload(prePayload, "/")), o)
	if err != nil || len(res.Notices) != 0 || hook.Output(res.Event, res) != nil {
		t.Fatalf("PreToolUse: %+v %v", res, err)
	}
	res, err = hook.Run(strings.NewReader(payload(postPayload, "/")), o)
	if err != nil || len(res.Notices) != 1 {
		t.Fatalf("PostToolUse: %+v %v", res, err)
	}
	var out struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	raw := hook.Output(res.Event, res)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("output %q: %v", raw, err)
	}
	if out.HookSpecificOutput.HookEventName != "PostToolUse" || !strings.Contains(out.HookSpecificOutput.AdditionalContext, "T-9") ||
		!strings.Contains(out.HookSpecificOutput.AdditionalContext, "was released (operator)") {
		t.Errorf("output %s", raw)
	}
	if got, _ := x.Worktrees(agent); len(got) != 0 {
		t.Errorf("index entry kept after the notice: %v", got)
	}
	res, _ = hook.Run(strings.NewReader(payload(postPayload, wt.Worktree)), o)
	if len(res.Notices) != 0 {
		t.Errorf("told twice: %+v", res)
	}
}

// A hostile repository commits .gyrum/lease.json and symlinks: the hook,
// found through the payload's cwd, never writes through them, never hangs
// on a FIFO, and still exits quietly.
func TestHookInAHostileRepository(t *testing.T) {
	repo := leased(t, "T-evil")
	precious := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(precious, []byte("keep me"), 0o600)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(precious, old, old)
	for _, name := range []string{gyrumdir.ActivityFile, gyrumdir.HookEventsFile} {
		os.Remove(repo.File(name))
		if err := os.Symlink(precious, repo.File(name)); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(repo.File(gyrumdir.InFlightDir))
	if err := syscall.Mkfifo(repo.File(gyrumdir.InFlightDir), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{prePayload, postPayload, stopPayload} {
			res, _ := hook.Run(strings.NewReader(payload(p, repo.Worktree)), hook.Options{Now: time.Now()})
			if out := hook.Output(res.Event, res); out != nil {
				t.Errorf("hook printed %q", out)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the hook hangs in a hostile repository")
	}
	st, _ := os.Stat(precious)
	if data, _ := os.ReadFile(precious); string(data) != "keep me" || !st.ModTime().Equal(old) {
		t.Errorf("the hook wrote through a symlink: %q, mtime %v", data, st.ModTime())
	}
}

// Gemini CLI and Cursor name the same events their own way: a BeforeTool
// or preToolUse makes the in-flight marker, an AfterTool or postToolUse
// ends it and writes the activity record under the agent's own name.
func TestOtherAgentsEventNames(t *testing.T) {
	for _, c := range []struct{ pre, post string }{{"BeforeTool", "AfterTool"}, {"preToolUse", "postToolUse"}, {"preToolUse", "postToolUseFailure"}} {
		d := leased(t, "T-1")
		now := time.Now().Truncate(time.Second)
		o := hook.Options{Dir: d.Worktree, Now: now}
		in := func(ev string) *strings.Reader {
			return strings.NewReader(`{"hook_event_name":"` + ev + `","cwd":"` + d.Worktree + `","tool_name":"run_shell_command","tool_use_id":"call-1"}`)
		}
		if _, err := hook.Run(in(c.pre), o); err != nil {
			t.Fatal(err)
		}
		if ms, _ := d.InFlight(); len(ms) != 1 {
			t.Errorf("%s: markers %v, want one", c.pre, ms)
		}
		if _, err := hook.Run(in(c.post), o); err != nil {
			t.Fatal(err)
		}
		if ms, _ := d.InFlight(); len(ms) != 0 {
			t.Errorf("%s: markers left %v", c.post, ms)
		}
		if rec, ok, _, _ := d.ReadActivity(); !ok || rec.Event != c.post {
			t.Errorf("%s: record %+v, want the event under its own name", c.post, rec)
		}
	}
}

// A Codex started from a Claude Code session runs its hooks with the
// Claude Code's CLAUDE_PID, handed down: its tool calls are not the
// Claude Code's, whose lease they must not keep alive; the cwd walk finds
// Codex's own worktree instead.
func TestHookLeavesTheLeasesOfTheAgentThatStartedAnother(t *testing.T) {
	tr := warptest.StartAgentTree(t)
	claude, err := proc.Lookup(tr.Claude)
	if err != nil {
		t.Fatal(err)
	}
	claudeWT, codexWT := leased(t, "T-claude"), leased(t, "T-codex")
	x := gyrumdir.NewAgentIndex(t.TempDir())
	if err := x.Add(claude, claudeWT.Worktree); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Minute).Truncate(time.Second)
	// Codex's tool call: the hook's parent is under codex.
	o := hook.Options{AgentPID: tr.Claude, Agents: x, Parent: tr.UnderCodex, Now: now}
	if _, err := hook.Run(strings.NewReader(payload(postPayload, codexWT.Worktree)), o); err != nil {
		t.Fatal(err)
	}
	if _, err := claudeWT.LastActivity(); err == nil {
		t.Error("Codex's tool call was credited to the Claude Code's lease")
	}
	if last, err := codexWT.LastActivity(); err != nil || !last.Equal(now) {
		t.Errorf("Codex's worktree: last-activity %v %v, want %v", last, err, now)
	}
	// The Claude Code's own tool call still finds its lease by CLAUDE_PID.
	o.Parent, o.Now = tr.UnderClaude, now.Add(time.Second)
	if _, err := hook.Run(strings.NewReader(payload(postPayload, codexWT.Worktree)), o); err != nil {
		t.Fatal(err)
	}
	if last, err := claudeWT.LastActivity(); err != nil || !last.Equal(o.Now) {
		t.Errorf("the Claude Code's worktree: last-activity %v %v, want %v", last, err, o.Now)
	}
}

// The lease-ended notice in each agent's documented format: Claude Code's
// (and Codex's, Gemini CLI's) hookSpecificOutput.additionalContext, and
// Cursor's top-level additional_context for its camel-case events.
func TestOutputFormats(t *testing.T) {
	res := hook.Result{Notices: []string{"your lease on ticket T-9 ended"}}
	for _, tc := range []struct {
		event, want string
	}{
		{"PostToolUse", `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"your lease on ticket T-9 ended"}}`},
		{"AfterTool", `{"hookSpecificOutput":{"hookEventName":"AfterTool","additionalContext":"your lease on ticket T-9 ended"}}`},
		{"postToolUse", `{"additional_context":"your lease on ticket T-9 ended"}`},
		{"postToolUseFailure", `{"additional_context":"your lease on ticket T-9 ended"}`},
	} {
		if got := strings.TrimSpace(string(hook.Output(tc.event, res))); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.event, got, tc.want)
		}
	}
	if out := hook.Output("postToolUse", hook.Result{}); out != nil {
		t.Errorf("no notice printed %q", out)
	}
}
