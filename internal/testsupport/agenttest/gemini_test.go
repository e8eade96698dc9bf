package agenttest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// geminiRequest is a minimal request of Gemini CLI.
func geminiRequest(contents ...any) map[string]any {
	contents = orHi(contents, map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}})
	return map[string]any{"contents": contents,
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "SYSTEM"}}},
		"tools":             []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "run_shell_command"}}}}}
}

const geminiStream = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"

func TestGeminiStream(t *testing.T) {
	call := Tool("run_shell_command", map[string]any{"command": "pwd"})
	m := NewGemini(t, Calls(call), Text("All done."))
	data := postOK(t, m.URL()+geminiStream, geminiRequest(), "text/event-stream")
	if !strings.HasSuffix(string(data), "\r\n\r\n") {
		t.Errorf("events do not end in CRLF CRLF: %q", data)
	}
	evs := readSSE(t, data)
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	cand := decode(t, evs[0].Data)["candidates"].([]any)[0].(map[string]any)
	parts := cand["content"].(map[string]any)["parts"].([]any)
	fc, _ := parts[0].(map[string]any)["functionCall"].(map[string]any)
	if cand["finishReason"] != "STOP" || len(parts) != 1 || fc["id"] != call.ID || fc["name"] != call.Name || !sameJSON(fc["args"], call.Args) {
		t.Errorf("candidate %v", cand)
	}
	r := m.MainRequests()[0]
	if r.Model != "gemini-2.5-pro" || !r.Stream || r.System != "SYSTEM" || strings.Join(r.Tools, ",") != "run_shell_command" {
		t.Errorf("request %+v", r)
	}
}

func TestGeminiConversationAndSideRequests(t *testing.T) {
	m := NewGemini(t, Text("scripted"))
	for _, tc := range []struct {
		path   string
		status int
		kind   Kind
		want   string
	}{
		{"/v1beta/models/gemini-2.5-flash-lite:generateContent", 200, KindHelper, "complexity_score"},
		{"/v1beta/models/gemini-2.5-pro:countTokens", 200, KindCount, "totalTokens"},
		{"/v1beta/models", 404, KindOther, "NOT_FOUND"},
	} {
		resp, err := post(t, t.Context(), m.URL()+tc.path, geminiRequest())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.want) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, data)
		}
	}
	contents := []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "do it"}}},
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": "c1", "name": "run_shell_command", "args": map[string]any{"command": "pwd"}}},
			map[string]any{"functionCall": map[string]any{"id": "c2", "name": "run_shell_command", "args": map[string]any{}}}}},
		map[string]any{"role": "user", "parts": []any{
			map[string]any{"functionResponse": map[string]any{"id": "c1", "name": "run_shell_command", "response": map[string]any{"output": "Output: /p"}}},
			map[string]any{"functionResponse": map[string]any{"id": "c2", "name": "run_shell_command", "response": map[string]any{"error": "denied"}}},
			map[string]any{"text": "a reminder"}}},
	}
	postOK(t, m.URL()+geminiStream, geminiRequest(contents...), "text/event-stream")
	if m.Served() != 1 || len(m.Requests()) != 4 || len(m.MainRequests()) != 1 {
		t.Errorf("served %d of %d requests:\n%s", m.Served(), len(m.Requests()), m.Summary())
	}
	if c := m.MainRequests()[0].Messages[1]; c.Role != "model" || len(c.Parts) != 2 || c.Parts[0].Call.ID != "c1" {
		t.Errorf("the model's calls as sent back %+v", c)
	}
	if r, ok := m.ToolResult("c1"); !ok || r.Content != "Output: /p" || r.IsError || r.Request != 1 || len(r.After) != 1 || r.After[0] != "a reminder" {
		t.Errorf("result c1 %+v", r)
	}
	if r, _ := m.ToolResult("c2"); r.Content != "denied" || !r.IsError {
		t.Errorf("result c2 %+v", r)
	}
	resp, err := http.Get(m.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /: %d", resp.StatusCode)
	}
}
