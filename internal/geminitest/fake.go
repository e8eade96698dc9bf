// Package geminitest drives the real Gemini CLI (npm @google/gemini-cli,
// the version in Version, installed by .ci/install-gemini) against a
// scripted fake of the Gemini API, for end-to-end tests of gyrum's hooks
// and loop with the real client (internal/e2e/gemini). The fake is the only
// fake: the CLI, its hooks, its shell tool and the processes it starts are
// real.
//
// What the CLI calls, measured on 0.61.0 (docs/agents/gemini-cli.md): with
// GOOGLE_GEMINI_BASE_URL set and security.auth.selectedType
// "gemini-api-key" in settings.json, a -p run sends
//
//   - POST /v1beta/models/<flash-lite model>:generateContent — the model
//     router's classifier, which wants a JSON answer
//     {"complexity_reasoning", "complexity_score"} (other helper calls use
//     the same method);
//   - POST /v1beta/models/<model>:streamGenerateContent?alt=sse — the main
//     conversation, one request per model turn, answered as server-sent
//     events, each `data: <GenerateContentResponse>`.
//
// No model listing, no countTokens (answered anyway), no other traffic.
// A turn's functionCall parts carry an id; the CLI sends it back on the
// functionResponse, so the fake tells which call a result belongs to. The
// hook payloads carry no id at all.
package geminitest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one functionCall part of a model turn.
type Call struct {
	// ID is sent as the call's id; the CLI returns it on the result.
	ID   string
	Name string
	Args map[string]any
}

// Turn is one answer of the model in the main conversation: calls (run
// in parallel by the CLI) or text that ends the model's turn, or a stall.
type Turn struct {
	Calls []Call
	Text  string
	// Stall: the fake never answers (a wedged model or network) until
	// Close.
	Stall bool
}

// Text returns a turn that answers text and ends the model's turn.
func Text(s string) Turn { return Turn{Text: s} }

// Calls returns a turn that calls the given tools (in parallel).
func Calls(calls ...Call) Turn { return Turn{Calls: calls} }

// Stall returns a turn the fake never answers.
func Stall() Turn { return Turn{Stall: true} }

func randomAlnum(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// Tool returns a call of tool name with args and a fresh id.
func Tool(name string, args map[string]any) Call {
	return Call{ID: "call_" + randomAlnum(16), Name: name, Args: args}
}

// Shell returns a run_shell_command call of command, the CLI's shell tool
// (it runs `bash -c` in the project, a child of the agent process).
func Shell(command string) Call {
	return Tool("run_shell_command", map[string]any{"command": command, "description": "run a command"})
}

// Kind classifies a request the fake received.
type Kind string

// Request kinds.
const (
	KindMain  Kind = "main"  // streamGenerateContent: the conversation
	KindAux   Kind = "aux"   // generateContent: the router's classifier and other helpers
	KindCount Kind = "count" // countTokens
	KindOther Kind = "other" // anything else (answered 404)
)

// Request is one request the fake received.
type Request struct {
	// N numbers the main requests from 1 (0 for the others).
	N      int
	At     time.Time
	Kind   Kind
	Method string
	Path   string
	Query  string
	Body   GenerateRequest
}

// GenerateRequest is the part of a request body the tests look at.
type GenerateRequest struct {
	Contents []Content `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// Content is one message of the conversation.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one part of a message.
type Part struct {
	Text             string            `json:"text,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a call the model made, as the CLI sends it back.
type FunctionCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// FunctionResponse is the result of a call as the model is shown it.
type FunctionResponse struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

// Output returns the response's text: its "output" (run_shell_command),
// else "error", else the whole response as JSON.
func (r FunctionResponse) Output() string {
	for _, k := range []string{"output", "error"} {
		if s, ok := r.Response[k].(string); ok {
			return s
		}
	}
	data, _ := json.Marshal(r.Response)
	return string(data)
}

// Texts returns every text the request shows the model: text parts and
// function results.
func (r Request) Texts() []string {
	var out []string
	for _, c := range r.Body.Contents {
		for _, p := range c.Parts {
			if p.Text != "" {
				out = append(out, p.Text)
			}
			if p.FunctionResponse != nil {
				out = append(out, p.FunctionResponse.Output())
			}
		}
	}
	return out
}

// FakeModel is a scripted fake of the Gemini API. Create it with
// NewFakeModel.
type FakeModel struct {
	t      testing.TB
	srv    *http.Server
	url    string
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	turns    []Turn
	served   int
	requests []Request
	changed  chan struct{}
}

// NewFakeModel starts a fake on 127.0.0.1:0 answering the main requests
// with turns, in order, then Text("Done.") to every further one. It is
// closed at the end of the test.
func NewFakeModel(t testing.TB, turns ...Turn) *FakeModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &FakeModel{t: t, turns: turns, url: "http://" + ln.Addr().String(), changed: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	t.Cleanup(m.Close)
	return m
}

// URL is the base address to give the CLI as GOOGLE_GEMINI_BASE_URL.
func (m *FakeModel) URL() string { return m.url }

// Add appends turns to the script.
func (m *FakeModel) Add(turns ...Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns = append(m.turns, turns...)
}

// Close stops the server; stalled requests are released.
func (m *FakeModel) Close() {
	m.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	_ = m.srv.Close()
}

func (m *FakeModel) record(r Request) (Request, Turn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var turn Turn
	scripted := false
	if r.Kind == KindMain {
		n := 0
		for _, x := range m.requests {
			if x.Kind == KindMain {
				n++
			}
		}
		r.N = n + 1
		if m.served < len(m.turns) {
			turn, scripted = m.turns[m.served], true
			m.served++
		}
	}
	m.requests = append(m.requests, r)
	close(m.changed)
	m.changed = make(chan struct{})
	return r, turn, scripted
}

func (m *FakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Kind: KindOther}
	switch {
	case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		req.Kind = KindMain
	case strings.HasSuffix(r.URL.Path, ":generateContent"):
		req.Kind = KindAux
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		req.Kind = KindCount
	}
	_ = json.Unmarshal(body, &req.Body)
	_, turn, scripted := m.record(req)
	switch req.Kind {
	case KindMain:
		if !scripted {
			turn = Text("Done.")
		}
		if turn.Stall {
			select {
			case <-m.ctx.Done():
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, turn)
	case KindAux:
		// The router's classifier reads this JSON; other helpers take
		// the text as it is.
		writeJSON(w, map[string]any{"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": `{"complexity_reasoning":"scripted","complexity_score":10}`}}},
			"finishReason": "STOP", "index": 0}},
			"usageMetadata": usage()})
	case KindCount:
		writeJSON(w, map[string]any{"totalTokens": 10})
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
	}
}

func usage() map[string]any {
	return map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeEvent answers a main request: one server-sent event holding the
// whole turn, as the API streams a short answer.
func writeEvent(w http.ResponseWriter, t Turn) {
	var parts []any
	if t.Text != "" || len(t.Calls) == 0 {
		parts = append(parts, map[string]any{"text": t.Text})
	}
	for _, c := range t.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": args}})
	}
	data, _ := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": usage(), "modelVersion": "gemini-fake"})
	fmt.Fprintf(w, "data: %s\r\n\r\n", data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// Requests returns every request received so far, in arrival order.
func (m *FakeModel) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// MainRequests returns the requests of the main conversation.
func (m *FakeModel) MainRequests() []Request {
	var out []Request
	for _, r := range m.Requests() {
		if r.Kind == KindMain {
			out = append(out, r)
		}
	}
	return out
}

// WaitRequests waits up to timeout until cond holds of the main requests,
// failing the test with what it waited for.
func (m *FakeModel) WaitRequests(timeout time.Duration, what string, cond func([]Request) bool) {
	m.t.Helper()
	deadline := time.After(timeout)
	for {
		m.mu.Lock()
		ch := m.changed
		m.mu.Unlock()
		if cond(m.MainRequests()) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			m.t.Fatalf("timed out after %v waiting for %s; requests:\n%s", timeout, what, m.Summary())
		}
	}
}

// Result returns the result of call as the model was first shown it, and
// the number of the main request that showed it.
func (m *FakeModel) Result(call Call) (FunctionResponse, int, bool) {
	for _, r := range m.MainRequests() {
		for _, c := range r.Body.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil && p.FunctionResponse.ID == call.ID {
					return *p.FunctionResponse, r.N, true
				}
			}
		}
	}
	return FunctionResponse{}, 0, false
}

// FirstWithText returns the first main request any text of which contains
// substr.
func (m *FakeModel) FirstWithText(substr string) (Request, bool) {
	for _, r := range m.MainRequests() {
		for _, x := range r.Texts() {
			if strings.Contains(x, substr) {
				return r, true
			}
		}
	}
	return Request{}, false
}

// SawText reports whether any main request showed the model substr.
func (m *FakeModel) SawText(substr string) bool {
	_, ok := m.FirstWithText(substr)
	return ok
}

// Summary lists the requests, one a line, for failure logs.
func (m *FakeModel) Summary() string {
	var b strings.Builder
	for _, r := range m.Requests() {
		fmt.Fprintf(&b, "%s #%d %s %s %s?%s", r.At.Format("15:04:05.000"), r.N, r.Kind, r.Method, r.Path, r.Query)
		if n := len(r.Body.Contents); n > 0 {
			last := r.Body.Contents[n-1]
			for _, p := range last.Parts {
				switch {
				case p.FunctionResponse != nil:
					out := p.FunctionResponse.Output()
					if len(out) > 200 {
						out = out[:200] + "..."
					}
					fmt.Fprintf(&b, " [result %s: %q]", p.FunctionResponse.ID, out)
				case p.FunctionCall != nil:
					fmt.Fprintf(&b, " [call %s]", p.FunctionCall.Name)
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
