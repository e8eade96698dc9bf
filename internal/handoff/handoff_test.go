package handoff_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/handoff"
)

func TestEnded(t *testing.T) {
	for _, tc := range []struct {
		a    client.Attempt
		want string
	}{
		{client.Attempt{State: "held"}, "still held"},
		{client.Attempt{State: "completed", PRURL: "https://x/pr/1", EndVerdict: "active"}, "completed (https://x/pr/1)"},
		{client.Attempt{State: "released", EndedBy: "jane", EndReason: "wrong approach", EndVerdict: "stalled 31m0s"},
			"released by jane (wrong approach); at its end: stalled 31m0s"},
		{client.Attempt{State: "lapsed", EndReason: "no-activity", EndVerdict: "silent 40m0s"}, "lapsed (no-activity); at its end: silent 40m0s"},
		{client.Attempt{State: "released", EndedBy: "warp", EndReason: "exit-report", Exit: "parent-exited", EndVerdict: "exited (parent-exited)"},
			"agent exited (parent-exited), released by warp (exit-report); at its end: exited (parent-exited)"},
	} {
		if got := handoff.Ended(tc.a); got != tc.want {
			t.Errorf("Ended(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestNewAndLines(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	tk := client.Ticket{ID: "T-1", Attempts: []client.Attempt{
		{Number: 3, State: "held", Agent: "c", Host: "h3", StartedAt: at},
		{Number: 2, State: "lapsed", Agent: "b", Host: "h2", EndReason: "no-activity", Note: "tried\nthe  cache",
			Snapshot: &client.Snapshot{State: "saved", Commit: commit, Ref: "refs/gyrum/T-1/2", Remote: "git@x:a/b.git", Pushed: true, Host: "h2"}},
		{Number: 1, State: "released", Agent: "a", Host: "h1", Snapshot: &client.Snapshot{State: "gone"}},
	}}
	h := handoff.New(tk, 3)
	if len(h.Attempts) != 2 || h.Attempts[0].Number != 2 || h.Attempts[1].Number != 1 {
		t.Fatalf("attempts before epoch 3: %+v", h.Attempts)
	}
	if want := "git fetch git@x:a/b.git refs/gyrum/T-1/2:refs/gyrum/T-1/2 && git restore --source=" + commit + " --worktree -- ."; h.Attempts[0].Get != want {
		t.Errorf("get %q, want %q", h.Attempts[0].Get, want)
	}
	if h.Attempts[1].Get != "" {
		t.Errorf("a gone snapshot has a get: %q", h.Attempts[1].Get)
	}
	lines := handoff.Lines(h.Attempts, 1)
	want := []string{
		"#2 b on h2: lapsed (no-activity); snapshot commit abababababab (refs/gyrum/T-1/2, on h2, pushed to git@x:a/b.git)",
		"   note: tried the cache",
		"   get:  " + h.Attempts[0].Get,
		"… 1 earlier attempts: warp ticket show",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
