package hook_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/hook"
)

// Payloads shaped like Claude Code's documented hook input
// (code.claude.com/docs/en/hooks: common fields, then the event's own;
// PostToolUse puts tool_use_id after tool_response).
const (
	prePayload = `{
  "session_id": "abc123",
  "transcript_path": "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "CWD",
  "permission_mode": "default",
  "hook_event_name": "PreToolUse",
  "tool_name": "Bash",
  "tool_input": {"command": "npm test", "description": "Run test suite", "timeout": 120000},
  "tool_use_id": "toolu_01ABC123"
}`
	postPayload = `{
  "session_id": "abc123",
  "transcript_path": "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "CWD",
  "permission_mode": "default",
  "hook_event_name": "PostToolUse",
  "tool_name": "Bash",
  "tool_input": {"command": "npm test", "description": "Run test suite"},
  "tool_response": {"stdout": "ok {not json} \"quoted\" ] }", "stderr": "", "interrupted": false, "isImage": false},
  "tool_use_id": "toolu_01ABC123"
}`
	failurePayload = `{
  "session_id": "abc123",
  "transcript_path": "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "CWD",
  "permission_mode": "default",
  "hook_event_name": "PostToolUseFailure",
  "tool_name": "Bash",
  "tool_input": {"command": "npm test", "description": "Run test suite"},
  "tool_use_id": "toolu_01ABC123",
  "error": "Command exited with non-zero status code 1",
  "is_interrupt": false
}`
	stopPayload = `{"session_id":"abc123","transcript_path":"/x.jsonl","cwd":"CWD","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false}`
)

func payload(tmpl, cwd string) string { return strings.ReplaceAll(tmpl, "CWD", cwd) }

func TestParseDocumentedPayloads(t *testing.T) {
	cases := []struct {
		name, in string
		want     hook.Payload
	}{
		{"pre", payload(prePayload, "/w"), hook.Payload{Event: "PreToolUse", CWD: "/w", ToolName: "Bash", ToolUseID: "toolu_01ABC123", Transcript: "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl", Object: true}},
		{"post", payload(postPayload, "/w"), hook.Payload{Event: "PostToolUse", CWD: "/w", ToolName: "Bash", ToolUseID: "toolu_01ABC123", Transcript: "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl", Object: true}},
		{"failure", payload(failurePayload, "/w"), hook.Payload{Event: "PostToolUseFailure", CWD: "/w", ToolName: "Bash", ToolUseID: "toolu_01ABC123", Transcript: "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl", Object: true}},
		{"stop", payload(stopPayload, "/w"), hook.Payload{Event: "Stop", CWD: "/w", Transcript: "/x.jsonl", Object: true}},
		{"escapes", `{"cwd":"/tmp/a \"b\"\\c\u00e9","hook_event_name":"PreToolUse"}`, hook.Payload{Event: "PreToolUse", CWD: `/tmp/a "b"\cé`, Object: true}},
		{"nested same keys ignored", `{"tool_input":{"cwd":"/evil","hook_event_name":"X"},"cwd":"/w"}`, hook.Payload{CWD: "/w", Object: true}},
		{"non-string field", `{"cwd":42,"hook_event_name":"PostToolUse"}`, hook.Payload{Event: "PostToolUse", Object: true}},
		{"cut off", `{"cwd":"/w","hook_event_name":"PostToolUse","tool_response":{"stdout":"aaa`, hook.Payload{Event: "PostToolUse", CWD: "/w", Object: true}},
		{"empty", "", hook.Payload{}},
		{"garbage", "not json at all", hook.Payload{}},
		{"array", `[{"cwd":"/w"}]`, hook.Payload{}},
		{"binary", "\x00\xff{", hook.Payload{}},
		{"empty object", "{}", hook.Payload{Object: true}},
		{"trailing backslash", `{"cwd":"C:\\","hook_event_name":"PreToolUse"}`, hook.Payload{Event: "PreToolUse", CWD: `C:\`, Object: true}},
		{"escaped quote after backslash", `{"tool_input":{"x":"a\\\"b\\"},"cwd":"/w"}`, hook.Payload{CWD: "/w", Object: true}},
		{"backslash run across buffers", `{"tool_response":"` + strings.Repeat(`\\`, 40000) + `\"","cwd":"/w"}`, hook.Payload{CWD: "/w", Object: true}},
	}
	for _, c := range cases {
		got := hook.Parse(strings.NewReader(c.in), hook.MaxInput)
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseLargeToolResponse(t *testing.T) {
	big := strings.Repeat(`x\"{[`, 2<<20) // 10 MiB of string with escapes and brackets
	in := `{"cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Read","tool_response":{"content":"` + big + `","n":[1,2,{"a":null}]},"tool_use_id":"toolu_big"}`
	got := hook.Parse(strings.NewReader(in), hook.MaxInput)
	want := hook.Payload{Event: "PostToolUse", CWD: "/w", ToolName: "Read", ToolUseID: "toolu_big", Object: true}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// Past the read limit the late fields are not seen, the early ones are.
	got = hook.Parse(strings.NewReader(in), 1<<20)
	if got.Event != "PostToolUse" || got.ToolUseID != "" {
		t.Fatalf("limited: got %+v", got)
	}
}

// worktree makes a worktree with a .gyrum/ that holds a lease, like start-work.
func worktree(t *testing.T) gyrumdir.Dir {
	t.Helper()
	d, err := gyrumdir.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteLease(gyrumdir.Lease{Ticket: "T-1", Epoch: 1, WarpURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	return d
}

func markers(t *testing.T, d gyrumdir.Dir) []string {
	t.Helper()
	ms, err := d.InFlight()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Name+"="+m.Tool)
	}
	return out
}

func TestRunPreThenPost(t *testing.T) {
	for _, post := range []string{postPayload, failurePayload} {
		d := worktree(t)
		sub := filepath.Join(d.Worktree, "pkg", "deep")
		os.MkdirAll(sub, 0o755)
		t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
		if _, err := hook.Run(strings.NewReader(payload(prePayload, sub)), hook.Options{Now: t0}); err != nil {
			t.Fatal(err)
		}
		if got := markers(t, d); len(got) != 1 || got[0] != "toolu_01ABC123=Bash" {
			t.Fatalf("after PreToolUse: markers %v", got)
		}
		if _, err := d.LastActivity(); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("PreToolUse touched last-activity: %v", err)
		}
		t1 := t0.Add(time.Minute)
		if _, err := hook.Run(strings.NewReader(payload(post, sub)), hook.Options{Now: t1}); err != nil {
			t.Fatal(err)
		}
		if got := markers(t, d); len(got) != 0 {
			t.Fatalf("after %s: markers %v", post[:20], got)
		}
		if at, err := d.LastActivity(); err != nil || !at.Equal(t1) {
			t.Fatalf("last-activity: got %v, %v, want %v", at, err, t1)
		}
	}
}

// PreToolUse records the session's transcript once: a later call with
// another transcript_path (a subagent's) leaves it, and a Post event
// records nothing.
func TestRunRecordsTranscriptOnce(t *testing.T) {
	d := worktree(t)
	now := time.Now()
	if _, err := hook.Run(strings.NewReader(payload(postPayload, d.Worktree)), hook.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	if p, err := d.Transcript(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after PostToolUse: transcript %q, %v; want none", p, err)
	}
	if _, err := hook.Run(strings.NewReader(payload(prePayload, d.Worktree)), hook.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	const want = "/home/user/.claude/projects/-home-user-my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl"
	if p, err := d.Transcript(); err != nil || p != want {
		t.Fatalf("after PreToolUse: transcript %q, %v; want %q", p, err, want)
	}
	other := strings.Replace(payload(prePayload, d.Worktree), "00893aaf", "subagent", 1)
	if _, err := hook.Run(strings.NewReader(other), hook.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	if p, err := d.Transcript(); err != nil || p != want {
		t.Fatalf("after a second PreToolUse: transcript %q, %v; want %q kept", p, err, want)
	}
}

func TestRunPlainTouch(t *testing.T) {
	d := worktree(t)
	now := time.Now().Add(-time.Hour).Truncate(time.Second)
	for name, in := range map[string]string{"empty": "", "garbage": "}}}{not json", "stop": payload(stopPayload, d.Worktree)} {
		os.Remove(d.File(gyrumdir.ActivityFile))
		if _, err := hook.Run(strings.NewReader(in), hook.Options{Cwd: d.Worktree, Now: now}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if at, err := d.LastActivity(); err != nil || !at.Equal(now) {
			t.Fatalf("%s: last-activity %v, %v, want %v", name, at, err, now)
		}
		if got := markers(t, d); len(got) != 0 {
			t.Fatalf("%s: markers %v", name, got)
		}
	}
}

func TestRunFindOrder(t *testing.T) {
	a, b := worktree(t), worktree(t)
	now := time.Now().Truncate(time.Second)
	// --dir wins over the payload's cwd.
	hook.Run(strings.NewReader(payload(stopPayload, b.Worktree)), hook.Options{Dir: a.Worktree, Cwd: b.Worktree, Now: now})
	if _, err := a.LastActivity(); err != nil {
		t.Fatal("--dir was not used")
	}
	if _, err := b.LastActivity(); err == nil {
		t.Fatal("payload cwd used despite --dir")
	}
	// A payload cwd outside any worktree falls back to the process cwd.
	hook.Run(strings.NewReader(payload(stopPayload, t.TempDir())), hook.Options{Cwd: b.Worktree, Now: now})
	if _, err := b.LastActivity(); err != nil {
		t.Fatal("process cwd fallback not used")
	}
}

func TestRunNoWorktree(t *testing.T) {
	empty := t.TempDir()
	_, err := hook.Run(strings.NewReader(payload(prePayload, empty)), hook.Options{Cwd: empty, Now: time.Now()})
	if !errors.Is(err, hook.ErrNoWorktree) {
		t.Fatalf("got %v, want ErrNoWorktree", err)
	}
	ents, _ := os.ReadDir(empty)
	if len(ents) != 0 {
		t.Fatalf("hook created %v", ents)
	}
}

func TestRunPostWithoutID(t *testing.T) {
	d := worktree(t)
	now := time.Now().Truncate(time.Second)
	d.StartInFlight("toolu_old", "Read", now.Add(-2*time.Minute))
	d.StartInFlight("toolu_new", "Read", now.Add(-time.Minute))
	d.StartInFlight("toolu_bash", "Bash", now.Add(-3*time.Minute))
	in := `{"cwd":"` + d.Worktree + `","hook_event_name":"PostToolUse","tool_name":"Read"}`
	if _, err := hook.Run(strings.NewReader(in), hook.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(markers(t, d), ",")
	if got != "toolu_bash=Bash,toolu_new=Read" {
		t.Fatalf("markers %s, want the oldest Read gone", got)
	}
}

func TestRunClosedAndTerminalStdin(t *testing.T) {
	d := worktree(t)
	now := time.Now().Truncate(time.Second)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	r.Close() // a closed descriptor
	if _, err := hook.Run(r, hook.Options{Cwd: d.Worktree, Now: now}); err != nil {
		t.Fatalf("closed stdin: %v", err)
	}
	if at, _ := d.LastActivity(); !at.Equal(now) {
		t.Fatalf("closed stdin: last-activity %v", at)
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	now2 := now.Add(time.Second)
	if _, err := hook.Run(devnull, hook.Options{Cwd: d.Worktree, Now: now2}); err != nil {
		t.Fatalf("/dev/null: %v", err)
	}
	if at, _ := d.LastActivity(); !at.Equal(now2) {
		t.Fatalf("/dev/null: last-activity %v", at)
	}
}

func TestRunStdinNeverClosed(t *testing.T) {
	for _, pipe := range []struct {
		name string
		make func(t *testing.T) (r, w *os.File)
	}{
		{"a pipe Go polls", func(t *testing.T) (*os.File, *os.File) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			return r, w
		}},
		// What an agent hands its hook: a pipe whose read end is blocking
		// (Node clears O_NONBLOCK on a child's standard streams), which
		// os.NewFile leaves out of Go's poller, so SetReadDeadline fails.
		{"a blocking pipe, as agents give it", func(t *testing.T) (*os.File, *os.File) {
			var p [2]int
			if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			r := os.NewFile(uintptr(p[0]), "stdin")
			if err := r.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
				t.Fatalf("SetReadDeadline on a blocking pipe: %v, want os.ErrNoDeadline (the case under test)", err)
			}
			return r, os.NewFile(uintptr(p[1]), "writer")
		}},
	} {
		t.Run(pipe.name, func(t *testing.T) {
			d := worktree(t)
			r, w := pipe.make(t)
			defer r.Close()
			defer w.Close()
			w.Write([]byte(`{"cwd":"` + d.Worktree + `","hook_event_name":"PostToolUse"`)) // and never closes
			done := make(chan error, 1)
			go func() { _, err := hook.Run(r, hook.Options{Now: time.Now()}); done <- err }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * hook.StdinWait):
				t.Fatal("hook hangs on a stdin that never closes")
			}
			if _, err := d.LastActivity(); err != nil {
				t.Fatal("fields read before the stall were not applied")
			}
		})
	}
}

// TestRunWritesRecordAndCounts: the hook leaves a record saying it ran
// (source, event, tool, time) and counts every run, PreToolUse included,
// so the loop can tell a wired hook from a touch by start-work.
func TestRunWritesRecordAndCounts(t *testing.T) {
	d := worktree(t)
	c, err := d.NewHookCounter()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	if _, err := hook.Run(strings.NewReader(payload(prePayload, d.Worktree)), hook.Options{Now: t0}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Take(); n != 1 {
		t.Errorf("after PreToolUse: %d hook events counted, want 1", n)
	}
	if _, err := d.LastActivity(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("PreToolUse wrote last-activity: %v", err)
	}
	t1 := t0.Add(time.Minute)
	if _, err := hook.Run(strings.NewReader(payload(failurePayload, d.Worktree)), hook.Options{Now: t1}); err != nil {
		t.Fatal(err)
	}
	rec, ok, mtime, err := d.ReadActivity()
	if err != nil || !ok {
		t.Fatalf("record after PostToolUseFailure: %v %v", ok, err)
	}
	if rec.Source != gyrumdir.SourceHook || rec.Event != "PostToolUseFailure" || rec.Tool != "Bash" || !rec.At.Equal(t1) || !mtime.Equal(t1) {
		t.Errorf("record: got %+v mtime %v, want hook/PostToolUseFailure/Bash at %v", rec, mtime, t1)
	}
	if _, err := hook.Run(strings.NewReader(""), hook.Options{Cwd: d.Worktree, Now: t1.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if rec, ok, _, _ := d.ReadActivity(); !ok || rec.Source != gyrumdir.SourceHook || rec.Event != "" {
		t.Errorf("plain call: record %+v %v, want a hook record without event", rec, ok)
	}
	if n, _ := c.Take(); n != 2 {
		t.Errorf("after two more runs: %d hook events counted, want 2", n)
	}
	if fired, err := d.HookFiredSince(t0); !fired || err != nil {
		t.Errorf("HookFiredSince: %v %v, want true", fired, err)
	}
}
