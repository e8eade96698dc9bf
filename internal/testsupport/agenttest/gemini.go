package agenttest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// gemini is the shape of the Gemini API (Gemini CLI: give it URL as
// GOOGLE_GEMINI_BASE_URL).
//
// What the CLI calls, measured on 0.61.0 (docs/agents/gemini-cli.md): with
// security.auth.selectedType "gemini-api-key" in settings.json, a -p run
// sends
//
//   - POST /v1beta/models/<flash-lite model>:generateContent — the model
//     router's classifier, which wants a JSON answer
//     {"complexity_reasoning", "complexity_score"} (other helper calls use
//     the same method): KindHelper;
//   - POST /v1beta/models/<model>:streamGenerateContent?alt=sse — the main
//     conversation, one request per model turn, answered as server-sent
//     events, each `data: <GenerateContentResponse>`.
//
// No model listing, no countTokens (answered anyway), no other traffic
// (404). A turn's functionCall parts carry an id; the CLI sends it back on
// the functionResponse, so the fake tells which call a result belongs to.
type gemini struct{}

// geminiContent is one message of a Gemini conversation.
type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         string `json:"text,omitempty"`
		FunctionCall *struct {
			ID   string         `json:"id"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"functionCall,omitempty"`
		FunctionResponse *struct {
			ID       string         `json:"id"`
			Name     string         `json:"name"`
			Response map[string]any `json:"response"`
		} `json:"functionResponse,omitempty"`
	} `json:"parts"`
}

func (gemini) parse(r *http.Request, req *Request) {
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, ":streamGenerateContent"):
		req.Kind, req.Stream = KindMain, true
	case strings.HasSuffix(p, ":generateContent"):
		req.Kind = KindHelper
	case strings.HasSuffix(p, ":countTokens"):
		req.Kind = KindCount
	}
	if _, after, ok := strings.Cut(r.URL.Path, "/models/"); ok {
		req.Model, _, _ = strings.Cut(after, ":")
	}
	var body struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(req.Raw, &body)
	if body.SystemInstruction != nil {
		req.System = geminiMessage(*body.SystemInstruction).Text()
	}
	for _, tool := range body.Tools {
		for _, f := range tool.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	for _, c := range body.Contents {
		req.Messages = append(req.Messages, geminiMessage(c))
	}
}

// geminiMessage decodes c. A function response's text is its "output"
// (run_shell_command), else its "error" (an error result), else the whole
// response as JSON.
func geminiMessage(c geminiContent) Message {
	msg := Message{Role: c.Role}
	for _, p := range c.Parts {
		switch {
		case p.FunctionCall != nil:
			msg.Parts = append(msg.Parts, Part{Call: &Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args}})
		case p.FunctionResponse != nil:
			part := Part{ResultOf: p.FunctionResponse.ID}
			resp := p.FunctionResponse.Response
			if s, ok := resp["output"].(string); ok {
				part.Text = s
			} else if s, ok := resp["error"].(string); ok {
				part.Text, part.IsError = s, true
			} else {
				data, _ := json.Marshal(resp)
				part.Text = string(data)
			}
			msg.Parts = append(msg.Parts, part)
		case p.Text != "":
			msg.Parts = append(msg.Parts, Part{Text: p.Text})
		}
	}
	return msg
}

func (gemini) write(w http.ResponseWriter, req Request, turn Turn) {
	usage := map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
	switch req.Kind {
	case KindHelper:
		// The router's classifier reads this JSON; other helpers take the
		// text as it is.
		writeJSON(w, http.StatusOK, map[string]any{"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": `{"complexity_reasoning":"scripted","complexity_score":10}`}}},
			"finishReason": "STOP", "index": 0}},
			"usageMetadata": usage})
		return
	case KindCount:
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 10})
		return
	case KindOther:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404, "message": "not found", "status": "NOT_FOUND"}})
		return
	}
	// One server-sent event holding the whole turn, as the API streams a
	// short answer.
	var parts []any
	if turn.Text != "" || len(turn.Calls) == 0 {
		parts = append(parts, map[string]any{"text": turn.Text})
	}
	for _, c := range turn.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": args}})
	}
	startEvents(w, "\r\n").send("", map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": usage, "modelVersion": "gemini-fake"})
}
