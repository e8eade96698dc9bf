package agenttest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// chatRequest is a minimal chat completions request of an agent CLI.
func chatRequest(stream, usage bool, messages ...any) map[string]any {
	messages = orHi(messages, map[string]any{"role": "user", "content": "hi"})
	body := map[string]any{
		"model":    "qwen-test",
		"stream":   stream,
		"messages": messages,
		"tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "run_shell_command", "parameters": map[string]any{"type": "object"}}},
			map[string]any{"type": "function", "function": map[string]any{"name": "read_file", "parameters": map[string]any{"type": "object"}}},
		},
	}
	if usage {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	return body
}

// chatStream is a streamed answer rebuilt the way a client does.
type chatStream struct {
	id, model, finish string
	role              string
	content           string
	calls             []map[string]any // id, type, name, arguments (a JSON string)
	usage             map[string]any
	chunks            int
}

// readChatStream checks the stream's framing and assembles it: data-only
// events, chat.completion.chunk objects of one id, the role first, one
// finish_reason after every delta, the usage chunk (no choices) last when
// asked for, "usage": null on the others then, and [DONE] at the end.
func readChatStream(t *testing.T, data []byte, usage bool) chatStream {
	t.Helper()
	evs := readSSE(t, data)
	if len(evs) < 3 || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("stream does not end in [DONE]: %v", evs)
	}
	var s chatStream
	for i, e := range evs[:len(evs)-1] {
		if e.Event != "" {
			t.Errorf("chunk %d has an event name %q", i, e.Event)
		}
		c := decode(t, e.Data)
		s.chunks++
		if c["object"] != "chat.completion.chunk" || c["id"] == "" || c["created"] == nil {
			t.Errorf("chunk %d: %v", i, c)
		}
		if i == 0 {
			s.id, s.model = c["id"].(string), c["model"].(string)
		} else if c["id"] != s.id || c["model"] != s.model {
			t.Errorf("chunk %d of another completion: %v", i, c)
		}
		u, hasUsage := c["usage"]
		if hasUsage != usage {
			t.Errorf("chunk %d: usage key %v, want %v", i, hasUsage, usage)
		}
		choices := c["choices"].([]any)
		if len(choices) == 0 {
			if !usage || i != len(evs)-2 || u == nil {
				t.Errorf("chunk %d has no choice: %v", i, c)
			}
			s.usage, _ = u.(map[string]any)
			continue
		}
		if u != nil {
			t.Errorf("chunk %d: usage %v on a chunk with a choice", i, u)
		}
		if len(choices) != 1 {
			t.Fatalf("chunk %d: %d choices", i, len(choices))
		}
		ch := choices[0].(map[string]any)
		if ch["index"] != float64(0) {
			t.Errorf("chunk %d: choice index %v", i, ch["index"])
		}
		if s.finish != "" {
			t.Errorf("chunk %d after the finish_reason: %v", i, c)
		}
		if f, ok := ch["finish_reason"].(string); ok {
			s.finish = f
		} else if ch["finish_reason"] != nil {
			t.Errorf("chunk %d: finish_reason %v", i, ch["finish_reason"])
		}
		d := ch["delta"].(map[string]any)
		if r, ok := d["role"].(string); ok {
			if i != 0 {
				t.Errorf("role in chunk %d", i)
			}
			s.role = r
		}
		if txt, ok := d["content"].(string); ok {
			s.content += txt
		}
		fragments, _ := d["tool_calls"].([]any)
		for _, x := range fragments {
			tc := x.(map[string]any)
			idx := int(tc["index"].(float64))
			f := tc["function"].(map[string]any)
			if idx == len(s.calls) {
				if tc["id"] == nil || tc["type"] != "function" || f["name"] == nil {
					t.Errorf("chunk %d: call %d starts without its id, type or name: %v", i, idx, tc)
				}
				s.calls = append(s.calls, map[string]any{"id": tc["id"], "type": tc["type"], "name": f["name"], "arguments": ""})
			} else if idx != len(s.calls)-1 || tc["id"] != nil || f["name"] != nil {
				t.Fatalf("chunk %d: call fragment %v while call %d is open", i, tc, len(s.calls)-1)
			}
			s.calls[idx]["arguments"] = s.calls[idx]["arguments"].(string) + f["arguments"].(string)
		}
	}
	if s.role != "assistant" || s.finish == "" {
		t.Errorf("role %q finish %q", s.role, s.finish)
	}
	return s
}

func TestChatStreamToolCalls(t *testing.T) {
	shell := Tool("run_shell_command", map[string]any{"command": "echo héllo ✓ && ls", "description": "d"})
	read := Tool("read_file", map[string]any{"absolute_path": "/tmp/x"})
	m := NewChat(t, Turn{Text: "Running it.", Calls: []Call{shell, read}}, Text("All done."))

	s := readChatStream(t, postOK(t, m.URL()+"/v1/chat/completions", chatRequest(true, true), "text/event-stream"), true)
	if s.finish != "tool_calls" || s.content != "Running it." || s.model != "qwen-test" || !strings.HasPrefix(s.id, "chatcmpl-") {
		t.Errorf("answer %+v", s)
	}
	if len(s.calls) != 2 {
		t.Fatalf("calls %v", s.calls)
	}
	for i, want := range []Call{shell, read} {
		c := s.calls[i]
		var args map[string]any
		if err := json.Unmarshal([]byte(c["arguments"].(string)), &args); err != nil {
			t.Fatalf("arguments of call %d: %v: %q", i, err, c["arguments"])
		}
		if c["id"] != want.ID || c["name"] != want.Name || !sameJSON(args, want.Args) {
			t.Errorf("call %d = %v, want %+v", i, c, want)
		}
	}
	if s.usage == nil || s.usage["total_tokens"] == nil || s.usage["prompt_tokens"] == nil || s.usage["completion_tokens"] == nil {
		t.Errorf("usage %v", s.usage)
	}

	// A text turn, without usage asked for: no usage anywhere.
	s = readChatStream(t, postOK(t, m.URL()+"/v1/chat/completions", chatRequest(true, false), "text/event-stream"), false)
	if s.finish != "stop" || s.content != "All done." || len(s.calls) != 0 || s.usage != nil {
		t.Errorf("text turn %+v", s)
	}
}

func TestChatWholeAnswer(t *testing.T) {
	call := Tool("run_shell_command", map[string]any{"command": "pwd"})
	m := NewChat(t, Calls(call), Text("Finished."))
	var got struct {
		ID, Object, Model string
		Choices           []struct {
			Index   int
			Message struct {
				Role      string
				Content   *string
				ToolCalls []struct {
					ID, Type string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage map[string]int
	}
	data := postOK(t, m.URL()+"/v1/chat/completions", chatRequest(false, false), "application/json")
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.Model != "qwen-test" || len(got.Choices) != 1 || got.Usage["total_tokens"] == 0 {
		t.Fatalf("completion %s", data)
	}
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Role != "assistant" || c.Message.Content != nil || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("choice %s", data)
	}
	tc := c.Message.ToolCalls[0]
	if tc.ID != call.ID || tc.Type != "function" || tc.Function.Name != call.Name || tc.Function.Arguments != `{"command":"pwd"}` {
		t.Errorf("tool call %+v", tc)
	}

	data = postOK(t, m.URL()+"/v1/chat/completions", chatRequest(false, false), "application/json")
	got.Choices = nil
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Choices[0]; c.FinishReason != "stop" || c.Message.Content == nil || *c.Message.Content != "Finished." || len(c.Message.ToolCalls) != 0 {
		t.Errorf("text answer %s", data)
	}
}

func TestChatConversation(t *testing.T) {
	m := NewChat(t)
	// The history of a tool-calling conversation: the system prompt, the
	// user's text in parts, the model's calls (content null), their
	// results as role "tool" messages (a string, a list of parts), and a
	// user message after them carrying hook context.
	msgs := []any{
		map[string]any{"role": "system", "content": "You are an agent. SYSTEM-ONLY"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "do it"}}},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "run_shell_command", "arguments": `{"command":"echo A"}`}},
			map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_a", "content": "A-OUT"},
		map[string]any{"role": "tool", "tool_call_id": "call_b", "content": []any{map[string]any{"type": "text", "text": "B-OUT"}}},
		map[string]any{"role": "user", "content": "hook context: MARKER-1"},
		map[string]any{"role": "assistant", "content": "Next."},
		map[string]any{"role": "user", "content": "later"},
	}
	readChatStream(t, postOK(t, m.URL()+"/v1/chat/completions", chatRequest(true, false, msgs...), "text/event-stream"), false)
	r := m.MainRequests()[0]
	if r.Kind != KindMain || !r.Stream || r.Model != "qwen-test" || r.System != "You are an agent. SYSTEM-ONLY" ||
		strings.Join(r.Tools, ",") != "run_shell_command,read_file" || len(r.Messages) != 7 {
		t.Fatalf("request %+v", r)
	}
	if p := r.Messages[1].Parts; len(p) != 2 || p[0].Call == nil || p[0].Call.ID != "call_a" || p[0].Call.Args["command"] != "echo A" ||
		p[1].Call == nil || p[1].Call.Name != "read_file" {
		t.Errorf("the model's calls as sent back: %+v", p)
	}
	if m.SawText("SYSTEM-ONLY") || !m.SawText("do it") || !m.SawText("B-OUT") || !m.SawText("Next.") {
		t.Error("SawText does not see the conversation, or sees the system prompt")
	}
	a, ok := m.ToolResult("call_a")
	if !ok || a.Content != "A-OUT" || a.Request != 1 || len(a.After) != 1 || a.After[0] != "hook context: MARKER-1" {
		t.Errorf("result a %+v", a)
	}
	if b, ok := m.ToolResult("call_b"); !ok || b.Content != "B-OUT" || b.IsError {
		t.Errorf("result b %+v", b)
	}
}

func TestChatSideRequests(t *testing.T) {
	m := NewChat(t, Text("scripted"))
	title := chatRequest(false, false)
	delete(title, "tools")
	data := postOK(t, m.URL()+"/v1/chat/completions", title, "application/json")
	if strings.Contains(string(data), "scripted") || !strings.Contains(string(data), `"OK."`) {
		t.Errorf("a tool-less request got %s", data)
	}
	resp, err := http.Get(m.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if err := json.Unmarshal(data, &list); err != nil || resp.StatusCode != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0].Object != "model" {
		t.Errorf("models: %d %s (%v)", resp.StatusCode, data, err)
	}
	resp, err = http.Get(m.URL() + "/v1/embeddings")
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(data), `"error"`) {
		t.Errorf("unknown endpoint: %d %s", resp.StatusCode, data)
	}
	if m.Served() != 0 {
		t.Fatalf("side requests consumed %d turns", m.Served())
	}
	var kinds []Kind
	for _, r := range m.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if len(kinds) != 3 || kinds[0] != KindHelper || kinds[1] != KindOther || kinds[2] != KindOther {
		t.Errorf("kinds %v", kinds)
	}
	s := readChatStream(t, postOK(t, m.URL()+"/v1/chat/completions", chatRequest(true, false), "text/event-stream"), false)
	if s.content != "scripted" {
		t.Errorf("the main request after side ones got %+v", s)
	}
}
