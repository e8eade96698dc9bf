package hook_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
)

// claudeCall returns a Claude Code PreToolUse and PostToolUse (or
// PostToolUseFailure, with errText) of a Bash call running command.
func claudeCall(cwd, id, command, stdout, errText string) (pre, post string) {
	in := fmt.Sprintf(`{"command": %q, "description": "attempt %s"}`, command, id)
	pre = fmt.Sprintf(`{"cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":%s,"tool_use_id":%q}`, cwd, in, id)
	if errText != "" {
		post = fmt.Sprintf(`{"cwd":%q,"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":%s,"tool_use_id":%q,"error":%q,"duration_ms":%d}`, cwd, in, id, errText, len(id)*7)
	} else {
		post = fmt.Sprintf(`{"cwd":%q,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":%s,"tool_response":{"stdout":%q,"stderr":"","interrupted":false},"tool_use_id":%q,"duration_ms":%d}`, cwd, in, stdout, id, len(id)*7)
	}
	return pre, post
}

// run runs one call through the hook and returns what the agent is told.
func run(t *testing.T, d gyrumdir.Dir, now time.Time, o hook.Options, pre, post string) string {
	t.Helper()
	o.Now = now
	if _, err := hook.Run(strings.NewReader(pre), o); err != nil {
		t.Fatal(err)
	}
	res, err := hook.Run(strings.NewReader(post), o)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(res.Notices, "\n")
}

// The same failing command: the third run (SameFailure) makes a loop,
// and the agent is told then, once, in words naming the command, the
// count and the error; the fourth, fifth runs tell nothing more. A
// different call ends the episode; a new repetition is told again.
func TestHookTellsALoopOnce(t *testing.T) {
	d := worktree(t)
	now := time.Now().Add(-time.Hour)
	var told []int
	var msg string
	for i := 1; i <= 5; i++ {
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("toolu_%d", i), "npm test", "", "Exit code 1\nTypeError: x is not a function")
		if m := run(t, d, now.Add(time.Duration(i)*time.Second), hook.Options{}, pre, post); m != "" {
			told, msg = append(told, i), m
		}
	}
	if len(told) != 1 || told[0] != 3 {
		t.Fatalf("told at calls %v, want [3]", told)
	}
	for _, want := range []string{"looping on `Bash: npm test` ×3", "Exit code 1", "gyrum note", "gyrum release"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	pre, post := claudeCall(d.Worktree, "toolu_x", "ls", "a\nb\n", "")
	if m := run(t, d, now.Add(10*time.Second), hook.Options{}, pre, post); m != "" {
		t.Fatalf("a different call: told %q", m)
	}
	for i := 6; i <= 8; i++ {
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("toolu_%d", i), "npm test", "", "Exit code 1\nTypeError: x is not a function")
		m := run(t, d, now.Add(time.Duration(10+i)*time.Second), hook.Options{}, pre, post)
		if (m != "") != (i == 8) {
			t.Fatalf("second episode, call %d: told %q", i, m)
		}
	}
	recs, err := d.LastCalls(100)
	if err != nil || len(recs) != 9 {
		t.Fatalf("calls file: %d records, %v; want 9", len(recs), err)
	}
	if recs[0].Label != "Bash: npm test" || !recs[0].Failed || recs[0].Error != "Exit code 1" {
		t.Fatalf("first record %+v", recs[0])
	}
}

// Calls that look alike but are not a loop are never told: polling whose
// output changes, edits of different files, reads of different files.
func TestHookTellsNoLoopForProgress(t *testing.T) {
	d := worktree(t)
	now := time.Now().Add(-time.Hour)
	for i := range 8 {
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("poll_%d", i), "gh pr checks 42", fmt.Sprintf("build pending %d/8", i), "")
		if m := run(t, d, now.Add(time.Duration(i)*time.Second), hook.Options{}, pre, post); m != "" {
			t.Fatalf("polling, call %d: told %q", i, m)
		}
	}
	for i := range 8 {
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("cat_%d", i), fmt.Sprintf("cat file%d.go", i), "package p", "")
		if m := run(t, d, now.Add(time.Duration(20+i)*time.Second), hook.Options{}, pre, post); m != "" {
			t.Fatalf("reads of different files, call %d: told %q", i, m)
		}
	}
}

// Operator settings: labels off keeps no command in the calls file (the
// message then says "the same tool call"); telling off tells nothing.
func TestHookLoopSettings(t *testing.T) {
	d := worktree(t)
	now := time.Now().Add(-time.Hour)
	var msg string
	for i := range 4 {
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("t%d", i), "make secret-target", "", "boom")
		if m := run(t, d, now.Add(time.Duration(i)*time.Second), hook.Options{NoLabels: true}, pre, post); m != "" {
			msg = m
		}
	}
	if !strings.Contains(msg, "the same tool call ×3") || strings.Contains(msg, "secret") || strings.Contains(msg, "boom") {
		t.Fatalf("labels off: told %q", msg)
	}
	recs, _ := d.LastCalls(10)
	for _, r := range recs {
		if r.Label != "" || r.Error != "" {
			t.Fatalf("labels off: record %+v keeps words", r)
		}
	}
	d2 := worktree(t)
	for i := range 5 {
		pre, post := claudeCall(d2.Worktree, fmt.Sprintf("t%d", i), "npm test", "", "boom")
		if m := run(t, d2, now.Add(time.Duration(i)*time.Second), hook.Options{NoTell: true}, pre, post); m != "" {
			t.Fatalf("telling off: told %q", m)
		}
	}
}

// A nudge the loop left (a lease without progress) is shown once, on the
// next Post event, and only about the lease lease.json names.
func TestHookShowsTheLoopsNudgeOnce(t *testing.T) {
	d := worktree(t)
	if err := d.WriteNudge(gyrumdir.Nudge{Ticket: "T-1", Epoch: 1, Episode: "spinning", Text: "gyrum: no progress", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pre, post := claudeCall(d.Worktree, "a", "ls", "x", "")
	if m := run(t, d, time.Now(), hook.Options{}, pre, post); m != "gyrum: no progress" {
		t.Fatalf("told %q, want the nudge", m)
	}
	pre, post = claudeCall(d.Worktree, "b", "ls -l", "x", "")
	if m := run(t, d, time.Now(), hook.Options{}, pre, post); m != "" {
		t.Fatalf("told again: %q", m)
	}
	if err := d.WriteNudge(gyrumdir.Nudge{Ticket: "T-OTHER", Epoch: 1, Episode: "spinning", Text: "gyrum: other", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pre, post = claudeCall(d.Worktree, "c", "ls -a", "x", "")
	if m := run(t, d, time.Now(), hook.Options{}, pre, post); m != "" {
		t.Fatalf("another lease's nudge shown: %q", m)
	}
}

// A repetition longer than the calls the hook reads (progress.Window) is
// still one episode: told once, at its third call, not again once its
// start is out of sight.
func TestHookTellsALongLoopOnce(t *testing.T) {
	d := worktree(t)
	now := time.Now().Add(-time.Hour)
	var told []int
	for i := 1; i <= 45; i++ {
		pre, post := claudeCall(d.Worktree, fmt.Sprintf("toolu_%d", i), "go test ./pkg/...", "", "Exit code 1\nFAIL pkg")
		if i <= 5 {
			pre, post = claudeCall(d.Worktree, fmt.Sprintf("toolu_%d", i), fmt.Sprintf("ls dir%d", i), "a.go", "")
		}
		if m := run(t, d, now.Add(time.Duration(i)*time.Second), hook.Options{}, pre, post); m != "" {
			told = append(told, i)
		}
	}
	if len(told) != 1 || told[0] != 8 {
		t.Fatalf("told at calls %v, want [8] (the third of the repetition)", told)
	}
}
