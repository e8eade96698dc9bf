package claudetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/agenttest"
)

// mainBody is a minimal main-conversation request body.
func mainBody(stream bool, messages ...any) map[string]any {
	if messages == nil {
		messages = []any{map[string]any{"role": "user", "content": "hi"}}
	}
	return map[string]any{
		"model":    "claude-test",
		"stream":   stream,
		"system":   []any{map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=sdk-cli;"}},
		"tools":    []any{map[string]any{"name": "Bash"}, map[string]any{"name": "Write"}},
		"messages": messages,
	}
}

func post(t *testing.T, ctx context.Context, url string, body any) (*http.Response, error) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Event string
	Data  map[string]any
}

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("data of %s is not JSON: %v: %s", cur.Event, err, line)
			}
			if cur.Data["type"] != cur.Event {
				t.Errorf("event %s carries type %v", cur.Event, cur.Data["type"])
			}
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// assembled is a message rebuilt from a stream the way a client does.
type assembled struct {
	stop   string
	blocks []map[string]any
}

func assemble(t *testing.T, evs []sseEvent) assembled {
	t.Helper()
	var a assembled
	partial := map[int]string{}
	if len(evs) < 3 || evs[0].Event != "message_start" || evs[len(evs)-1].Event != "message_stop" ||
		evs[len(evs)-2].Event != "message_delta" {
		t.Fatalf("stream shape: %v", evs)
	}
	open := -1
	for _, e := range evs {
		switch e.Event {
		case "content_block_start":
			idx := int(e.Data["index"].(float64))
			if open != -1 || idx != len(a.blocks) {
				t.Fatalf("block %d starts while %d open (%d done)", idx, open, len(a.blocks))
			}
			open = idx
			a.blocks = append(a.blocks, e.Data["content_block"].(map[string]any))
		case "content_block_delta":
			idx := int(e.Data["index"].(float64))
			if idx != open {
				t.Fatalf("delta for %d while %d open", idx, open)
			}
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				a.blocks[idx]["text"] = a.blocks[idx]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[idx] += d["partial_json"].(string)
			default:
				t.Fatalf("delta type %v", d["type"])
			}
		case "content_block_stop":
			idx := int(e.Data["index"].(float64))
			if idx != open {
				t.Fatalf("stop of %d while %d open", idx, open)
			}
			if js, ok := partial[idx]; ok {
				var in map[string]any
				if err := json.Unmarshal([]byte(js), &in); err != nil {
					t.Fatalf("input of block %d: %v: %s", idx, err, js)
				}
				a.blocks[idx]["input"] = in
			}
			open = -1
		case "message_delta":
			a.stop = e.Data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	return a
}

func TestSSEShape(t *testing.T) {
	bash := Bash("echo héllo ✓", Background(), Timeout(90*time.Second), Description("d"))
	w := Write("/tmp/x", "content\n")
	m := NewFakeModel(t, Turn{Text: "Running it.", Tools: []ToolUse{bash, w}}, Text("All done."))

	resp, err := post(t, context.Background(), m.URL()+"/v1/messages?beta=true", mainBody(true))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	a := assemble(t, readSSE(t, resp.Body))
	resp.Body.Close()
	if a.stop != "tool_use" {
		t.Errorf("stop_reason %q, want tool_use", a.stop)
	}
	if len(a.blocks) != 3 || a.blocks[0]["type"] != "text" || a.blocks[0]["text"] != "Running it." {
		t.Fatalf("blocks %v", a.blocks)
	}
	for i, want := range []ToolUse{bash, w} {
		b := a.blocks[i+1]
		if b["type"] != "tool_use" || b["id"] != want.ID || b["name"] != want.Name {
			t.Errorf("block %d = %v, want %s %s", i+1, b, want.Name, want.ID)
		}
		got, _ := json.Marshal(b["input"])
		exp, _ := json.Marshal(want.Input)
		if !bytes.Equal(got, exp) {
			t.Errorf("input %s, want %s", got, exp)
		}
	}
	if in := a.blocks[1]["input"].(map[string]any); in["run_in_background"] != true || in["timeout"] != float64(90000) || in["description"] != "d" {
		t.Errorf("bash options: %v", in)
	}

	resp, err = post(t, context.Background(), m.URL()+"/v1/messages", mainBody(true))
	if err != nil {
		t.Fatal(err)
	}
	a = assemble(t, readSSE(t, resp.Body))
	resp.Body.Close()
	if a.stop != "end_turn" || len(a.blocks) != 1 || a.blocks[0]["text"] != "All done." {
		t.Errorf("second turn: %+v", a)
	}
}

func TestJSONAnswer(t *testing.T) {
	call := Read("/etc/hostname")
	m := NewFakeModel(t, Tools(call))
	resp, err := post(t, context.Background(), m.URL()+"/v1/messages", mainBody(false))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Type, Role, StopReason string
		Content                []map[string]any
	}
	var raw map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(data, &msg)
	if raw["type"] != "message" || raw["role"] != "assistant" || raw["stop_reason"] != "tool_use" {
		t.Errorf("message %s", data)
	}
	content := raw["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["id"] != call.ID ||
		content[0].(map[string]any)["input"].(map[string]any)["file_path"] != "/etc/hostname" {
		t.Errorf("content %v", content)
	}
}

func TestScriptOrderAndExhaustion(t *testing.T) {
	m := NewFakeModel(t, Text("one"), Text("two"))
	m.Add(Text("three"))
	for i, want := range []string{"one", "two", "three", "Done.", "Done."} {
		resp, err := post(t, context.Background(), m.URL()+"/v1/messages", mainBody(true))
		if err != nil {
			t.Fatal(err)
		}
		a := assemble(t, readSSE(t, resp.Body))
		resp.Body.Close()
		if a.blocks[0]["text"] != want || a.stop != "end_turn" {
			t.Errorf("answer %d = %v (%s), want %q", i, a.blocks, a.stop, want)
		}
	}
	if m.Served() != 3 {
		t.Errorf("served %d turns, want 3", m.Served())
	}
	reqs := m.MainRequests()
	if len(reqs) != 5 {
		t.Fatalf("%d main requests", len(reqs))
	}
	for i, r := range reqs {
		want := i
		if i >= 3 {
			want = -1
		}
		if r.Turn != want || r.N != i+1 {
			t.Errorf("request %d: N %d turn %d, want turn %d", i, r.N, r.Turn, want)
		}
	}
}

func TestAuxiliaryRequestsDoNotConsumeScript(t *testing.T) {
	m := NewFakeModel(t, Text("scripted"))
	noTools := mainBody(true)
	delete(noTools, "tools")
	sub := mainBody(true)
	sub["system"] = []any{map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cc_is_subagent=true;"}}
	for _, tc := range []struct {
		path string
		body any
		kind Kind
	}{
		{"/v1/messages", noTools, KindNoTools},
		{"/v1/messages?beta=true", sub, KindSubagent},
		{"/v1/messages/count_tokens?beta=true", mainBody(false), KindCountTokens},
	} {
		resp, err := post(t, context.Background(), m.URL()+tc.path, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(data), "scripted") {
			t.Errorf("%s: %d %s", tc.kind, resp.StatusCode, data)
		}
	}
	req, _ := http.NewRequest(http.MethodHead, m.URL()+"/api/hello", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if m.Served() != 0 {
		t.Fatalf("auxiliary requests consumed %d turns", m.Served())
	}
	var kinds []Kind
	for _, r := range m.Requests() {
		kinds = append(kinds, r.Kind)
	}
	want := []Kind{KindNoTools, KindSubagent, KindCountTokens, KindOther}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("kinds %v, want %v", kinds, want)
		}
	}
	resp, err = post(t, context.Background(), m.URL()+"/v1/messages", mainBody(true))
	if err != nil {
		t.Fatal(err)
	}
	a := assemble(t, readSSE(t, resp.Body))
	resp.Body.Close()
	if a.blocks[0]["text"] != "scripted" {
		t.Errorf("main request after auxiliary ones got %v", a.blocks)
	}
}

func TestStallReleasesOnClose(t *testing.T) {
	m := NewFakeModel(t, Stall(), Text("after"))
	errc := make(chan error, 1)
	go func() {
		resp, err := post(t, context.Background(), m.URL()+"/v1/messages", mainBody(true))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				err = errors.New("stalled request got an answer")
			}
		}
		errc <- err
	}()
	m.WaitRequests(5*time.Second, "the stalled request", func(r []Request) bool { return len(r) == 1 })
	select {
	case err := <-errc:
		t.Fatalf("stalled request ended before Close: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	m.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stalled request not released by Close")
	}
	if m.Served() != 1 {
		t.Errorf("served %d", m.Served())
	}
}

func TestStallReleasesOnClientCancel(t *testing.T) {
	m := NewFakeModel(t, Stall(), Text("after"))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		resp, err := post(t, ctx, m.URL()+"/v1/messages", mainBody(true))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	m.WaitRequests(5*time.Second, "the stalled request", func(r []Request) bool { return len(r) == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("canceled request succeeded")
	}
	// The next request gets the next turn.
	resp, err := post(t, context.Background(), m.URL()+"/v1/messages", mainBody(true))
	if err != nil {
		t.Fatal(err)
	}
	a := assemble(t, readSSE(t, resp.Body))
	resp.Body.Close()
	if a.blocks[0]["text"] != "after" {
		t.Errorf("got %v", a.blocks)
	}
}

func TestHold(t *testing.T) {
	release := make(chan struct{})
	m := NewFakeModel(t, Turn{Text: "held", Hold: release})
	got := make(chan string, 1)
	go func() {
		resp, err := post(t, context.Background(), m.URL()+"/v1/messages", mainBody(false))
		if err != nil {
			got <- err.Error()
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(data)
	}()
	m.WaitRequests(5*time.Second, "the held request", func(r []Request) bool { return len(r) == 1 })
	select {
	case s := <-got:
		t.Fatalf("answered before release: %s", s)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if s := <-got; !strings.Contains(s, `"held"`) {
		t.Errorf("answer %s", s)
	}
}

func TestRecordingAndSearch(t *testing.T) {
	m := NewFakeModel(t)
	// A conversation as Claude Code 2.1.328 sends it: string and block
	// contents, a tool_result with string content, a role "system"
	// message carrying hook context, a tool_result with block content.
	msgs := []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>\ngitStatus\n</system-reminder>"},
			map[string]any{"type": "text", "text": "do it"}}},
		map[string]any{"role": "system", "content": "# Environment"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": map[string]any{"command": "echo A"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": "A-OUT", "is_error": false}}},
		map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "PostToolUse:Bash hook additional context: MARKER-1"}}},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_b", "name": "Read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "B-ERR"}}}}},
	}
	resp, err := post(t, context.Background(), m.URL()+"/v1/messages?beta=true", mainBody(true, msgs...))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" || r.Kind != KindMain ||
		r.Header.Get("Content-Type") != "application/json" || r.At.IsZero() || len(r.Raw) == 0 {
		t.Errorf("request %+v", r)
	}
	if !strings.Contains(r.SystemText(), "cc_version") {
		t.Errorf("system %q", r.SystemText())
	}
	for _, s := range []string{"do it", "gitStatus", "# Environment", "A-OUT", "MARKER-1", "B-ERR"} {
		if !m.SawText(s) {
			t.Errorf("SawText(%q) false", s)
		}
	}
	if m.SawText("nothing like this") {
		t.Error("SawText of an absent text")
	}
	trs := m.ToolResults()
	if len(trs) != 2 {
		t.Fatalf("tool results %+v", trs)
	}
	if a := trs[0]; a.ToolUseID != "toolu_a" || a.Content != "A-OUT" || a.IsError || a.Request != 1 ||
		len(a.After) != 1 || a.After[0] != "PostToolUse:Bash hook additional context: MARKER-1" {
		t.Errorf("result a %+v", a)
	}
	if b, ok := m.ToolResult("toolu_b"); !ok || b.Content != "B-ERR" || !b.IsError || len(b.After) != 0 {
		t.Errorf("result b %+v", b)
	}
}

func TestToolIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := Bash("x").ID
		if !strings.HasPrefix(id, "toolu_") || seen[id] {
			t.Fatalf("id %q (dup %v)", id, seen[id])
		}
		seen[id] = true
	}
}

func TestProcessTree(t *testing.T) {
	procs, err := agenttest.Processes()
	if err != nil {
		t.Fatal(err)
	}
	var self *agenttest.Proc
	for i := range procs {
		if procs[i].PID == os.Getpid() {
			self = &procs[i]
		}
	}
	if self == nil {
		t.Fatal("own process not listed")
	}
	found := false
	for _, p := range agenttest.Descendants(procs, self.PPID) {
		if p.PID == self.PID {
			found = true
		}
	}
	if !found {
		t.Error("own process not a descendant of its parent")
	}
	if !strings.Contains(agenttest.Tree(procs, self.PID), "claudetest") {
		t.Errorf("tree:\n%s", agenttest.Tree(procs, self.PID))
	}
}
