// Package claudetest drives the real Claude Code CLI (npm
// @anthropic-ai/claude-code, pinned by .ci/install-claude) against a
// scripted fake of the Anthropic Messages API, so end-to-end tests can
// prove what the gyrum hook and heartbeat loop do under the real client.
//
// FakeModel is the fake: an HTTP server on 127.0.0.1:0 that answers
// POST /v1/messages (streaming SSE or plain JSON) from a script of turns
// and records every request. Session runs `claude -p` as a real process in
// a hermetic environment pointed at the fake (Start), exposes its pid and
// process tree, and kills everything it spawned at the end of the test.
//
// What the fake takes as the main conversation, measured on 2.1.328 (see
// docs/agents/claude-code.md): a POST /v1/messages whose body has
// a non-empty "tools" list and whose system prompt does not carry the
// subagent billing marker "cc_is_subagent=true". Everything else —
// subagent conversations, tool-less small-model calls, token counting,
// the connectivity probe HEAD /api/hello — is auxiliary: it gets a short
// harmless answer and never consumes the script. In `-p` mode offline
// with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 the CLI sends only main
// requests.
//
// A test scripts one model turn per main request:
//
//	bin := claudetest.Require(t) // skips without a CLI (fails when CI is set)
//	call := claudetest.Bash("go vet ./...")
//	model := claudetest.NewFakeModel(t, claudetest.Tools(call), claudetest.Text("Done."))
//	s := claudetest.Start(t, model, claudetest.Options{Binary: bin, Dir: project,
//		Env: map[string]string{"WARP_URL": warpURL}})
//	s.WaitOK(20 * time.Second)
//	res, _ := model.ToolResult(call.ID) // what the model was shown
//
// A background Bash call takes three turns: the call, the turn that ends
// while it runs, and the answer to the wake-up request the CLI sends when
// it ends.
package claudetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ToolUse is one tool_use block the fake model emits.
type ToolUse struct {
	// ID is the tool_use id ("toolu_..."), unique in the test process.
	ID string
	// Name is the tool name: "Bash", "Read", "Write", ...
	Name string
	// Input is the tool input, sent as JSON.
	Input map[string]any
}

// Turn is one answer of the model in the main conversation. A turn with
// tool calls ends with stop_reason "tool_use", any other with "end_turn".
type Turn struct {
	// Text, when not empty, is a text block sent before the tool calls.
	Text string
	// Tools are tool_use blocks; several make parallel calls.
	Tools []ToolUse
	// Stall makes the fake never answer this request: the handler blocks
	// until the client gives up on it or the server closes. The turn is
	// consumed.
	Stall bool
	// Hold, when not nil, delays the answer until it is closed (or the
	// request ends, or the server closes).
	Hold <-chan struct{}
}

// Text returns a turn that answers text and ends the model's turn.
func Text(s string) Turn { return Turn{Text: s} }

// Tools returns a turn that calls the given tools (in parallel when
// several) and stops with stop_reason tool_use.
func Tools(calls ...ToolUse) Turn { return Turn{Tools: calls} }

// Stall returns a turn the fake never answers (a wedged model or network).
func Stall() Turn { return Turn{Stall: true} }

// idPrefix makes tool ids unique across test processes sharing a machine.
var (
	idPrefix = randomAlnum(8)
	idSeq    atomic.Int64
)

func randomAlnum(n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// NewToolID returns a fresh unique tool_use id ("toolu_...").
func NewToolID() string {
	return fmt.Sprintf("toolu_01%s%06d", idPrefix, idSeq.Add(1))
}

// Tool returns a tool_use block calling name with input, with a fresh id.
func Tool(name string, input map[string]any) ToolUse {
	if input == nil {
		input = map[string]any{}
	}
	return ToolUse{ID: NewToolID(), Name: name, Input: input}
}

// BashOption adjusts the input of a Bash tool call.
type BashOption func(input map[string]any)

// Background sets run_in_background: the CLI starts the command, answers
// the call at once and wakes the conversation when the command ends.
func Background() BashOption {
	return func(in map[string]any) { in["run_in_background"] = true }
}

// Timeout sets the call's timeout (the CLI takes milliseconds; default
// 2 min, at most 10 min).
func Timeout(d time.Duration) BashOption {
	return func(in map[string]any) { in["timeout"] = d.Milliseconds() }
}

// Description sets the call's description (shown to the user, and named
// in the notification of a background command).
func Description(s string) BashOption {
	return func(in map[string]any) { in["description"] = s }
}

// Bash returns a Bash tool call running command.
func Bash(command string, opts ...BashOption) ToolUse {
	in := map[string]any{"command": command}
	for _, o := range opts {
		o(in)
	}
	return Tool("Bash", in)
}

// Read returns a Read tool call of the absolute path.
func Read(path string) ToolUse { return Tool("Read", map[string]any{"file_path": path}) }

// Write returns a Write tool call creating or replacing the absolute path.
func Write(path, content string) ToolUse {
	return Tool("Write", map[string]any{"file_path": path, "content": content})
}

// Kind classifies a request the fake received.
type Kind string

// Request kinds.
const (
	// KindMain is a request of the main conversation: it consumes the script.
	KindMain Kind = "main"
	// KindSubagent is a conversation of a subagent (Agent tool).
	KindSubagent Kind = "subagent"
	// KindNoTools is a messages request without tools (a small-model call:
	// titles, summaries, ...).
	KindNoTools Kind = "no-tools"
	// KindCountTokens is POST /v1/messages/count_tokens.
	KindCountTokens Kind = "count-tokens"
	// KindOther is any other request (HEAD /api/hello, ...).
	KindOther Kind = "other"
)

// Request is one request the fake received.
type Request struct {
	// N is its 1-based arrival order among all requests.
	N int
	// At is when it arrived.
	At time.Time
	// Method, Path and Query are the request line's parts.
	Method, Path, Query string
	// Header holds the request headers.
	Header http.Header
	// Raw is the body as sent.
	Raw []byte
	// Body is the parsed body of a messages request (zero otherwise).
	Body MessagesRequest
	// Kind classifies it; only KindMain requests consume the script.
	Kind Kind
	// Turn is the 0-based index of the script turn that answered a main
	// request, -1 when the script was exhausted or the request was not main.
	Turn int
}

// MessagesRequest is the part of a /v1/messages body the tests look at.
type MessagesRequest struct {
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	System    Content         `json:"system"`
	Messages  []Message       `json:"messages"`
	Tools     []ToolSpec      `json:"tools"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// ToolSpec is one tool offered to the model.
type ToolSpec struct {
	Name string `json:"name"`
}

// Message is one message of the conversation. Claude Code 2.1.328 also
// sends role "system" messages mid-conversation (environment, hook
// additional context).
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a message's content: the API accepts a string or a list of
// blocks; a string is decoded as one text block.
type Content []Block

// UnmarshalJSON accepts a string or a list of blocks.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	if string(data) == "null" {
		*c = nil
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(data, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// Block is one content block: text, tool_use, tool_result, ...
type Block struct {
	Type string `json:"type"`
	// Text of a text block.
	Text string `json:"text,omitempty"`
	// ID, Name and Input of a tool_use block.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError of a tool_result block.
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   Content `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
}

// Texts returns every text of the content: text blocks and, recursively,
// tool_result contents.
func (c Content) Texts() []string {
	var out []string
	for _, b := range c {
		if b.Text != "" {
			out = append(out, b.Text)
		}
		out = append(out, b.Content.Texts()...)
	}
	return out
}

// Texts returns every text in the request's messages (not the system
// prompt or the tool list): user text and system-reminder blocks, tool
// results, the role "system" messages carrying hook context, and the
// model's own earlier text.
func (r Request) Texts() []string {
	var out []string
	for _, m := range r.Body.Messages {
		out = append(out, m.Content.Texts()...)
	}
	return out
}

// HasText reports whether any text of the request's messages contains substr.
func (r Request) HasText(substr string) bool {
	for _, s := range r.Texts() {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// SystemText returns the system prompt's text.
func (r Request) SystemText() string { return r.Body.SystemText() }

// ToolResult is the answer of one tool call as the model was shown it.
type ToolResult struct {
	ToolUseID string
	// Content is the result's text (blocks joined with newlines).
	Content string
	IsError bool
	// Request is N of the first request that carried it.
	Request int
	// After holds the texts of the messages that follow the result up to
	// the next assistant message in that request: where Claude Code puts
	// hook context ("PostToolUse:Bash hook additional context: ...") and
	// other reminders.
	After []string
}

// FakeModel is a scripted fake of the Anthropic Messages API. Create it
// with NewFakeModel; it is closed at the end of the test.
type FakeModel struct {
	t    testing.TB
	srv  *http.Server
	ln   net.Listener
	url  string
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup

	mu     sync.Mutex
	script []Turn
	next   int
	reqs   []Request
	// changed is closed and replaced whenever a request is recorded.
	changed chan struct{}
}

// NewFakeModel starts a fake on 127.0.0.1:0 answering the main
// conversation with turns, in order; after the last one it answers
// Text("Done.") to every main request. It is closed at the end of the
// test.
func NewFakeModel(t testing.TB, turns ...Turn) *FakeModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &FakeModel{t: t, ln: ln, url: "http://" + ln.Addr().String(), quit: make(chan struct{}),
		script: append([]Turn(nil), turns...), changed: make(chan struct{})}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.handle)}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = m.srv.Serve(ln)
	}()
	t.Cleanup(m.Close)
	return m
}

// URL is the base address to give the CLI as ANTHROPIC_BASE_URL.
func (m *FakeModel) URL() string { return m.url }

// Add appends turns to the script.
func (m *FakeModel) Add(turns ...Turn) {
	m.mu.Lock()
	m.script = append(m.script, turns...)
	m.mu.Unlock()
}

// Close stops the server: stalled and held requests are released (their
// connections closed), new connections are refused. It is idempotent.
func (m *FakeModel) Close() {
	m.once.Do(func() {
		close(m.quit)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := m.srv.Shutdown(ctx); err != nil {
			_ = m.srv.Close()
		}
		m.wg.Wait()
	})
}

// Requests returns every request received so far, in arrival order.
func (m *FakeModel) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
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

// Served returns how many script turns have been consumed.
func (m *FakeModel) Served() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// SawText reports whether any main request showed the model a text
// containing substr (see Request.Texts).
func (m *FakeModel) SawText(substr string) bool {
	for _, r := range m.MainRequests() {
		if r.HasText(substr) {
			return true
		}
	}
	return false
}

// FirstWithText returns the first main request showing substr.
func (m *FakeModel) FirstWithText(substr string) (Request, bool) {
	for _, r := range m.MainRequests() {
		if r.HasText(substr) {
			return r, true
		}
	}
	return Request{}, false
}

// ToolResults returns every tool result the main conversation carried, in
// the order they first appeared, each as shown in the first request that
// carried it.
func (m *FakeModel) ToolResults() []ToolResult {
	var out []ToolResult
	seen := map[string]bool{}
	for _, r := range m.MainRequests() {
		msgs := r.Body.Messages
		for i, msg := range msgs {
			for _, b := range msg.Content {
				if b.Type != "tool_result" || seen[b.ToolUseID] {
					continue
				}
				seen[b.ToolUseID] = true
				tr := ToolResult{ToolUseID: b.ToolUseID, Content: strings.Join(b.Content.Texts(), "\n"),
					IsError: b.IsError, Request: r.N}
				// What else the carrying message holds, then the messages up
				// to the model's next turn.
				tr.After = append(tr.After, nonResultTexts(msg.Content)...)
				for _, next := range msgs[i+1:] {
					if next.Role == "assistant" {
						break
					}
					tr.After = append(tr.After, nonResultTexts(next.Content)...)
				}
				out = append(out, tr)
			}
		}
	}
	return out
}

// nonResultTexts returns the texts of the blocks of c that are not tool results.
func nonResultTexts(c Content) []string {
	var out []string
	for _, b := range c {
		if b.Type != "tool_result" {
			out = append(out, Content{b}.Texts()...)
		}
	}
	return out
}

// ToolResult returns the result of tool call id, when the model was shown it.
func (m *FakeModel) ToolResult(id string) (ToolResult, bool) {
	for _, tr := range m.ToolResults() {
		if tr.ToolUseID == id {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// WaitRequests waits until cond holds for the requests received so far,
// re-checking on every new request, and returns them; it fails the test
// after timeout.
func (m *FakeModel) WaitRequests(timeout time.Duration, what string, cond func([]Request) bool) []Request {
	m.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		reqs := append([]Request(nil), m.reqs...)
		ch := m.changed
		m.mu.Unlock()
		if cond(reqs) {
			return reqs
		}
		select {
		case <-ch:
		case <-deadline.C:
			m.t.Fatalf("timed out after %v waiting for %s; requests:\n%s", timeout, what, m.Summary())
			return nil
		}
	}
}

// Summary describes every request received, one a line, for test logs.
func (m *FakeModel) Summary() string {
	var b strings.Builder
	var t0 time.Time
	for i, r := range m.Requests() {
		if i == 0 {
			t0 = r.At
		}
		fmt.Fprintf(&b, "#%d +%.3fs %s %s kind=%s turn=%d model=%s messages=%d tools=%d\n",
			r.N, r.At.Sub(t0).Seconds(), r.Method, r.Path, r.Kind, r.Turn, r.Body.Model,
			len(r.Body.Messages), len(r.Body.Tools))
	}
	return b.String()
}

// classify tells main conversation requests from auxiliary ones.
func classify(method, path string, body MessagesRequest) Kind {
	switch {
	case method == http.MethodPost && path == "/v1/messages/count_tokens":
		return KindCountTokens
	case method != http.MethodPost || path != "/v1/messages":
		return KindOther
	case len(body.Tools) == 0:
		return KindNoTools
	case strings.Contains(body.SystemText(), "cc_is_subagent=true"):
		return KindSubagent
	}
	return KindMain
}

// SystemText returns the system prompt's text blocks joined with newlines.
func (b MessagesRequest) SystemText() string { return strings.Join(b.System.Texts(), "\n") }

func (m *FakeModel) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var body MessagesRequest
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &body)
	}
	kind := classify(r.Method, r.URL.Path, body)
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Raw: raw, Body: body, Kind: kind, Turn: -1}
	turn := Text("Done.")
	m.mu.Lock()
	req.N = len(m.reqs) + 1
	if kind == KindMain && m.next < len(m.script) {
		turn = m.script[m.next]
		req.Turn = m.next
		m.next++
	}
	m.reqs = append(m.reqs, req)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()

	switch kind {
	case KindOther:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
		return
	case KindCountTokens:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":1}`)
		return
	case KindSubagent, KindNoTools:
		turn = Text("OK.")
	}
	if turn.Stall {
		select {
		case <-r.Context().Done():
			return
		case <-m.quit:
			// Drop the connection without an answer, like a dead peer.
			panic(http.ErrAbortHandler)
		}
	}
	if turn.Hold != nil {
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return
		case <-m.quit:
			panic(http.ErrAbortHandler)
		}
	}
	model := body.Model
	if model == "" {
		model = "claude-fake"
	}
	msgID := fmt.Sprintf("msg_01fake%s%04d", idPrefix, req.N)
	if body.Stream {
		writeSSE(w, msgID, model, turn)
		return
	}
	writeJSON(w, msgID, model, turn)
}
