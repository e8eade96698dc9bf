package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic is the shape of the Anthropic Messages API (NewAnthropic; Claude Code:
// give it URL as ANTHROPIC_BASE_URL). It answers POST /v1/messages,
// streaming (SSE) or plain JSON as the request asks.
//
// What it takes as the main conversation, measured on Claude Code 2.1.328
// (docs/agents/claude-code.md): a POST /v1/messages whose body has a
// non-empty "tools" list and whose system prompt does not carry the
// subagent billing marker "cc_is_subagent=true". Everything else is a side
// request that gets a short harmless answer: subagent conversations,
// tool-less calls (KindHelper), token counting (POST
// /v1/messages/count_tokens), the connectivity probe HEAD /api/hello. In
// `-p` mode offline with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 the
// CLI sends only main requests.
//
// A turn with tool calls ends with stop_reason "tool_use", any other with
// "end_turn". A background Bash call takes three turns: the call, the turn
// that ends while it runs, and the answer to the wake-up request the CLI
// sends when it ends.
type anthropic struct{}

// anthropicContent is a message's content: the API accepts a string or a
// list of blocks; a string is decoded as one text block.
type anthropicContent []anthropicBlock

// anthropicBlock is one content block: text, tool_use, tool_result, ...
type anthropicBlock struct {
	Type string `json:"type"`
	// Text of a text block.
	Text string `json:"text,omitempty"`
	// ID, Name and Input of a tool_use block.
	ID    string         `json:"id,omitempty"`
	Name  string         `json:"name,omitempty"`
	Input map[string]any `json:"input,omitempty"`
	// ToolUseID, Content and IsError of a tool_result block.
	ToolUseID string           `json:"tool_use_id,omitempty"`
	Content   anthropicContent `json:"content,omitempty"`
	IsError   bool             `json:"is_error,omitempty"`
}

// UnmarshalJSON accepts a string or a list of blocks.
func (c *anthropicContent) UnmarshalJSON(data []byte) error {
	if s, ok := jsonString(data); ok {
		*c = anthropicContent{{Type: "text", Text: s}}
		return nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(data, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// texts returns every text of the content: text blocks and, recursively,
// tool_result contents.
func (c anthropicContent) texts() []string {
	var out []string
	for _, b := range c {
		if b.Text != "" {
			out = append(out, b.Text)
		}
		out = append(out, b.Content.texts()...)
	}
	return out
}

func (anthropic) parse(r *http.Request, req *Request) {
	var body struct {
		Model    string           `json:"model"`
		Stream   bool             `json:"stream"`
		System   anthropicContent `json:"system"`
		Messages []struct {
			// Role: Claude Code 2.1.328 also sends role "system" messages
			// mid-conversation (environment, hook additional context).
			Role    string           `json:"role"`
			Content anthropicContent `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(req.Raw, &body)
	req.Model, req.Stream = body.Model, body.Stream
	req.System = strings.Join(body.System.texts(), "\n")
	for _, tool := range body.Tools {
		req.Tools = append(req.Tools, tool.Name)
	}
	for _, m := range body.Messages {
		msg := Message{Role: m.Role}
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				msg.Parts = append(msg.Parts, Part{Call: &Call{ID: b.ID, Name: b.Name, Args: b.Input}})
			case "tool_result":
				msg.Parts = append(msg.Parts, Part{ResultOf: b.ToolUseID, Text: strings.Join(b.Content.texts(), "\n"), IsError: b.IsError})
			default:
				for _, s := range (anthropicContent{b}).texts() {
					msg.Parts = append(msg.Parts, Part{Text: s})
				}
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		req.Kind = KindCount
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		req.Kind = KindOther
	case len(body.Tools) == 0:
		req.Kind = KindHelper
	case strings.Contains(req.System, "cc_is_subagent=true"):
		req.Kind = KindSubagent
	default:
		req.Kind = KindMain
	}
}

func (anthropic) write(w http.ResponseWriter, req Request, turn Turn) {
	switch req.Kind {
	case KindOther:
		writeJSON(w, http.StatusOK, map[string]any{})
		return
	case KindCount:
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 1})
		return
	}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	id := fmt.Sprintf("msg_01fake%s%04d", idPrefix, req.Seq)
	stop := "end_turn"
	if len(turn.Calls) > 0 {
		stop = "tool_use"
	}
	// The turn's content blocks: a text block (also when the turn has
	// neither text nor calls), then one tool_use block a call.
	var blocks []map[string]any
	if turn.Text != "" || len(turn.Calls) == 0 {
		blocks = append(blocks, map[string]any{"type": "text", "text": turn.Text})
	}
	for _, c := range turn.Calls {
		in := c.Args
		if in == nil {
			in = map[string]any{}
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": in})
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(5),
		})
		return
	}
	// The event sequence of the Messages API: message_start, per block
	// content_block_start, deltas (text_delta, or input_json_delta in two
	// pieces), content_block_stop, then message_delta with the stop reason
	// and message_stop.
	ev := startEvents(w, "\n")
	send := func(event string, data map[string]any) {
		data["type"] = event
		ev.send(event, data)
	}
	send("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(1),
	}})
	send("ping", map[string]any{})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			if txt := b["text"].(string); txt != "" {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": txt}})
			}
		case "tool_use":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{
				"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			for _, part := range halves(string(in)) {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	send("message_stop", map[string]any{})
}

func anthropicUsage(out int) map[string]any {
	return map[string]any{"input_tokens": 10, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}
