package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// mainBody is a minimal main-conversation request body of Claude Code.
func mainBody(stream bool, messages ...any) map[string]any {
	messages = orHi(messages, map[string]any{"role": "user", "content": "hi"})
	return map[string]any{
		"model":    "claude-test",
		"stream":   stream,
		"system":   []any{map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=sdk-cli;"}},
		"tools":    []any{map[string]any{"name": "Bash"}, map[string]any{"name": "Write"}},
		"messages": messages,
	}
}

// messageEvents parses a Messages stream: every event named, its data's
// type the event's name.
func messageEvents(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range readSSE(t, data) {
		d := decode(t, e.Data)
		if e.Event == "" || d["type"] != e.Event {
			t.Errorf("event %q carries type %v", e.Event, d["type"])
		}
		out = append(out, d)
	}
	return out
}

// assembled is a message rebuilt from a stream the way a client does.
type assembled struct {
	stop   string
	blocks []map[string]any
}

func assemble(t *testing.T, evs []map[string]any) assembled {
	t.Helper()
	var a assembled
	partial := map[int]string{}
	if len(evs) < 3 || evs[0]["type"] != "message_start" || evs[len(evs)-1]["type"] != "message_stop" ||
		evs[len(evs)-2]["type"] != "message_delta" {
		t.Fatalf("stream shape: %v", evs)
	}
	open := -1
	for _, e := range evs {
		switch e["type"] {
		case "content_block_start":
			idx := int(e["index"].(float64))
			if open != -1 || idx != len(a.blocks) {
				t.Fatalf("block %d starts while %d open (%d done)", idx, open, len(a.blocks))
			}
			open = idx
			a.blocks = append(a.blocks, e["content_block"].(map[string]any))
		case "content_block_delta":
			idx := int(e["index"].(float64))
			if idx != open {
				t.Fatalf("delta for %d while %d open", idx, open)
			}
			d := e["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				a.blocks[idx]["text"] = a.blocks[idx]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[idx] += d["partial_json"].(string)
			default:
				t.Fatalf("delta type %v", d["type"])
			}
		case "content_block_stop":
			idx := int(e["index"].(float64))
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
			a.stop = e["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	return a
}

// messages posts a main request to m and assembles the streamed answer.
func messages(t *testing.T, m *FakeModel, path string) assembled {
	t.Helper()
	return assemble(t, messageEvents(t, postOK(t, m.URL()+path, mainBody(true), "text/event-stream")))
}

func TestAnthropicStream(t *testing.T) {
	bash := Call{ID: CallID("toolu_01"), Name: "Bash", Args: map[string]any{"command": "echo héllo ✓", "run_in_background": true, "timeout": 90000}}
	w := Call{ID: CallID("toolu_01"), Name: "Write", Args: map[string]any{"file_path": "/tmp/x", "content": "content\n"}}
	m := NewAnthropic(t, Turn{Text: "Running it.", Calls: []Call{bash, w}}, Text("All done."))

	a := messages(t, m, "/v1/messages?beta=true")
	if a.stop != "tool_use" {
		t.Errorf("stop_reason %q, want tool_use", a.stop)
	}
	if len(a.blocks) != 3 || a.blocks[0]["type"] != "text" || a.blocks[0]["text"] != "Running it." {
		t.Fatalf("blocks %v", a.blocks)
	}
	for i, want := range []Call{bash, w} {
		b := a.blocks[i+1]
		if b["type"] != "tool_use" || b["id"] != want.ID || b["name"] != want.Name || !sameJSON(b["input"], want.Args) {
			t.Errorf("block %d = %v, want %+v", i+1, b, want)
		}
	}
	a = messages(t, m, "/v1/messages")
	if a.stop != "end_turn" || len(a.blocks) != 1 || a.blocks[0]["text"] != "All done." {
		t.Errorf("second turn: %+v", a)
	}
}

func TestAnthropicJSONAnswer(t *testing.T) {
	call := Call{ID: CallID("toolu_01"), Name: "Read", Args: map[string]any{"file_path": "/etc/hostname"}}
	m := NewAnthropic(t, Calls(call))
	var msg map[string]any
	if err := json.Unmarshal(postOK(t, m.URL()+"/v1/messages", mainBody(false), "application/json"), &msg); err != nil {
		t.Fatal(err)
	}
	if msg["type"] != "message" || msg["role"] != "assistant" || msg["stop_reason"] != "tool_use" {
		t.Errorf("message %v", msg)
	}
	content := msg["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["id"] != call.ID ||
		content[0].(map[string]any)["input"].(map[string]any)["file_path"] != "/etc/hostname" {
		t.Errorf("content %v", content)
	}
}

func TestScriptOrderAndExhaustion(t *testing.T) {
	m := NewAnthropic(t, Text("one"), Text("two"))
	m.Add(Text("three"))
	for i, want := range []string{"one", "two", "three", "Done.", "Done."} {
		a := messages(t, m, "/v1/messages")
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
		if r.Turn != want || r.N != i+1 || r.Seq != i+1 {
			t.Errorf("request %d: N %d seq %d turn %d, want turn %d", i, r.N, r.Seq, r.Turn, want)
		}
	}
}

func TestAnthropicSideRequestsDoNotConsumeScript(t *testing.T) {
	m := NewAnthropic(t, Text("scripted"))
	noTools := mainBody(true)
	delete(noTools, "tools")
	sub := mainBody(true)
	sub["system"] = []any{map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cc_is_subagent=true;"}}
	for _, tc := range []struct {
		path string
		body any
		kind Kind
	}{
		{"/v1/messages", noTools, KindHelper},
		{"/v1/messages?beta=true", sub, KindSubagent},
		{"/v1/messages/count_tokens?beta=true", mainBody(false), KindCount},
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
		t.Fatalf("side requests consumed %d turns", m.Served())
	}
	var kinds []Kind
	for _, r := range m.Requests() {
		kinds = append(kinds, r.Kind)
		if r.N != 0 {
			t.Errorf("side request %s numbered %d among the main ones", r.Kind, r.N)
		}
	}
	want := []Kind{KindHelper, KindSubagent, KindCount, KindOther}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("kinds %v, want %v", kinds, want)
		}
	}
	if a := messages(t, m, "/v1/messages"); a.blocks[0]["text"] != "scripted" {
		t.Errorf("main request after side ones got %v", a.blocks)
	}
	if r := m.MainRequests(); len(r) != 1 || r[0].N != 1 || r[0].Seq != 5 {
		t.Errorf("main requests %+v, want one, N 1, fifth to arrive", r)
	}
}

func TestStallReleasesOnClose(t *testing.T) {
	m := NewAnthropic(t, Stall(), Text("after"))
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
	m := NewAnthropic(t, Stall(), Text("after"))
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
	if a := messages(t, m, "/v1/messages"); a.blocks[0]["text"] != "after" {
		t.Errorf("got %v", a.blocks)
	}
}

func TestHold(t *testing.T) {
	release := make(chan struct{})
	m := NewAnthropic(t, Turn{Text: "held", Hold: release})
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

func TestAnthropicRecordingAndSearch(t *testing.T) {
	m := NewAnthropic(t)
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
	postOK(t, m.URL()+"/v1/messages?beta=true", mainBody(true, msgs...), "text/event-stream")

	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" || r.Kind != KindMain || !r.Stream ||
		r.Model != "claude-test" || r.Header.Get("Content-Type") != "application/json" || r.At.IsZero() || len(r.Raw) == 0 ||
		strings.Join(r.Tools, ",") != "Bash,Write" {
		t.Errorf("request %+v", r)
	}
	if !strings.Contains(r.System, "cc_version") {
		t.Errorf("system %q", r.System)
	}
	if len(r.Messages) != 7 || r.Messages[1].Role != "system" || r.Messages[1].Text() != "# Environment" {
		t.Errorf("messages %+v", r.Messages)
	}
	if c := r.Messages[2].Parts[0].Call; c == nil || c.ID != "toolu_a" || c.Name != "Bash" || c.Args["command"] != "echo A" {
		t.Errorf("the model's call as sent back: %+v", r.Messages[2].Parts)
	}
	for _, s := range []string{"do it", "gitStatus", "# Environment", "A-OUT", "MARKER-1", "B-ERR"} {
		if !m.SawText(s) {
			t.Errorf("SawText(%q) false", s)
		}
	}
	if m.SawText("nothing like this") || m.SawText("cc_version") {
		t.Error("SawText of a text the conversation does not hold")
	}
	trs := m.ToolResults()
	if len(trs) != 2 {
		t.Fatalf("tool results %+v", trs)
	}
	if a := trs[0]; a.CallID != "toolu_a" || a.Content != "A-OUT" || a.IsError || a.Request != 1 ||
		len(a.After) != 1 || a.After[0] != "PostToolUse:Bash hook additional context: MARKER-1" {
		t.Errorf("result a %+v", a)
	}
	if b, ok := m.ToolResult("toolu_b"); !ok || b.Content != "B-ERR" || !b.IsError || len(b.After) != 0 {
		t.Errorf("result b %+v", b)
	}
	if _, ok := m.ToolResult("toolu_none"); ok {
		t.Error("a result of a call never made")
	}
	if s := m.Summary(); !strings.Contains(s, "kind=main main=1 turn=-1 model=claude-test messages=7 tools=2") ||
		!strings.Contains(s, `[result toolu_b: "B-ERR"]`) {
		t.Errorf("summary %q", s)
	}
}

func TestCallIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := range 1000 {
		id := CallID("toolu_01")
		if i%2 == 1 {
			id = Tool("x", nil).ID
		}
		if (!strings.HasPrefix(id, "toolu_01") && !strings.HasPrefix(id, "call_")) || seen[id] {
			t.Fatalf("id %q (dup %v)", id, seen[id])
		}
		seen[id] = true
	}
}
