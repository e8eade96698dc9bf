package agenttest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// responsesRequest is a minimal request of Codex in thread.
func responsesRequest(thread string, input ...any) map[string]any {
	input = orHi(input, map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hi"}}})
	return map[string]any{"model": "gpt-test", "stream": true, "instructions": "INSTRUCTIONS", "input": input,
		"tools":           []any{map[string]any{"type": "function", "name": "exec_command"}},
		"client_metadata": map[string]any{"thread_id": thread}}
}

// responseItems checks a Responses stream's events and returns its items.
func responseItems(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	evs := readSSE(t, data)
	if len(evs) < 2 || evs[0].Event != "response.created" || evs[len(evs)-1].Event != "response.completed" {
		t.Fatalf("stream shape %v", evs)
	}
	var items []map[string]any
	for _, e := range evs {
		d := decode(t, e.Data)
		if d["type"] != e.Event {
			t.Errorf("event %s carries type %v", e.Event, d["type"])
		}
		if e.Event == "response.output_item.done" {
			items = append(items, d["item"].(map[string]any))
		}
	}
	return items
}

func TestResponsesStream(t *testing.T) {
	call := Tool("exec_command", map[string]any{"cmd": "echo A", "yield_time_ms": 25000})
	m := NewResponses(t, Turn{Text: "Running.", Calls: []Call{call}}, Text("Done with it."))
	items := responseItems(t, postOK(t, m.URL()+"/v1/responses", responsesRequest("t1"), "text/event-stream"))
	if len(items) != 2 || items[0]["type"] != "message" || items[0]["role"] != "assistant" ||
		items[0]["content"].([]any)[0].(map[string]any)["text"] != "Running." {
		t.Fatalf("items %v", items)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(items[1]["arguments"].(string)), &args); err != nil || items[1]["type"] != "function_call" ||
		items[1]["call_id"] != call.ID || items[1]["name"] != "exec_command" || !sameJSON(args, call.Args) {
		t.Errorf("call item %v (%v)", items[1], err)
	}
	items = responseItems(t, postOK(t, m.URL()+"/v1/responses", responsesRequest("t1"), "text/event-stream"))
	if len(items) != 1 || items[0]["type"] != "message" {
		t.Errorf("text turn %v", items)
	}
	resp, err := http.Get(m.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || m.Served() != 2 {
		t.Errorf("GET /v1/models: %d, served %d", resp.StatusCode, m.Served())
	}
}

func TestResponsesInput(t *testing.T) {
	m := NewResponses(t)
	input := []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "do it"}}},
		map[string]any{"type": "function_call", "call_id": "call_a", "name": "exec_command", "arguments": `{"cmd":"echo A"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_a", "output": "Process exited with code 0\nOutput:\nA-OUT"},
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "hook: MARKER-1"}}},
		map[string]any{"type": "function_call", "call_id": "call_b", "name": "exec_command", "arguments": `{"cmd":"echo B"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_b", "output": []any{map[string]any{"type": "input_text", "text": "B-OUT"}}},
	}
	postOK(t, m.URL()+"/v1/responses", responsesRequest("t1", input...), "text/event-stream")
	r := m.MainRequests()[0]
	if r.Model != "gpt-test" || !r.Stream || r.System != "INSTRUCTIONS" || r.Thread != "t1" || len(r.Messages) != 6 ||
		strings.Join(r.Tools, ",") != "exec_command" {
		t.Fatalf("request %+v", r)
	}
	if c := r.Messages[1]; c.Role != "assistant" || c.Parts[0].Call == nil || c.Parts[0].Call.Args["cmd"] != "echo A" {
		t.Errorf("the call as sent back %+v", c)
	}
	a, ok := m.ToolResult("call_a")
	if !ok || !strings.HasSuffix(a.Content, "A-OUT") || a.Request != 1 || len(a.After) != 1 || a.After[0] != "hook: MARKER-1" {
		t.Errorf("result a %+v", a)
	}
	if b, _ := m.ToolResult("call_b"); b.Content != "B-OUT" {
		t.Errorf("result b %+v", b)
	}
	if !m.SawText("MARKER-1") || m.SawText("INSTRUCTIONS") {
		t.Error("SawText")
	}
}

func TestOneThread(t *testing.T) {
	m := NewResponses(t, Text("first"), Text("second")).OneThread()
	text := func(thread string) string {
		items := responseItems(t, postOK(t, m.URL()+"/v1/responses", responsesRequest(thread), "text/event-stream"))
		return items[0]["content"].([]any)[0].(map[string]any)["text"].(string)
	}
	for i, tc := range []struct{ thread, want string }{{"A", "first"}, {"B", "Done."}, {"A", "second"}, {"A", "Done."}} {
		if got := text(tc.thread); got != tc.want {
			t.Errorf("request %d of thread %s got %q, want %q", i, tc.thread, got, tc.want)
		}
	}
	reqs := m.Requests()
	if reqs[1].Kind != KindOtherThread || reqs[1].N != 0 || len(m.MainRequests()) != 3 {
		t.Errorf("requests %+v", reqs)
	}
}
