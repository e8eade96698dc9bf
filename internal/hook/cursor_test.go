package hook_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
)

// Payloads in the shape Cursor documents for its hooks
// (https://cursor.com/docs/agent/hooks): the common fields
// (conversation_id, generation_id, model, hook_event_name, cursor_version,
// workspace_roots, user_email, transcript_path) and the tool events' own
// (tool_name, tool_input, tool_use_id, cwd; tool_output and duration after
// the call). Cursor runs the hooks of its own hooks.json with its
// camel-case event names and, with third-party hooks on, the ones in
// Claude Code's settings too, under Claude Code's names
// (https://cursor.com/docs/reference/third-party-hooks): `gyrum setup
// --agents cursor` beside the Claude Code install makes the hook run twice
// for every event of one call.
const (
	cursorCommon = `"conversation_id":"c6d1a3e0-5a1b-4c8e-9d2f-3b7a1e4c9f10","generation_id":"g-7f3e2a91",` +
		`"model":"claude-4.5-sonnet","cursor_version":"2.4.21","workspace_roots":["CWD"],` +
		`"user_email":"dev@example.com","transcript_path":null`
	cursorPre = `{` + cursorCommon + `,"hook_event_name":"EVENT","tool_name":"Shell",` +
		`"tool_input":{"command":"go test ./...","cwd":"CWD"},"tool_use_id":"call_9xKq2LmN4pR7","cwd":"CWD"}`
	cursorPost = `{` + cursorCommon + `,"hook_event_name":"EVENT","tool_name":"Shell",` +
		`"tool_input":{"command":"go test ./...","cwd":"CWD"},"tool_output":"{\"exitCode\":0,\"stdout\":\"ok\"}",` +
		`"tool_use_id":"call_9xKq2LmN4pR7","cwd":"CWD","duration":1834}`
)

func cursorPayload(tmpl, event, cwd string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tmpl, "EVENT", event), "CWD", cwd)
}

// One Cursor tool call whose hook runs twice per event, through Cursor's
// hooks.json and through Claude Code's settings: it is credited once —
// one marker while it runs, gone after; hook-events counts two runs (its
// start and its end), as for an agent that runs the hook once; the
// activity record is the first end's; a lease-ended notice is shown once.
// In either order of the two configurations.
func TestCursorCallRunByTwoHookConfigurationsCountsOnce(t *testing.T) {
	for _, order := range [][2]string{{"preToolUse", "PreToolUse"}, {"PreToolUse", "preToolUse"}} {
		t.Run(order[0]+"-first", func(t *testing.T) {
			d := worktree(t)
			post := map[string]string{"preToolUse": "postToolUse", "PreToolUse": "PostToolUse"}
			t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
			run := func(tmpl, event string, at time.Time) hook.Result {
				t.Helper()
				res, err := hook.Run(strings.NewReader(cursorPayload(tmpl, event, d.Worktree)), hook.Options{Now: at})
				if err != nil {
					t.Fatalf("%s: %v", event, err)
				}
				return res
			}
			run(cursorPre, order[0], t0)
			run(cursorPre, order[1], t0.Add(time.Millisecond))
			if got := markers(t, d); len(got) != 1 || got[0] != "call_9xKq2LmN4pR7=Shell" {
				t.Fatalf("while the call runs: markers %v, want one", got)
			}
			if err := d.WriteNotice(gyrumdir.LeaseEnded{Ticket: "T-1", Epoch: 1, How: gyrumdir.EndReleased, Reason: "operator", At: t0}); err != nil {
				t.Fatal(err)
			}
			t1 := t0.Add(2 * time.Second)
			first := run(cursorPost, post[order[0]], t1)
			second := run(cursorPost, post[order[1]], t1.Add(time.Millisecond))
			if got := markers(t, d); len(got) != 0 {
				t.Errorf("after the call: markers %v", got)
			}
			if n := fileLen(t, d.File(gyrumdir.HookEventsFile)); n != 2 {
				t.Errorf("hook-events counts %d runs for one call, want 2 (its start and its end)", n)
			}
			if at, err := d.LastActivity(); err != nil || !at.Equal(t1) {
				t.Errorf("last-activity %v, %v; want the first end's %v", at, err, t1)
			}
			if len(first.Notices)+len(second.Notices) != 1 {
				t.Errorf("the notice was shown %d times, want once", len(first.Notices)+len(second.Notices))
			}
		})
	}
}

// The next call of the same session, with its own id, is a new call.
func TestCursorNextCallIsNotADuplicate(t *testing.T) {
	d := worktree(t)
	now := time.Now()
	for _, id := range []string{"call_A", "call_B"} {
		for _, tmpl := range []struct{ t, ev string }{{cursorPre, "preToolUse"}, {cursorPost, "postToolUse"}} {
			in := strings.ReplaceAll(cursorPayload(tmpl.t, tmpl.ev, d.Worktree), "call_9xKq2LmN4pR7", id)
			if _, err := hook.Run(strings.NewReader(in), hook.Options{Now: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := fileLen(t, d.File(gyrumdir.HookEventsFile)); n != 4 {
		t.Errorf("hook-events counts %d runs for two calls, want 4", n)
	}
}

func fileLen(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
