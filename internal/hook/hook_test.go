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
		got.CallKey = "" // TestParseCallKey
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
	// An earlier call's Post (another id).
	earlier := strings.Replace(payload(postPayload, d.Worktree), "toolu_01ABC123", "toolu_00EARLIER", 1)
	if _, err := hook.Run(strings.NewReader(earlier), hook.Options{Now: now}); err != nil {
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

// Gemini CLI 0.61's payloads, as recorded: no tool id; the same
// tool_input before and after the call.
const (
	geminiBefore = `{"session_id":"af815728","transcript_path":"/h/.gemini/tmp/proj/chats/session-af815728.jsonl","cwd":"CWD","hook_event_name":"BeforeTool","timestamp":"2026-12-04T23:31:07.269Z","tool_name":"run_shell_command","tool_input":{"command":"COMMAND","description":"slow"}}`
	geminiAfter  = `{"session_id":"af815728","transcript_path":"/h/.gemini/tmp/proj/chats/session-af815728.jsonl","cwd":"CWD","hook_event_name":"AfterTool","timestamp":"2026-12-04T23:31:09.369Z","tool_name":"run_shell_command","tool_input":{"command":"COMMAND","description":"slow"},"tool_response":{"llmContent":"<untrusted_context>\nOutput: one\n</untrusted_context>","returnDisplay":"one"}}`
)

func gemini(tmpl, cwd, command string) string {
	return strings.ReplaceAll(payload(tmpl, cwd), "COMMAND", command)
}

// A call without an id is named by its input: Before and After of one call
// agree, two calls differ, and a cut-off or missing input names nothing.
func TestParseCallKey(t *testing.T) {
	key := func(in string) string { return hook.Parse(strings.NewReader(in), hook.MaxInput).CallKey }
	before, after := key(gemini(geminiBefore, "/w", "sleep 12")), key(gemini(geminiAfter, "/w", "sleep 12"))
	if before == "" || before != after {
		t.Errorf("BeforeTool key %q, AfterTool key %q: want the same, not empty", before, after)
	}
	if other := key(gemini(geminiBefore, "/w", "sleep 2")); other == before {
		t.Errorf("two calls share the key %q", other)
	}
	if other := key(strings.Replace(gemini(geminiBefore, "/w", "sleep 12"), "run_shell_command", "read_file", 1)); other == before {
		t.Error("the same input to another tool shares the key")
	}
	in := gemini(geminiBefore, "/w", "sleep 12")
	if k := key(in[:strings.Index(in, "slow")]); k != "" {
		t.Errorf("a cut-off tool_input has the key %q", k)
	}
	if k := key(payload(stopPayload, "/w")); k != "" {
		t.Errorf("no tool_input, key %q", k)
	}
	if k := hook.Parse(strings.NewReader(payload(prePayload, "/w")), hook.MaxInput).CallKey; k == "" {
		t.Error("Claude Code's payload has a tool_input but no key (it is not used: tool_use_id wins)")
	}
}

// Two Gemini calls in one turn (12 s and 2 s): the short one's AfterTool
// ends its own marker, not the long one's, whatever their age.
func TestRunParallelCallsWithoutID(t *testing.T) {
	d := worktree(t)
	t0 := time.Now().Truncate(time.Second)
	run := func(in string, at time.Time) {
		t.Helper()
		if _, err := hook.Run(strings.NewReader(in), hook.Options{Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	run(gemini(geminiBefore, d.Worktree, "sleep 12"), t0)
	run(gemini(geminiBefore, d.Worktree, "sleep 2"), t0.Add(10*time.Millisecond))
	if ms, _ := d.InFlight(); len(ms) != 2 {
		t.Fatalf("markers after two BeforeTool: %+v, want 2", ms)
	}
	run(gemini(geminiAfter, d.Worktree, "sleep 2"), t0.Add(2*time.Second))
	ms, _ := d.InFlight()
	if len(ms) != 1 || !ms[0].Since.Equal(t0) || ms[0].Tool != "run_shell_command" || ms[0].ToolUseID() != "" {
		t.Fatalf("markers after the short call's AfterTool: %+v, want the long call's, started %v, with no tool_use_id", ms, t0)
	}
	run(gemini(geminiAfter, d.Worktree, "sleep 12"), t0.Add(12*time.Second))
	if ms, _ := d.InFlight(); len(ms) != 0 {
		t.Fatalf("markers after both AfterTool: %+v", ms)
	}
	// An id-less marker of a cut-off BeforeTool is still ended by the
	// next AfterTool of its tool; an input-keyed one is not.
	run(gemini(geminiBefore, d.Worktree, "sleep 12"), t0.Add(13*time.Second))
	d.StartInFlight("", "run_shell_command", t0.Add(14*time.Second))
	run(gemini(geminiAfter, d.Worktree, "cut"), t0.Add(15*time.Second))
	if got := strings.Join(markers(t, d), ","); !strings.HasPrefix(got, "input-") || strings.Contains(got, ",") {
		t.Fatalf("markers %s, want only the keyed call's", got)
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
