// Package transcript tells from an agent's session transcript whether a
// tool call is still unfinished: the agent has recorded the call
// (tool_use) and no result for it (tool_result).
//
// Claude Code appends one JSON object per line to the transcript named by
// its hooks' transcript_path: an assistant line whose message.content
// holds {"type":"tool_use","id":ID}, and, when the call ends — returned,
// failed, denied or blocked by a hook — a user line whose message.content
// holds {"type":"tool_result","tool_use_id":ID}. A call that fires no Post
// event (denied, blocked) has its result recorded at once; an MCP call or
// a subagent has none until it returns (docs/agents/claude-code.md).
//
// A Tracker reads as little as a decision needs: the first look at a call
// reads backwards from the end of the file to the call's tool_use line
// (at most MaxBack bytes); later looks read only what was appended since.
// Anything it cannot read or find is Unknown, never Open.
package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
)

// Status is what a transcript says of one call.
type Status int

// The statuses of a call.
const (
	// Unknown: the transcript is unreadable, is not a Claude Code
	// transcript, or does not (yet) hold the call within MaxBack bytes of
	// its end. The caller applies its rule for calls it knows nothing of.
	Unknown Status = iota
	// Open: the call's tool_use is recorded and no tool_result after it.
	Open
	// Finished: a tool_result for the call is recorded.
	Finished
)

func (s Status) String() string {
	switch s {
	case Open:
		return "open"
	case Finished:
		return "finished"
	}
	return "unknown"
}

// MaxBack bounds how far back from the end a first look searches for a
// call's tool_use line. A call recorded earlier than that is Unknown.
const MaxBack = 8 << 20

// maxLine bounds one line the tracker parses; a longer line holding the
// id is skipped (a tool_use or tool_result line is far smaller).
const maxLine = 4 << 20

// chunk is the unit of the backward read.
const chunk = 64 << 10

// call is what the tracker knows of one call in one file.
type call struct {
	// searched: the first look went back from the end; checked is the
	// offset up to which the file was read. use: the call's tool_use line
	// was found; done: its tool_result was.
	searched bool
	use      bool
	checked  int64
	done     bool
}

// file identifies a transcript's content: a file replaced or cut short
// loses what was known of it.
type file struct {
	dev, ino uint64
	size     int64
}

// Tracker remembers, across looks, how far each call's transcript has
// been read. It is not safe for concurrent use.
type Tracker struct {
	files map[string]file
	calls map[string]map[string]*call // path → id → call
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{files: map[string]file{}, calls: map[string]map[string]*call{}}
}

// Status reports the status of each call in ids recorded in the
// transcript at path. Calls of path not in ids are forgotten.
func (t *Tracker) Status(path string, ids []string) map[string]Status {
	out := make(map[string]Status, len(ids))
	f, id, err := open(path)
	if err != nil {
		t.forget(path)
		return out // all Unknown
	}
	defer f.Close()
	if old, ok := t.files[path]; !ok || old.dev != id.dev || old.ino != id.ino || id.size < old.size {
		delete(t.calls, path)
	}
	t.files[path] = id
	known := t.calls[path]
	next := make(map[string]*call, len(ids))
	for _, cid := range ids {
		c := known[cid]
		if c == nil {
			c = &call{}
		}
		next[cid] = c
	}
	t.calls[path] = next
	for cid, c := range next {
		if !c.done {
			if err := c.look(f, id.size, cid); err != nil {
				*c = call{}
			}
		}
		switch {
		case c.done:
			out[cid] = Finished
		case c.use:
			out[cid] = Open
		default:
			out[cid] = Unknown
		}
	}
	return out
}

// Forget drops what the tracker knows of every transcript not in keep.
func (t *Tracker) Forget(keep map[string]bool) {
	for p := range t.files {
		if !keep[p] {
			t.forget(p)
		}
	}
}

func (t *Tracker) forget(path string) {
	delete(t.files, path)
	delete(t.calls, path)
}

// look advances c over the file of size bytes.
func (c *call) look(f *os.File, size int64, id string) error {
	useKey := []byte(`"id":"` + id + `"`)
	resultKey := []byte(`"tool_use_id":"` + id + `"`)
	end, err := completeEnd(f, size)
	if err != nil {
		return err
	}
	if c.searched && end-c.checked > MaxBack {
		// Too much appended since the last look: search afresh.
		*c = call{}
	}
	if !c.searched {
		// Newest line first, back to the call's tool_use: a result met on
		// the way ends the call.
		found, done, err := backward(f, end, func(line []byte) (stop bool, result bool) {
			if bytes.Contains(line, resultKey) && holds(line, "tool_result", id) {
				return true, true
			}
			if bytes.Contains(line, useKey) && holds(line, "tool_use", id) {
				return true, false
			}
			return false, false
		})
		if err != nil {
			return err
		}
		c.searched, c.use, c.done, c.checked = true, found && !done, done, end
		return nil
	}
	if end <= c.checked {
		return nil
	}
	// Only what was appended since the last look: the call's tool_use
	// (the agent writes its transcript a little after the hook runs) and
	// its result come after what was read.
	data := make([]byte, end-c.checked)
	if _, err := f.ReadAt(data, c.checked); err != nil {
		return err
	}
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(line) > maxLine {
			continue
		}
		if !c.use && bytes.Contains(line, useKey) && holds(line, "tool_use", id) {
			c.use = true
		}
		if bytes.Contains(line, resultKey) && holds(line, "tool_result", id) {
			c.done = true
			break
		}
	}
	c.checked = end
	return nil
}

// completeEnd is the end of the last complete line of the first size
// bytes: a line still being written is read at the next look.
func completeEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 4096)
	for end := size; end > 0 && size-end < maxLine; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// backward calls visit on each complete line of the file before end (end
// is a line's end), newest first, reading at most MaxBack bytes, until
// visit stops it.
func backward(f *os.File, end int64, visit func(line []byte) (stop, result bool)) (found, result bool, err error) {
	var buf []byte // ends with a line's '\n', or is empty
	skip := false  // the newest line in the next chunk is too long: drop it
	pos := end
	for {
		for len(buf) > 0 {
			s := buf[:len(buf)-1]
			i := bytes.LastIndexByte(s, '\n')
			if i < 0 && pos > 0 {
				break // the line starts in an earlier chunk
			}
			if stop, res := visit(s[i+1:]); stop {
				return true, res, nil
			}
			buf = buf[:i+1]
		}
		if pos == 0 || end-pos >= MaxBack {
			return false, false, nil
		}
		if len(buf) > maxLine {
			buf, skip = nil, true
		}
		n := min(int64(chunk), pos)
		next := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(next, pos-n); err != nil {
			return false, false, err
		}
		pos -= n
		if skip {
			i := bytes.LastIndexByte(next, '\n')
			if i < 0 {
				continue // still inside the long line
			}
			next, skip = next[:i+1], false
		}
		buf = append(next, buf...)
	}
}

// holds reports whether line is a JSON object whose message.content holds
// a block of kind ("tool_use" with id, or "tool_result" with tool_use_id)
// for id.
func holds(line []byte, kind, id string) bool {
	var v struct {
		Message struct {
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &v) != nil {
		return false
	}
	for _, b := range v.Message.Content {
		if b.Type != kind {
			continue
		}
		if kind == "tool_use" && b.ID == id || kind == "tool_result" && b.ToolUseID == id {
			return true
		}
	}
	return false
}

// open opens path for reading if it is a regular file, without waiting on
// a FIFO or acting on a device: the path comes from a marker file, which a
// repository could plant.
func open(path string) (*os.File, file, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, file{}, err
	}
	if !st.Mode().IsRegular() {
		return nil, file{}, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, file{}, err
	}
	fst, err := f.Stat()
	if err != nil || !fst.Mode().IsRegular() {
		f.Close()
		return nil, file{}, fmt.Errorf("%s: not a regular file", path)
	}
	sys, ok := fst.Sys().(*syscall.Stat_t)
	if !ok {
		f.Close()
		return nil, file{}, fmt.Errorf("%s: no file identity", path)
	}
	return f, file{dev: uint64(sys.Dev), ino: uint64(sys.Ino), size: fst.Size()}, nil
}
