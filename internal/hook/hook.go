// Package hook is `gyrum touch-activity`, the agent's tool-call hook. It
// reads the hook's JSON from stdin (Claude Code's PreToolUse, PostToolUse,
// PostToolUseFailure, or any other event), finds the worktree's .gyrum/ and
// updates the activity signals:
//
//   - PreToolUse: create the in-flight marker in-flight/<tool_use_id>;
//   - PostToolUse, PostToolUseFailure: remove that marker and touch
//     last-activity;
//   - any other event, no payload, or a payload that is not a JSON object:
//     touch last-activity (the hook ran, so the agent did something).
//
// "Touch" writes the activity record (source hook, event, tool, time) into
// last-activity in place and sets its mtime, and every run appends one byte
// to hook-events, so the loop can report that the hook fires and how often
// (gyrumdir.ActivityRecord, gyrumdir.HookCounter).
//
// It never fails its caller: the command prints nothing and exits 0 on
// every path; Run's error exists for tests. The payload is scanned, not
// decoded: only four top-level string fields are kept, so a large
// tool_response costs a read, not an allocation.
package hook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

// Claude Code hook event names that change the in-flight markers.
const (
	EventPreToolUse         = "PreToolUse"
	EventPostToolUse        = "PostToolUse"
	EventPostToolUseFailure = "PostToolUseFailure"
)

// MaxInput is how much of stdin the hook reads at most. Fields after it are
// not seen; the ones Claude Code sends first (cwd, hook_event_name,
// tool_name) always are.
const MaxInput = 16 << 20

// maxField bounds a kept string value (raw, before unescaping).
const maxField = 4096

// Payload holds the fields of the hook input the hook uses.
type Payload struct {
	Event     string // hook_event_name
	CWD       string // cwd
	ToolName  string // tool_name
	ToolUseID string // tool_use_id
	// Object reports that the input started as a JSON object; false for
	// empty input and garbage.
	Object bool
}

// Parse scans at most limit bytes of r for the top-level string fields
// hook_event_name, cwd, tool_name and tool_use_id, skipping every other
// value without keeping it. A syntax error or a cut-off input ends the
// scan: the fields seen before it are returned.
func Parse(r io.Reader, limit int64) Payload {
	s := &scanner{r: bufio.NewReaderSize(io.LimitReader(r, limit), 32<<10)}
	var p Payload
	s.ws()
	if c, ok := s.next(); !ok || c != '{' {
		return p
	}
	p.Object = true
	for {
		s.ws()
		c, ok := s.next()
		if !ok || c == '}' {
			return p
		}
		if c == ',' {
			continue
		}
		if c != '"' {
			return p
		}
		key, ok := s.str(64)
		if !ok {
			return p
		}
		s.ws()
		if c, ok := s.next(); !ok || c != ':' {
			return p
		}
		s.ws()
		var dst *string
		switch key {
		case "hook_event_name":
			dst = &p.Event
		case "cwd":
			dst = &p.CWD
		case "tool_name":
			dst = &p.ToolName
		case "tool_use_id":
			dst = &p.ToolUseID
		}
		c, ok = s.peek()
		if !ok {
			return p
		}
		if dst != nil && c == '"' {
			s.next()
			v, ok := s.str(maxField)
			if !ok {
				return p
			}
			*dst = v
			continue
		}
		if !s.skip() {
			return p
		}
	}
}

type scanner struct {
	r *bufio.Reader
}

func (s *scanner) next() (byte, bool) {
	c, err := s.r.ReadByte()
	return c, err == nil
}

func (s *scanner) peek() (byte, bool) {
	b, err := s.r.Peek(1)
	if err != nil {
		return 0, false
	}
	return b[0], true
}

func (s *scanner) ws() {
	for {
		c, ok := s.peek()
		if !ok || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return
		}
		s.next()
	}
}

// str reads the rest of a string whose opening quote was consumed, keeping
// at most keep raw bytes, and returns it unescaped. ok is false when the
// input ends first. It moves a buffer at a time (ReadSlice up to the next
// quote), so skipping a megabyte of tool output is a few memchr calls.
func (s *scanner) str(keep int) (string, bool) {
	var raw []byte
	escaped := false
	run := 0 // backslashes right before the current position
	for {
		chunk, err := s.r.ReadSlice('"')
		if err != nil && err != bufio.ErrBufferFull {
			return "", false
		}
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1] // without the quote
		}
		if bytes.IndexByte(body, '\\') >= 0 {
			escaped = true
		}
		n := 0
		for n < len(body) && body[len(body)-1-n] == '\\' {
			n++
		}
		if n == len(body) {
			run += n
		} else {
			run = n
		}
		closed := err == nil && run%2 == 0
		if err == nil && !closed {
			body, run = chunk, 0 // an escaped quote belongs to the string
		}
		if room := keep - len(raw); room > 0 {
			raw = append(raw, body[:min(len(body), room)]...)
		}
		if closed {
			break
		}
	}
	if !escaped {
		return string(raw), true
	}
	var out string
	quoted := append(append([]byte{'"'}, raw...), '"')
	if json.Unmarshal(quoted, &out) != nil {
		return string(raw), true // cut in the middle of an escape: keep it raw
	}
	return out, true
}

// skip consumes one JSON value of any kind without keeping it.
func (s *scanner) skip() bool {
	c, ok := s.next()
	if !ok {
		return false
	}
	switch c {
	case '"':
		_, ok := s.str(0)
		return ok
	case '{', '[':
		depth := 1
		for depth > 0 {
			c, ok := s.next()
			if !ok {
				return false
			}
			switch c {
			case '"':
				if _, ok := s.str(0); !ok {
					return false
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return true
	default: // number, true, false, null
		for {
			c, ok := s.peek()
			if !ok {
				return true
			}
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				return true
			}
			s.next()
		}
	}
}

// Options says where the hook looks for .gyrum/ and what time it is.
type Options struct {
	// Dir, when set (--dir), is where the walk up starts, before the
	// payload's cwd.
	Dir string
	// Cwd is the process's working directory, the last place tried.
	Cwd string
	// Now is the time written to the signals.
	Now time.Time
}

// ErrNoWorktree reports that no .gyrum/ was found from any start point.
var ErrNoWorktree = errors.New("no .gyrum directory found")

// Apply applies payload p: it finds .gyrum/ walking up from o.Dir, then
// p.CWD, then o.Cwd (the first start point that leads to one wins) and
// updates the markers and last-activity.
func Apply(p Payload, o Options) error {
	d, err := find(o.Dir, p.CWD, o.Cwd)
	if err != nil {
		return err
	}
	rec := gyrumdir.ActivityRecord{Source: gyrumdir.SourceHook, Event: p.Event, Tool: p.ToolName, At: o.Now}
	switch p.Event {
	case EventPreToolUse:
		err = d.StartInFlight(p.ToolUseID, p.ToolName, o.Now)
	case EventPostToolUse, EventPostToolUseFailure:
		err = errors.Join(endMarker(d, p), d.WriteActivity(rec))
	default:
		err = d.WriteActivity(rec)
	}
	// Every run counts, PreToolUse too: the loop's hook_seen and
	// hook_events report that the hook is wired, whatever the event.
	return errors.Join(err, d.CountHookEvent())
}

// endMarker removes the marker of p's tool call. Without a tool_use_id
// (cut off by MaxInput, or an agent that sends none) it removes the oldest
// marker of the same tool, so a marker never outlives its call by much.
func endMarker(d gyrumdir.Dir, p Payload) error {
	if p.ToolUseID != "" {
		return d.EndInFlight(p.ToolUseID)
	}
	ms, err := d.InFlight()
	if err != nil {
		return err
	}
	var oldest *gyrumdir.Marker
	for i := range ms {
		if ms[i].Tool == p.ToolName && (oldest == nil || ms[i].Since.Before(oldest.Since)) {
			oldest = &ms[i]
		}
	}
	if oldest == nil {
		return nil
	}
	if err := os.Remove(filepath.Join(d.File(gyrumdir.InFlightDir), oldest.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func find(starts ...string) (gyrumdir.Dir, error) {
	for _, s := range starts {
		if s == "" {
			continue
		}
		if d, err := gyrumdir.Find(s); err == nil {
			return d, nil
		}
	}
	return gyrumdir.Dir{}, ErrNoWorktree
}

// Run is the whole hook: read the payload from stdin (not at all when stdin
// is a terminal; at most 2 s and MaxInput bytes otherwise) and apply it.
// Callers ignore the error; tests read it.
func Run(stdin io.Reader, o Options) error {
	p := Payload{}
	if stdin != nil && readable(stdin) {
		if f, ok := stdin.(*os.File); ok {
			// A writer that never closes the pipe must not hang the agent.
			_ = f.SetReadDeadline(time.Now().Add(2 * time.Second))
		}
		p = Parse(stdin, MaxInput)
	}
	if !p.Object {
		p = Payload{} // garbage or nothing: a plain touch
	}
	return Apply(p, o)
}

// readable reports whether r is worth reading: not a terminal (a person
// typing; /dev/null too), not a closed descriptor.
func readable(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return true
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice == 0
}
