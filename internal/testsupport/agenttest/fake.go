package agenttest

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
	"unicode/utf8"
)

// Call is one tool call the fake model makes.
type Call struct {
	// ID is the call's id, unique in the test process: the CLI sends it
	// back with the result (and passes it to hooks, where it does).
	ID string
	// Name is the tool as the agent names it: "Bash", "exec_command",
	// "run_shell_command", ...
	Name string
	// Args are the tool's arguments, sent as JSON.
	Args map[string]any
}

// Turn is one answer of the model in the main conversation: text, tool
// calls (the turn then ends asking for their results), or a stall.
type Turn struct {
	// Text, when not empty, is said before the calls.
	Text string
	// Calls are tool calls; several make parallel calls.
	Calls []Call
	// Stall makes the fake never answer this request (a wedged model or
	// network): the handler blocks until the client gives up on it or the
	// server closes. The turn is consumed.
	Stall bool
	// Hold, when not nil, delays the answer until it is closed (or the
	// request ends, or the server closes).
	Hold <-chan struct{}
}

// Text returns a turn that answers text and ends the model's turn.
func Text(s string) Turn { return Turn{Text: s} }

// Calls returns a turn that makes the given tool calls (in parallel when
// several).
func Calls(calls ...Call) Turn { return Turn{Calls: calls} }

// Stall returns a turn the fake never answers.
func Stall() Turn { return Turn{Stall: true} }

// idPrefix makes ids unique across test processes sharing a machine.
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

// CallID returns a fresh id: prefix ("toolu_01", "call_"), then a part
// unique to the test process and a sequence number.
func CallID(prefix string) string {
	return fmt.Sprintf("%s%s%06d", prefix, idPrefix, idSeq.Add(1))
}

// Tool returns a call of the tool name with args and a fresh id "call_..."
// (the form of the OpenAI APIs' ids).
func Tool(name string, args map[string]any) Call {
	if args == nil {
		args = map[string]any{}
	}
	return Call{ID: CallID("call_"), Name: name, Args: args}
}

// Kind classifies a request the fake received.
type Kind string

// Request kinds. Only KindMain requests consume the script.
const (
	// KindMain is a request of the main conversation.
	KindMain Kind = "main"
	// KindSubagent is the conversation of a subagent (Claude Code's Agent
	// tool).
	KindSubagent Kind = "subagent"
	// KindHelper is a model call outside the conversation: a title, a
	// summary, a router's classification (a request without tools, or
	// Gemini's generateContent).
	KindHelper Kind = "helper"
	// KindCount is a token count.
	KindCount Kind = "count-tokens"
	// KindOtherThread is a main request of another conversation thread
	// than the first (FakeModel.OneThread).
	KindOtherThread Kind = "other-thread"
	// KindOther is any other request (a connectivity probe, a model list).
	KindOther Kind = "other"
)

// Request is one request the fake received, decoded into one form whatever
// the API's shape.
type Request struct {
	// Seq is its arrival order among all requests, from 1; N numbers the
	// main requests from 1 (0 for the others).
	Seq, N int
	// At is when it arrived.
	At time.Time
	// Method, Path and Query are the request line's parts.
	Method, Path, Query string
	// Header holds the request headers.
	Header http.Header
	// Raw is the body as sent.
	Raw []byte
	// Kind classifies it.
	Kind Kind
	// Turn is the 0-based index of the script turn that answered it, -1
	// when it was not main or the script was exhausted.
	Turn int

	// Model is the model asked for; Stream whether the answer streams.
	Model  string
	Stream bool
	// System is the system prompt (instructions), apart from the
	// conversation.
	System string
	// Tools names the tools offered to the model.
	Tools []string
	// Thread is the conversation thread the client names (Codex's
	// client_metadata.thread_id), where it does.
	Thread string
	// Messages is the conversation shown to the model, in order.
	Messages []Message
}

// Message is one message (or item) of a request's conversation.
type Message struct {
	// Role is the API's role: "user", "assistant", "system", "tool",
	// "model", ... A message that carries a model's tool call has the
	// model's role ("assistant" in the OpenAI shapes); one that carries a
	// tool result, the role the API gives it ("tool", "user").
	Role  string
	Parts []Part
}

// Part is one part of a message: a text, a tool call of the model's, or a
// tool result.
type Part struct {
	// Text is a text, or a tool result's text.
	Text string
	// Call is a tool call the model made, as the client sends it back.
	Call *Call
	// ResultOf is the id of the call a tool result answers ("" for
	// anything else); IsError marks a result the client reports as an
	// error.
	ResultOf string
	IsError  bool
}

// Texts returns the message's texts, tool results included.
func (m Message) Texts() []string {
	var out []string
	for _, p := range m.Parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// Text returns the message's texts joined with newlines.
func (m Message) Text() string { return strings.Join(m.Texts(), "\n") }

// Texts returns every text of the request's messages (not the system
// prompt or the tool list): user text and reminders, tool results, hook
// context, the model's own earlier text.
func (r Request) Texts() []string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Texts()...)
	}
	return out
}

// HasText reports whether any text of the request's messages contains
// substr.
func (r Request) HasText(substr string) bool {
	for _, s := range r.Texts() {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// ToolResult is the result of one tool call as the model was shown it.
type ToolResult struct {
	CallID string
	// Content is the result's text.
	Content string
	IsError bool
	// Request is N of the first main request that carried it.
	Request int
	// After holds the texts that follow the result up to the model's next
	// message in that request, tool results left out: where agents put
	// hook context and other reminders.
	After []string
}

// shape is one API's wire format.
type shape interface {
	// parse sets req's Kind and what it decodes of req.Raw.
	parse(r *http.Request, req *Request)
	// write answers req. turn is the script's turn for a main request,
	// Text("Done.") when the script is exhausted (and for another
	// thread's), Text("OK.") for the other kinds.
	write(w http.ResponseWriter, req Request, turn Turn)
}

// FakeModel is a scripted fake of a model API: an HTTP server on
// 127.0.0.1:0 that answers the main conversation's requests with its
// script's turns, in order, then Text("Done.") to every further one, and
// records every request. Side requests never consume the script. Create
// it with the constructor of its API's shape (NewAnthropic, NewResponses,
// NewGemini, NewChat); it is closed at the end of the test.
type FakeModel struct {
	t     testing.TB
	shape shape
	srv   *http.Server
	url   string
	quit  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu     sync.Mutex
	script []Turn
	next   int
	reqs   []Request
	mains  int
	// changed is closed and replaced whenever a request is recorded.
	changed chan struct{}
	// oneThread: the script serves the first thread only (OneThread).
	oneThread bool
	thread    string
}

// NewAnthropic starts a fake of the Anthropic Messages API (Claude Code):
// see anthropic.go.
func NewAnthropic(t testing.TB, turns ...Turn) *FakeModel { return newFake(t, anthropic{}, turns) }

// NewResponses starts a fake of the OpenAI Responses API as Codex uses it:
// see responses.go.
func NewResponses(t testing.TB, turns ...Turn) *FakeModel { return newFake(t, responses{}, turns) }

// NewGemini starts a fake of the Gemini API (Gemini CLI): see gemini.go.
func NewGemini(t testing.TB, turns ...Turn) *FakeModel { return newFake(t, gemini{}, turns) }

// NewChat starts a fake of the OpenAI chat completions API: see chat.go.
func NewChat(t testing.TB, turns ...Turn) *FakeModel { return newFake(t, chat{}, turns) }

func newFake(t testing.TB, s shape, turns []Turn) *FakeModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &FakeModel{t: t, shape: s, url: "http://" + ln.Addr().String(), quit: make(chan struct{}),
		script: append([]Turn(nil), turns...), changed: make(chan struct{})}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.handle), ReadHeaderTimeout: 10 * time.Second}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = m.srv.Serve(ln)
	}()
	t.Cleanup(m.Close)
	return m
}

// URL is the fake's base address, http://127.0.0.1:PORT.
func (m *FakeModel) URL() string { return m.url }

// Add appends turns to the script.
func (m *FakeModel) Add(turns ...Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, turns...)
}

// OneThread makes the script serve only the first conversation thread that
// asks (Request.Thread); main requests of any other thread are
// KindOtherThread and get "Done.". Codex's interactive app on its
// app-server daemon runs a second thread beside the session's, which
// would otherwise take the script's turns out of order.
func (m *FakeModel) OneThread() *FakeModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oneThread = true
	return m
}

// Close stops the server: stalled and held requests are dropped (their
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
func (m *FakeModel) MainRequests() []Request { return mainOf(m.Requests()) }

func mainOf(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
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
	_, ok := m.FirstWithText(substr)
	return ok
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
		for i, msg := range r.Messages {
			for _, p := range msg.Parts {
				if p.ResultOf == "" || seen[p.ResultOf] {
					continue
				}
				seen[p.ResultOf] = true
				tr := ToolResult{CallID: p.ResultOf, Content: p.Text, IsError: p.IsError, Request: r.N}
				// What else the carrying message holds, then the messages
				// up to the model's next one.
				tr.After = append(tr.After, nonResultTexts(msg)...)
				for _, next := range r.Messages[i+1:] {
					if next.Role == "assistant" || next.Role == "model" {
						break
					}
					tr.After = append(tr.After, nonResultTexts(next)...)
				}
				out = append(out, tr)
			}
		}
	}
	return out
}

// nonResultTexts returns the texts of the parts of msg that are not tool
// results.
func nonResultTexts(msg Message) []string {
	var out []string
	for _, p := range msg.Parts {
		if p.ResultOf == "" && p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// ToolResult returns the result of call id, when the model was shown it.
func (m *FakeModel) ToolResult(id string) (ToolResult, bool) {
	for _, tr := range m.ToolResults() {
		if tr.CallID == id {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// WaitRequests waits until cond holds for the main requests received so
// far, re-checking on every new request, and returns them; it fails the
// test after timeout, saying what it waited for.
func (m *FakeModel) WaitRequests(timeout time.Duration, what string, cond func([]Request) bool) []Request {
	m.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		reqs := mainOf(m.reqs)
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

// Summary describes every request received, one a line, for test logs:
// what it was, and the calls and results of its last message.
func (m *FakeModel) Summary() string {
	var b strings.Builder
	var t0 time.Time
	for i, r := range m.Requests() {
		if i == 0 {
			t0 = r.At
		}
		line := fmt.Sprintf("#%d +%.3fs %s %s", r.Seq, r.At.Sub(t0).Seconds(), r.Method, r.Path)
		if r.Query != "" {
			line += "?" + r.Query
		}
		fmt.Fprintf(&b, "%s kind=%s", line, r.Kind)
		if r.Kind == KindMain {
			fmt.Fprintf(&b, " main=%d turn=%d", r.N, r.Turn)
		}
		fmt.Fprintf(&b, " model=%s messages=%d tools=%d", r.Model, len(r.Messages), len(r.Tools))
		if n := len(r.Messages); n > 0 {
			for _, p := range r.Messages[n-1].Parts {
				switch {
				case p.ResultOf != "":
					out := p.Text
					if len(out) > 200 {
						out = out[:200] + "..."
					}
					fmt.Fprintf(&b, " [result %s: %q]", p.ResultOf, out)
				case p.Call != nil:
					fmt.Fprintf(&b, " [call %s %s]", p.Call.Name, p.Call.ID)
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *FakeModel) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Raw: raw, Kind: KindOther, Turn: -1}
	m.shape.parse(r, &req)
	turn := Text("OK.")
	m.mu.Lock()
	req.Seq = len(m.reqs) + 1
	if req.Kind == KindMain && m.oneThread {
		if m.thread == "" {
			m.thread = req.Thread
		}
		if req.Thread != m.thread {
			req.Kind = KindOtherThread
		}
	}
	switch req.Kind {
	case KindMain:
		m.mains++
		req.N = m.mains
		turn = Text("Done.")
		if m.next < len(m.script) {
			turn = m.script[m.next]
			req.Turn = m.next
			m.next++
		}
	case KindOtherThread:
		turn = Text("Done.")
	}
	m.reqs = append(m.reqs, req)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()

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
	m.shape.write(w, req, turn)
}

// jsonString decodes data when it is a JSON string (a message content the
// APIs accept as a string or as a list of parts).
func jsonString(data []byte) (string, bool) {
	var s string
	data = bytes.TrimSpace(data)
	return s, len(data) > 0 && data[0] == '"' && json.Unmarshal(data, &s) == nil
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// eventStream writes server-sent events, each flushed as it is sent.
type eventStream struct {
	w   http.ResponseWriter
	eol string
}

// startEvents answers 200 with an event stream whose lines end in eol.
func startEvents(w http.ResponseWriter, eol string) *eventStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, eol: eol}
}

// send writes one event: its name line when event is not "", then data,
// as JSON unless it is a string.
func (s *eventStream) send(event string, data any) {
	if event != "" {
		fmt.Fprintf(s.w, "event: %s%s", event, s.eol)
	}
	payload, ok := data.(string)
	if !ok {
		b, _ := json.Marshal(data)
		payload = string(b)
	}
	fmt.Fprintf(s.w, "data: %s%s%s", payload, s.eol, s.eol)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// halves splits s in two at a character boundary, as a stream splits a
// text or a JSON document across deltas.
func halves(s string) [2]string {
	half := len(s) / 2
	for half > 0 && !utf8.RuneStart(s[half]) {
		half--
	}
	return [2]string{s[:half], s[half:]}
}
