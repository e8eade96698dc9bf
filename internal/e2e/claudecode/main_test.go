package claudecode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
	"github.com/gyrum-labs/warp/internal/shellquote"
	"github.com/gyrum-labs/warp/internal/testsupport/agenttest"
)

var (
	// gyrumBin is the gyrum binary built once for the package's tests.
	gyrumBin string
	// testBin is this test binary: hooks run it as the recorder.
	testBin string
)

// recordArg makes the test binary act as a recording hook:
// `TESTBIN __record-hook EVENT` (see recordHook).
const recordArg = "__record-hook"

// mcpArg makes the test binary a stdio MCP server (agenttest.ServeMCP)
// that records its calls into $E2E_RECORD_DIR.
const mcpArg = "__mcp-server"

// recordDirVar names the directory the recorder writes to and reads its
// replies from.
const recordDirVar = "E2E_RECORD_DIR"

func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == recordArg {
		os.Exit(recordHook(os.Args[2]))
	}
	if len(os.Args) >= 2 && os.Args[1] == mcpArg {
		if err := agenttest.ServeMCP(context.Background(), os.Getenv(recordDirVar)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBin = exe
	os.Exit(e2etest.Main(m, claude.Find, &gyrumBin))
}

// record is what the recorder saw of one hook run (or of a Bash tool call
// that ran the recorder).
type record struct {
	At    time.Time `json:"at"`
	Event string    `json:"event"` // the recorder's argument
	PID   int       `json:"pid"`
	PPID  int       `json:"ppid"`
	PGID  int       `json:"pgid"`
	SID   int       `json:"sid"`
	// Parent is the recorder's parent process (the /bin/sh -c of a hook).
	Parent  agenttest.Proc    `json:"parent"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Raw     string            `json:"raw"`
	Payload map[string]any    `json:"payload"`
}

// str returns a top-level string field of the hook payload.
func (r record) str(key string) string { s, _ := r.Payload[key].(string); return s }

// toolInput returns a string field of the payload's tool_input.
func (r record) toolInput(key string) string {
	in, _ := r.Payload["tool_input"].(map[string]any)
	s, _ := in[key].(string)
	return s
}

// reply is what the recorder answers when its event matches and the raw
// payload contains Match.
type reply struct {
	Event  string `json:"event"`
	Match  string `json:"match"`
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	Exit   int    `json:"exit,omitempty"`
	// WaitFile makes the recorder wait (up to 20 s) until the file exists.
	WaitFile string `json:"wait_file,omitempty"`
}

// recordHook is the recorder's main: it records the run into
// $E2E_RECORD_DIR and answers the first matching reply of replies.json.
func recordHook(event string) int {
	raw, _ := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	rec := record{At: time.Now(), Event: event, PID: os.Getpid(), PPID: os.Getppid(),
		PGID: syscall.Getpgrp(), Env: map[string]string{}, Raw: string(raw)}
	if p, ok := agenttest.Lookup(os.Getpid()); ok {
		rec.SID = p.SID
	}
	rec.Parent, _ = agenttest.Lookup(rec.PPID)
	rec.Cwd, _ = os.Getwd()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		rec.Env[k] = v
	}
	_ = json.Unmarshal(raw, &rec.Payload)
	dir := os.Getenv(recordDirVar)
	if dir == "" {
		return 0
	}
	data, _ := json.Marshal(rec)
	name := filepath.Join(dir, fmt.Sprintf("rec-%d-%d.json", rec.At.UnixNano(), rec.PID))
	if err := os.WriteFile(name+".tmp", data, 0o600); err == nil {
		_ = os.Rename(name+".tmp", name)
	}
	var replies []reply
	if data, err := os.ReadFile(filepath.Join(dir, "replies.json")); err == nil {
		_ = json.Unmarshal(data, &replies)
	}
	for _, r := range replies {
		if r.Event != event || !strings.Contains(string(raw), r.Match) {
			continue
		}
		if r.WaitFile != "" {
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := os.Stat(r.WaitFile); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		fmt.Fprint(os.Stdout, r.Stdout)
		fmt.Fprint(os.Stderr, r.Stderr)
		return r.Exit
	}
	return 0
}

// recorder is one test's recording directory.
type recorder struct {
	t   *testing.T
	dir string
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{t: t, dir: t.TempDir()}
}

// env returns the variable that points the recorder at this directory.
func (r *recorder) env() (string, string) { return recordDirVar, r.dir }

// setReplies writes the recorder's replies.
func (r *recorder) setReplies(replies ...reply) {
	r.t.Helper()
	data, err := json.Marshal(replies)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "replies.json"), data, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// records returns every record so far, oldest first.
func (r *recorder) records() []record {
	r.t.Helper()
	names, _ := filepath.Glob(filepath.Join(r.dir, "rec-*.json"))
	var out []record
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		var rec record
		if err := json.Unmarshal(data, &rec); err != nil {
			r.t.Fatalf("%s: %v", n, err)
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// of returns the records of event for tool call id ("" matches every call).
func (r *recorder) of(event, id string) []record {
	var out []record
	for _, rec := range r.records() {
		if rec.Event == event && (id == "" || rec.str("tool_use_id") == id) {
			out = append(out, rec)
		}
	}
	return out
}

// one returns the single record of event for tool call id.
func (r *recorder) one(event, id string) record {
	r.t.Helper()
	recs := r.of(event, id)
	if len(recs) != 1 {
		r.t.Fatalf("%d %s records for %s, want 1:\n%s", len(recs), event, id, r.summary())
	}
	return recs[0]
}

// summary lists the records, one a line.
func (r *recorder) summary() string {
	var b strings.Builder
	for _, rec := range r.records() {
		fmt.Fprintf(&b, "%s %-18s tool=%s id=%s cwd=%s pid=%d ppid=%d\n", rec.At.Format("15:04:05.000"),
			rec.Event, rec.str("tool_name"), rec.str("tool_use_id"), rec.str("cwd"), rec.PID, rec.PPID)
	}
	return b.String()
}

// toolEvents are the hook events that take a matcher.
var toolEvents = map[string]bool{"PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true}

// settings returns Claude Code settings that run the recorder for events.
func (r *recorder) settings(events ...string) map[string]any {
	hooks := map[string]any{}
	for _, ev := range events {
		group := map[string]any{"hooks": []any{map[string]any{
			"type": "command", "command": shellquote.Quote(testBin) + " " + recordArg + " " + ev, "timeout": 30}}}
		if toolEvents[ev] {
			group["matcher"] = "*"
		}
		hooks[ev] = []any{group}
	}
	return map[string]any{"hooks": hooks}
}

// bashRecord is a Bash command that runs the recorder as the tool call
// itself (event "BashTool"), so a test sees the tool shell's environment
// and process identity.
func bashRecord(tag string) string {
	return shellquote.Quote(testBin) + " " + recordArg + " BashTool </dev/null # " + tag
}

// setupHooks wires gyrum's hook into project/.claude/settings.json with
// the real `gyrum setup`, as a user does.
func setupHooks(t *testing.T, project string) {
	t.Helper()
	e2etest.SetupHooks(t, project, filepath.Join(".claude", "settings.json"), []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"})
}

// claimCall is a Bash tool call running `gyrum start-work ARGS`.
func claimCall(args string) agenttest.Call {
	return Bash(shellquote.Quote(gyrumBin)+" start-work "+args, Description("claim"))
}
