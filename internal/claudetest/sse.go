package claudetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// stopReason is "tool_use" for a turn with tool calls, else "end_turn".
func (t Turn) stopReason() string {
	if len(t.Tools) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// blocks returns the turn's content blocks as the API sends them.
func (t Turn) blocks() []map[string]any {
	var out []map[string]any
	if t.Text != "" || len(t.Tools) == 0 {
		out = append(out, map[string]any{"type": "text", "text": t.Text})
	}
	for _, tu := range t.Tools {
		in := tu.Input
		if in == nil {
			in = map[string]any{}
		}
		out = append(out, map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": in})
	}
	return out
}

func usage(out int) map[string]any {
	return map[string]any{"input_tokens": 10, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

// writeJSON answers a non-streaming request.
func writeJSON(w http.ResponseWriter, id, model string, t Turn) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": t.blocks(), "stop_reason": t.stopReason(), "stop_sequence": nil,
		"usage": usage(5),
	})
}

// writeSSE answers a streaming request with the event sequence of the
// Messages API: message_start, per block content_block_start, deltas
// (text_delta, or input_json_delta in two pieces), content_block_stop,
// then message_delta with the stop reason and message_stop.
func writeSSE(w http.ResponseWriter, id, model string, t Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(1),
	}})
	send("ping", map[string]any{})
	for i, b := range t.blocks() {
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
			half := len(in) / 2
			for half > 0 && !utf8.RuneStart(in[half]) {
				half--
			}
			for _, part := range []string{string(in[:half]), string(in[half:])} {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": t.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	send("message_stop", map[string]any{})
}
