// Package codextest drives the real Codex CLI (npm @openai/codex, pinned
// by .ci/install-codex) against a scripted fake of the OpenAI Responses
// API, so end-to-end tests can prove what the gyrum hook and heartbeat
// loop do under the real client.
//
// FakeModel is the fake: an HTTP server on 127.0.0.1:0 that answers
// POST /v1/responses with a streamed (SSE) response from a script of turns
// and records every request. Session runs `codex exec` as a real process
// in a hermetic environment (HOME and CODEX_HOME in a temporary
// directory) pointed at the fake through a custom model provider (Start),
// exposes its processes, and kills everything it spawned at the end of the
// test. TrustHooks trusts the hooks of a CODEX_HOME the way Codex's own
// review does.
//
// What was measured on 0.169.0 (see docs/agents/codex.md): offline, `codex
// exec` sends only POST /v1/responses, one per model turn, "stream": true,
// with the whole history in "input". A function_call item named
// exec_command with JSON arguments {"cmd": ...} runs a shell command; its
// result comes back in the next request as a function_call_output item
// with the same call_id. The model is named on the command line
// (gpt-5.1-codex): for it Codex offers exec_command as a top-level
// function (the default model of 0.169.0 nests it in a JavaScript "exec"
// tool instead).
//
//	bin := codextest.Require(t) // skips without a CLI (fails when CI is set)
//	call := codextest.Shell("go vet ./...")
//	model := codextest.NewFakeModel(t, codextest.Calls(call), codextest.Text("Done."))
//	s := codextest.Start(t, model, codextest.Options{Dir: project})
//	s.WaitOK(20 * time.Second)
//	out, _ := model.Output(call.ID) // what the model was shown
package codextest

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
	"sync/atomic"
	"testing"
	"time"
)

// Call is one function_call item the fake model emits.
type Call struct {
	// ID is the call_id, unique in the test process: Codex passes it to
	// hooks as tool_use_id and to the tool's shell as CODEX_TOOL_CALL_ID.
	ID string
	// Name is the function: "exec_command" runs a shell command.
	Name string
	// Args are the function's arguments, sent as a JSON string.
	Args map[string]any
}

// Turn is one answer of the model: function calls, or a final text.
type Turn struct {
	// Text, when not empty, is an assistant message sent before the calls.
	Text string
	// Calls are function_call items; several make parallel calls.
	Calls []Call
	// Stall makes the fake never answer this request (a wedged model or
	// network): the handler blocks until the client gives up or the server
	// closes. The turn is consumed.
	Stall bool
}

// Text returns a turn that answers text and ends the model's turn.
func Text(s string) Turn { return Turn{Text: s} }

// Calls returns a turn that makes the given function calls.
func Calls(calls ...Call) Turn { return Turn{Calls: calls} }

// Stall returns a turn the fake never answers.
func Stall() Turn { return Turn{Stall: true} }

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

// ShellOption adjusts the arguments of an exec_command call.
type ShellOption func(args map[string]any)

// Workdir sets the command's working directory (exec_command "workdir").
func Workdir(dir string) ShellOption { return func(a map[string]any) { a["workdir"] = dir } }

// YieldAfter sets how long Codex waits for the command before it answers
// the model with a session id and leaves the command running
// ("yield_time_ms"; Codex's default is 10 s and its ceiling 30 s).
func YieldAfter(d time.Duration) ShellOption {
	return func(a map[string]any) { a["yield_time_ms"] = d.Milliseconds() }
}

// Shell returns an exec_command call running command (bash, in the turn's
// cwd unless Workdir says otherwise), with a fresh call id.
func Shell(command string, opts ...ShellOption) Call {
	args := map[string]any{"cmd": command}
	for _, o := range opts {
		o(args)
	}
	return Call{ID: fmt.Sprintf("call_%s%06d", idPrefix, idSeq.Add(1)), Name: "exec_command", Args: args}
}

// Request is one request the fake received.
type Request struct {
	// N counts requests from 1, in arrival order.
	N      int
	At     time.Time
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	// Turn is the index of the script turn it was answered with (-1: none).
	Turn int
	// Model is the body's "model"; Input its "input" items.
	Model string
	Input []Item
}

// Item is one item of a request's "input".
type Item struct {
	Type    string `json:"type"`
	Role    string `json:"role,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	Name    string `json:"name,omitempty"`
	Output  any    `json:"output,omitempty"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content,omitempty"`
}

// Text returns the item's text: its content's texts, or a
// function_call_output's output.
func (it Item) Text() string {
	var parts []string
	for _, c := range it.Content {
		parts = append(parts, c.Text)
	}
	switch o := it.Output.(type) {
	case string:
		parts = append(parts, o)
	case nil:
	default:
		b, _ := json.Marshal(o)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// HasText reports whether any input item of the request shows substr.
func (r Request) HasText(substr string) bool {
	for _, it := range r.Input {
		if strings.Contains(it.Text(), substr) {
			return true
		}
	}
	return false
}

// Output is what the model was shown of one call.
type Output struct {
	CallID string
	// Text is the function_call_output's output: Codex's header ("Chunk
	// ID", "Wall time", "Process exited with code N", "Output:") and the
	// command's output.
	Text string
	// Request is N of the first request that carried it.
	Request int
	// After holds the texts of the items that follow the output in that
	// request: where Codex puts hook context.
	After []string
}

// FakeModel is a scripted fake of the OpenAI Responses API. Create it with
// NewFakeModel; it is closed at the end of the test.
type FakeModel struct {
	t    testing.TB
	srv  *http.Server
	url  string
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup

	mu      sync.Mutex
	script  []Turn
	next    int
	reqs    []Request
	changed chan struct{}
	// oneThread: the script serves the first thread (client_metadata
	// thread_id) only; see OneThread.
	oneThread bool
	thread    string
}

// OneThread makes the script serve only the first conversation thread
// that asks (its client_metadata.thread_id); requests of any other thread
// get "Done." and no turn. The interactive app on the app-server daemon
// runs a second thread beside the session's, which would otherwise take
// the script's turns out of order.
func (m *FakeModel) OneThread() *FakeModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oneThread = true
	return m
}

// NewFakeModel starts a fake on 127.0.0.1:0 answering POST /v1/responses
// with turns, in order; after the last one it answers Text("Done."). Any
// other request gets 404 and consumes nothing.
func NewFakeModel(t testing.TB, turns ...Turn) *FakeModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &FakeModel{t: t, url: "http://" + ln.Addr().String(), quit: make(chan struct{}),
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

// BaseURL is the provider base_url to give Codex (".../v1").
func (m *FakeModel) BaseURL() string { return m.url + "/v1" }

// Close stops the server; stalled requests are dropped. It is idempotent.
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

// Requests returns every request received so far.
func (m *FakeModel) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// Responses returns the POST /v1/responses requests.
func (m *FakeModel) Responses() []Request {
	var out []Request
	for _, r := range m.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/responses") {
			out = append(out, r)
		}
	}
	return out
}

// SawText reports whether any request showed the model substr.
func (m *FakeModel) SawText(substr string) bool {
	_, ok := m.FirstWithText(substr)
	return ok
}

// FirstWithText returns the first request showing substr.
func (m *FakeModel) FirstWithText(substr string) (Request, bool) {
	for _, r := range m.Responses() {
		if r.HasText(substr) {
			return r, true
		}
	}
	return Request{}, false
}

// Output returns what the model was shown of call id, from the first
// request that carried its function_call_output.
func (m *FakeModel) Output(id string) (Output, bool) {
	for _, r := range m.Responses() {
		for i, it := range r.Input {
			if it.Type != "function_call_output" || it.CallID != id {
				continue
			}
			o := Output{CallID: id, Text: it.Text(), Request: r.N}
			for _, next := range r.Input[i+1:] {
				if next.Type == "function_call" || (next.Type == "message" && next.Role == "assistant") {
					break
				}
				o.After = append(o.After, next.Text())
			}
			return o, true
		}
	}
	return Output{}, false
}

// WaitRequests waits until cond holds for the requests so far and returns
// them; it fails the test after timeout.
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

// Summary describes every request, one a line, for test logs.
func (m *FakeModel) Summary() string {
	var b strings.Builder
	var t0 time.Time
	for i, r := range m.Requests() {
		if i == 0 {
			t0 = r.At
		}
		fmt.Fprintf(&b, "#%d +%.3fs %s %s turn=%d model=%s input=%d\n", r.N, r.At.Sub(t0).Seconds(),
			r.Method, r.Path, r.Turn, r.Model, len(r.Input))
	}
	return b.String()
}

func (m *FakeModel) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var body struct {
		Model    string `json:"model"`
		Input    []Item `json:"input"`
		Metadata struct {
			ThreadID string `json:"thread_id"`
		} `json:"client_metadata"`
	}
	_ = json.Unmarshal(raw, &body)
	main := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses")
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw,
		Turn: -1, Model: body.Model, Input: body.Input}
	turn := Text("Done.")
	m.mu.Lock()
	req.N = len(m.reqs) + 1
	if main && m.oneThread && m.thread == "" {
		m.thread = body.Metadata.ThreadID
	}
	other := m.oneThread && body.Metadata.ThreadID != m.thread
	if main && !other && m.next < len(m.script) {
		turn = m.script[m.next]
		req.Turn = m.next
		m.next++
	}
	m.reqs = append(m.reqs, req)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	if !main {
		http.NotFound(w, r)
		return
	}
	if turn.Stall {
		select {
		case <-r.Context().Done():
			return
		case <-m.quit:
			panic(http.ErrAbortHandler)
		}
	}
	writeSSE(w, req.N, turn)
}

// writeSSE streams turn as the Responses API does: response.created, one
// response.output_item.done per item, response.completed.
func writeSSE(w http.ResponseWriter, n int, turn Turn) {
	id := fmt.Sprintf("resp_%s%04d", idPrefix, n)
	type event struct {
		name string
		data map[string]any
	}
	events := []event{{"response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}}}}
	var items []map[string]any
	if turn.Text != "" {
		items = append(items, map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%s%04d", idPrefix, n),
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text}}})
	}
	for i, c := range turn.Calls {
		args, _ := json.Marshal(c.Args)
		items = append(items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s%04d_%d", idPrefix, n, i),
			"call_id": c.ID, "name": c.Name, "arguments": string(args)})
	}
	for _, it := range items {
		events = append(events, event{"response.output_item.done", map[string]any{"type": "response.output_item.done", "item": it}})
	}
	events = append(events, event{"response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}})
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		data, _ := json.Marshal(e.data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, data)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
