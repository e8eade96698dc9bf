package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// responses is the shape of the OpenAI Responses API as Codex uses it
// (give Codex URL()+"/v1" as a provider's base_url with wire_api
// "responses"). It answers POST .../responses with a streamed (SSE)
// response; any other request gets 404.
//
// What was measured on Codex 0.169.0 (docs/agents/codex.md): offline,
// `codex exec` sends only POST /v1/responses, one per model turn, "stream":
// true, with the whole history in "input". A function_call item with JSON
// arguments is a tool call; its result comes back in the next request as
// a function_call_output item with the same call_id.
type responses struct{}

// responsesItem is one item of a request's "input".
type responsesItem struct {
	Type      string `json:"type"`
	Role      string `json:"role,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    any    `json:"output,omitempty"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content,omitempty"`
}

func (responses) parse(r *http.Request, req *Request) {
	var body struct {
		Model        string          `json:"model"`
		Stream       bool            `json:"stream"`
		Instructions string          `json:"instructions"`
		Input        []responsesItem `json:"input"`
		Tools        []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Metadata struct {
			ThreadID string `json:"thread_id"`
		} `json:"client_metadata"`
	}
	_ = json.Unmarshal(req.Raw, &body)
	req.Model, req.Stream, req.System, req.Thread = body.Model, body.Stream, body.Instructions, body.Metadata.ThreadID
	for _, tool := range body.Tools {
		req.Tools = append(req.Tools, tool.Name)
	}
	for _, it := range body.Input {
		msg := Message{Role: it.Role}
		switch it.Type {
		case "function_call":
			var args map[string]any
			_ = json.Unmarshal([]byte(it.Arguments), &args)
			msg.Role = "assistant"
			msg.Parts = []Part{{Call: &Call{ID: it.CallID, Name: it.Name, Args: args}}}
		case "function_call_output":
			msg.Role = "tool"
			msg.Parts = []Part{{ResultOf: it.CallID, Text: outputText(it.Output)}}
		default:
			if msg.Role == "" {
				msg.Role = it.Type
			}
			for _, c := range it.Content {
				if c.Text != "" {
					msg.Parts = append(msg.Parts, Part{Text: c.Text})
				}
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses") {
		req.Kind = KindMain
	}
}

// outputText is the text of a function_call_output's output: a string, or
// the texts of a list of content items; anything else as JSON.
func outputText(o any) string {
	switch o := o.(type) {
	case nil:
		return ""
	case string:
		return o
	case []any:
		var texts []string
		for _, c := range o {
			if m, ok := c.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					texts = append(texts, s)
				}
			}
		}
		if len(texts) == len(o) {
			return strings.Join(texts, "\n")
		}
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// write streams turn as the Responses API does: response.created, one
// response.output_item.done per item, response.completed.
func (responses) write(w http.ResponseWriter, req Request, turn Turn) {
	if req.Kind == KindOther {
		http.NotFound(w, nil)
		return
	}
	id := fmt.Sprintf("resp_%s%04d", idPrefix, req.Seq)
	var items []map[string]any
	if turn.Text != "" {
		items = append(items, map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%s%04d", idPrefix, req.Seq),
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text}}})
	}
	for i, c := range turn.Calls {
		args, _ := json.Marshal(c.Args)
		items = append(items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s%04d_%d", idPrefix, req.Seq, i),
			"call_id": c.ID, "name": c.Name, "arguments": string(args)})
	}
	ev := startEvents(w, "\n")
	ev.send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	for _, it := range items {
		ev.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "item": it})
	}
	ev.send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}
