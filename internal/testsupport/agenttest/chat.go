package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// chat is the shape of the OpenAI chat completions API, the shape most
// agent CLIs speak to an "OpenAI-compatible" provider: give them
// URL()+"/v1" as the base URL. It answers POST .../chat/completions as
// the request asks: streamed (stream: true) as `data: <chunk>` events,
// each a chat.completion.chunk whose choices[0].delta carries the role,
// then pieces of the content or of the tool calls (delta.tool_calls: the
// call's index, id, type "function" and name first, then its arguments
// in pieces), then a chunk with an empty delta and the finish_reason
// ("tool_calls" or "stop"), a usage chunk with no choices when
// stream_options.include_usage asks for it, and `data: [DONE]`; or whole,
// as one chat.completion with choices[0].message.
//
// A request offering tools is the main conversation; one without tools is
// a helper (a title, a summary: KindHelper). GET .../models lists one
// model. The model's earlier tool calls come back as an assistant
// message's tool_calls, their results as role "tool" messages naming the
// call in tool_call_id. The system (or developer) messages that open the
// conversation are Request.System, not Messages.
type chat struct{}

// chatContent is a message's content: a string, a list of parts
// ({"type": "text", "text": ...}), or null.
type chatContent []string

// UnmarshalJSON accepts a string, a list of parts or null.
func (c *chatContent) UnmarshalJSON(data []byte) error {
	if s, ok := jsonString(data); ok {
		*c = chatContent{s}
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(data, &parts); err != nil {
		return err
	}
	*c = nil
	for _, p := range parts {
		if p.Text != "" {
			*c = append(*c, p.Text)
		}
	}
	return nil
}

// chatBody is the part of a request body the fake reads.
type chatBody struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role      string      `json:"role"`
		Content   chatContent `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (chat) parse(r *http.Request, req *Request) {
	var body chatBody
	_ = json.Unmarshal(req.Raw, &body)
	req.Model, req.Stream = body.Model, body.Stream
	for _, tool := range body.Tools {
		req.Tools = append(req.Tools, tool.Function.Name)
	}
	var system []string
	for _, m := range body.Messages {
		if (m.Role == "system" || m.Role == "developer") && len(req.Messages) == 0 {
			system = append(system, m.Content...)
			continue
		}
		msg := Message{Role: m.Role}
		if m.Role == "tool" {
			msg.Parts = []Part{{ResultOf: m.ToolCallID, Text: strings.Join(m.Content, "\n")}}
		} else {
			for _, s := range m.Content {
				msg.Parts = append(msg.Parts, Part{Text: s})
			}
		}
		for _, tc := range m.ToolCalls {
			var args map[string]any
			_ = json.Unmarshal([]byte(tc.Function.Arguments), &args)
			msg.Parts = append(msg.Parts, Part{Call: &Call{ID: tc.ID, Name: tc.Function.Name, Args: args}})
		}
		req.Messages = append(req.Messages, msg)
	}
	req.System = strings.Join(system, "\n")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") && len(req.Tools) > 0:
		req.Kind = KindMain
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		req.Kind = KindHelper
	}
}

func (chat) write(w http.ResponseWriter, req Request, turn Turn) {
	if req.Kind == KindOther {
		if req.Method == http.MethodGet && strings.HasSuffix(req.Path, "/models") {
			writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
				map[string]any{"id": "gpt-fake", "object": "model", "created": 0, "owned_by": "agenttest"}}})
			return
		}
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": "no such endpoint: " + req.Method + " " + req.Path, "type": "invalid_request_error", "param": nil, "code": nil}})
		return
	}
	var body chatBody
	_ = json.Unmarshal(req.Raw, &body)
	model := req.Model
	if model == "" {
		model = "gpt-fake"
	}
	id := fmt.Sprintf("chatcmpl-%s%04d", idPrefix, req.Seq)
	created := time.Now().Unix()
	finish := "stop"
	if len(turn.Calls) > 0 {
		finish = "tool_calls"
	}
	var content any // null when the turn only calls tools
	if turn.Text != "" || len(turn.Calls) == 0 {
		content = turn.Text
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": content, "refusal": nil}
		if len(turn.Calls) > 0 {
			var calls []any
			for _, c := range turn.Calls {
				calls = append(calls, map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": chatArgs(c)}})
			}
			msg["tool_calls"] = calls
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   usage})
		return
	}
	ev := startEvents(w, "\n")
	// chunk sends one chunk: its choice's delta and finish_reason, or no
	// choice and the usage. Every other chunk carries "usage": null when
	// the client asked for usage.
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if delta == nil {
			c["choices"] = []any{}
		}
		if body.StreamOptions.IncludeUsage {
			c["usage"] = usage
		}
		ev.send("", c)
	}
	// The role first, with an empty content (null when the turn only
	// calls tools), then the text in pieces.
	first := map[string]any{"role": "assistant", "content": ""}
	if content == nil {
		first["content"] = nil
	}
	chunk(first, nil, nil)
	for _, piece := range halves(turn.Text) {
		if piece != "" {
			chunk(map[string]any{"content": piece}, nil, nil)
		}
	}
	for i, c := range turn.Calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		for _, piece := range halves(chatArgs(c)) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": piece}}}}, nil, nil)
		}
	}
	chunk(map[string]any{}, finish, nil)
	if body.StreamOptions.IncludeUsage {
		chunk(nil, nil, usage)
	}
	ev.send("", "[DONE]")
}

// chatArgs is c's arguments as the API sends them: a JSON document in a
// string (without Go's escaping of <, > and &).
func chatArgs(c Call) string {
	args := c.Args
	if args == nil {
		args = map[string]any{}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(args)
	return strings.TrimSuffix(b.String(), "\n")
}
