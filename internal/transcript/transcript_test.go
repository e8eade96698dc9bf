package transcript_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/transcript"
)

// Lines in the shape Claude Code 2.1.328 writes (testdata holds two real
// ones).
func useLine(id string) string {
	return fmt.Sprintf(`{"parentUuid":"p","isSidechain":false,"message":{"content":[{"id":%q,"input":{},"name":"mcp__e2e__wait","type":"tool_use"}],"role":"assistant","type":"message"},"type":"assistant","uuid":"u"}`, id) + "\n"
}

func resultLine(id string, isError bool) string {
	return fmt.Sprintf(`{"parentUuid":"p","type":"user","message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","is_error":%v,"content":"x"}]},"uuid":"v"}`, id, isError) + "\n"
}

func otherLine(n int) string {
	return fmt.Sprintf(`{"type":"attachment","attachment":{"type":"x","text":%q}}`, strings.Repeat("a", n)) + "\n"
}

func write(t *testing.T, path string, parts ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(parts, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path string, parts ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(parts, "")); err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, tr *transcript.Tracker, path, id string) transcript.Status {
	t.Helper()
	return tr.Status(path, []string{id})[id]
}

func TestStatusOfOneLook(t *testing.T) {
	const id = "toolu_01ABC"
	big := strings.Repeat("b", 200<<10) // a tool_use line longer than a read chunk
	tests := []struct {
		name    string
		content string
		want    transcript.Status
	}{
		{"call recorded, no result", otherLine(10) + useLine(id) + otherLine(100), transcript.Open},
		{"call returned", useLine(id) + otherLine(10) + resultLine(id, false) + otherLine(5), transcript.Finished},
		{"call denied: an error result at once", useLine(id) + resultLine(id, true), transcript.Finished},
		{"call not recorded yet", otherLine(10) + useLine("toolu_other"), transcript.Unknown},
		{"another call's result", useLine(id) + resultLine("toolu_other", false), transcript.Open},
		{"the id only inside text", otherLine(3) + fmt.Sprintf(`{"message":{"content":[{"type":"text","text":"\"id\":\"%s\" tool_use"}]}}`+"\n", id), transcript.Unknown},
		{"result line still being written", useLine(id) + strings.TrimSuffix(resultLine(id, false), "\n"), transcript.Open},
		{"tool_use line still being written", strings.TrimSuffix(useLine(id), "\n"), transcript.Unknown},
		{"a tool_use line over one chunk", strings.Replace(useLine(id), `"input":{}`, `"input":{"x":"`+big+`"}`, 1) + otherLine(70<<10), transcript.Open},
		{"the call is the first line", useLine(id), transcript.Open},
		{"not JSON", "garbage " + id + "\n", transcript.Unknown},
		{"empty", "", transcript.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.jsonl")
			write(t, p, tt.content)
			if got := status(t, transcript.NewTracker(), p, id); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The two lines the real CLI wrote for an MCP call that returned.
func TestRealClaudeCodeLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mcp-call-2.1.328.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "toolu_0146x3isDR000002"
	first, _, _ := bytes.Cut(data, []byte("\n"))
	p := filepath.Join(t.TempDir(), "s.jsonl")
	write(t, p, string(first)+"\n")
	tr := transcript.NewTracker()
	if got := status(t, tr, p, id); got != transcript.Open {
		t.Fatalf("after the tool_use line: got %v, want open", got)
	}
	write(t, p, string(data))
	if got := status(t, tr, p, id); got != transcript.Finished {
		t.Fatalf("after the tool_result line: got %v, want finished", got)
	}
}

// Later looks read only what was appended: a "result" planted in place
// in the part already read is not seen, one appended is.
func TestLaterLooksReadOnlyTheAppended(t *testing.T) {
	const id = "toolu_01ABC"
	p := filepath.Join(t.TempDir(), "s.jsonl")
	pad := otherLine(len(resultLine(id, false)) - len(otherLine(0)))
	write(t, p, useLine(id), pad)
	tr := transcript.NewTracker()
	if got := status(t, tr, p, id); got != transcript.Open {
		t.Fatalf("got %v, want open", got)
	}
	// Same size, same inode: overwrite the padding with a result.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(resultLine(id, false)), int64(len(useLine(id)))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := status(t, tr, p, id); got != transcript.Open {
		t.Fatalf("after a rewrite of what was read: got %v, want open (nothing appended)", got)
	}
	appendTo(t, p, otherLine(4))
	if got := status(t, tr, p, id); got != transcript.Open {
		t.Fatalf("after an unrelated line: got %v, want open", got)
	}
	appendTo(t, p, resultLine(id, false))
	if got := status(t, tr, p, id); got != transcript.Finished {
		t.Fatalf("after the result: got %v, want finished", got)
	}
}

// The agent writes its transcript a little after the hook runs: a call
// unknown at the first look becomes open when its line arrives.
func TestCallRecordedAfterTheFirstLook(t *testing.T) {
	const id = "toolu_01ABC"
	p := filepath.Join(t.TempDir(), "s.jsonl")
	write(t, p, otherLine(10))
	tr := transcript.NewTracker()
	if got := status(t, tr, p, id); got != transcript.Unknown {
		t.Fatalf("got %v, want unknown", got)
	}
	appendTo(t, p, useLine(id))
	if got := status(t, tr, p, id); got != transcript.Open {
		t.Fatalf("got %v, want open", got)
	}
}

func TestReplacedOrShortenedFileIsReadAfresh(t *testing.T) {
	const id = "toolu_01ABC"
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	write(t, p, useLine(id), otherLine(50))
	tr := transcript.NewTracker()
	if got := status(t, tr, p, id); got != transcript.Open {
		t.Fatalf("got %v, want open", got)
	}
	// Another file renamed over it (a new inode), holding the result
	// earlier than the old file's end.
	q := filepath.Join(dir, "new.jsonl")
	write(t, q, useLine(id), resultLine(id, false))
	if err := os.Rename(q, p); err != nil {
		t.Fatal(err)
	}
	if got := status(t, tr, p, id); got != transcript.Finished {
		t.Fatalf("after a replacement: got %v, want finished", got)
	}
	// Cut short in place.
	r := filepath.Join(dir, "r.jsonl")
	write(t, r, useLine(id), otherLine(500))
	if got := status(t, tr, r, id); got != transcript.Open {
		t.Fatalf("got %v, want open", got)
	}
	write(t, r, otherLine(1)) // truncates: the call is gone
	if got := status(t, tr, r, id); got != transcript.Unknown {
		t.Fatalf("after truncation: got %v, want unknown", got)
	}
}

func TestUnreadableIsUnknown(t *testing.T) {
	const id = "toolu_01ABC"
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"missing":        filepath.Join(dir, "nope.jsonl"),
		"directory":      dir,
		"fifo":           fifo,
		"link to a fifo": link,
		"device":         "/dev/zero",
		"empty path":     "",
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan transcript.Status, 1)
			go func() { done <- status(t, transcript.NewTracker(), p, id) }()
			select {
			case got := <-done:
				if got != transcript.Unknown {
					t.Errorf("got %v, want unknown", got)
				}
			case <-time.After(10 * time.Second): // a hang guard, not a speed limit
				t.Fatal("Status hung")
			}
		})
	}
}

// A call recorded further back than MaxBack is unknown, not open.
func TestCallBeyondMaxBackIsUnknown(t *testing.T) {
	const id = "toolu_01ABC"
	p := filepath.Join(t.TempDir(), "s.jsonl")
	filler := otherLine(1 << 20)
	write(t, p, useLine(id), strings.Repeat(filler, transcript.MaxBack/len(filler)+1))
	if got := status(t, transcript.NewTracker(), p, id); got != transcript.Unknown {
		t.Fatalf("got %v, want unknown", got)
	}
}

// Several calls in one transcript (a parallel pair): each has its own
// status, and a call no longer asked for is forgotten.
func TestParallelCalls(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.jsonl")
	write(t, p, useLine("toolu_short"), useLine("toolu_long"))
	tr := transcript.NewTracker()
	ids := []string{"toolu_short", "toolu_long"}
	got := tr.Status(p, ids)
	if got["toolu_short"] != transcript.Open || got["toolu_long"] != transcript.Open {
		t.Fatalf("got %v, want both open", got)
	}
	appendTo(t, p, resultLine("toolu_short", false))
	got = tr.Status(p, ids)
	if got["toolu_short"] != transcript.Finished || got["toolu_long"] != transcript.Open {
		t.Fatalf("got %v, want short finished, long open", got)
	}
}
