package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ParseError reports a settings file that is not JSON the installer can
// merge into: a syntax error (comments, a trailing comma, a truncated file)
// or an unexpected shape ("hooks" that is not an object). The file is left
// as it was.
type ParseError struct {
	Path   string // the file
	Line   int    // 1-based line of the offending byte
	Column int    // 1-based column (in bytes) of the offending byte
	Msg    string // what is wrong there
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s (file left unchanged; fix it by hand and run again)", e.Path, e.Line, e.Column, e.Msg)
}

// position turns a byte offset of data into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, off - start + 1
}

// node is one JSON value that remembers the order of an object's members,
// so a user's file is rewritten in the order it was written. A node read
// from a file also remembers where it was and what it held (orig), so an
// edit can be written back by splicing: spliceDocument copies every value
// the edit left as it was byte for byte, and writes only what changed.
type node struct {
	obj    []member        // when isObj
	arr    []*node         // when isArr
	scalar json.RawMessage // string, number, bool, null, re-encoded
	isObj  bool
	isArr  bool
	offset int     // byte offset of the value in the source, for errors and splicing
	end    int     // byte offset just past the value in the source; 0: not read from a source
	orig   []child // the members (or elements) as read from the source
}

type member struct {
	key string
	val *node
}

// child is a member or element of a container as it was read from the
// source: where its key starts and ends (members only) and its value.
// Edits never change it; they change node.obj and node.arr.
type child struct {
	key            string
	keyOff, keyEnd int // the member's key in the source; -1 for elements
	val            *node
}

// start returns where c begins in the source: at its key for a member.
func (c child) start() int {
	if c.keyOff >= 0 {
		return c.keyOff
	}
	return c.val.offset
}

// fromSource reports whether n was read from a source (and has offsets).
func (n *node) fromSource() bool { return n.end > 0 }

// pristine reports whether n is as it was read from its source: the same
// members (or elements), each pristine itself, so its source bytes are
// still its encoding. A node the installer made is never pristine.
func (n *node) pristine() bool {
	if !n.fromSource() {
		return false
	}
	switch {
	case n.isObj:
		if len(n.obj) != len(n.orig) {
			return false
		}
		for i, m := range n.obj {
			if o := n.orig[i]; m.key != o.key || m.val != o.val || !m.val.pristine() {
				return false
			}
		}
	case n.isArr:
		if len(n.arr) != len(n.orig) {
			return false
		}
		for i, e := range n.arr {
			if e != n.orig[i].val || !e.pristine() {
				return false
			}
		}
	}
	return true
}

// get returns the value of key (the last one when the key repeats, as
// JSON.parse and encoding/json do) and its index, or nil, -1.
func (n *node) get(key string) (*node, int) {
	for i := len(n.obj) - 1; i >= 0; i-- {
		if n.obj[i].key == key {
			return n.obj[i].val, i
		}
	}
	return nil, -1
}

// set replaces the value of key in place, or appends the member.
func (n *node) set(key string, v *node) {
	if _, i := n.get(key); i >= 0 {
		n.obj[i].val = v
		return
	}
	n.obj = append(n.obj, member{key: key, val: v})
}

// del removes every member named key.
func (n *node) del(key string) {
	out := n.obj[:0]
	for _, m := range n.obj {
		if m.key != key {
			out = append(out, m)
		}
	}
	n.obj = out
}

// str returns the string value of a scalar node, ok false for anything else.
func (n *node) str() (string, bool) {
	if n == nil || n.isObj || n.isArr || len(n.scalar) == 0 || n.scalar[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(n.scalar, &s) != nil {
		return "", false
	}
	return s, true
}

func (n *node) kind() string {
	switch {
	case n.isObj:
		return "an object"
	case n.isArr:
		return "an array"
	case len(n.scalar) > 0 && n.scalar[0] == '"':
		return "a string"
	case string(n.scalar) == "null":
		return "null"
	case string(n.scalar) == "true" || string(n.scalar) == "false":
		return "a boolean"
	default:
		return "a number"
	}
}

func newObject(members ...member) *node { return &node{isObj: true, obj: members} }

func newArray(elems ...*node) *node { return &node{isArr: true, arr: elems} }

func newString(s string) *node { return &node{scalar: encodeString(s)} }

func newNumber(n int) *node { return &node{scalar: json.RawMessage(fmt.Sprint(n))} }

func encodeString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as JSON.stringify: keep <, > and & readable
	_ = enc.Encode(s)        // a string always encodes
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
}

// parseDocument parses data (a whole settings file) into an ordered tree.
// Empty or blank data is an empty object. A syntax error becomes a
// *ParseError naming path and the line:column of the offending byte.
func parseDocument(path string, data []byte) (*node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return newObject(), nil
	}
	// Validate first: encoding/json's syntax errors carry the offset, the
	// token decoder's do not always.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := int(se.Offset) - 1
			msg := se.Error()
			if strings.Contains(msg, "unexpected end of JSON input") {
				off = len(bytes.TrimRight(data, " \t\r\n"))
				msg = "unexpected end of file (truncated?)"
			}
			msg += syntaxHint(data, off)
			line, col := position(data, off)
			return nil, &ParseError{Path: path, Line: line, Column: col, Msg: msg}
		}
		line, col := position(data, 0)
		return nil, &ParseError{Path: path, Line: line, Column: col, Msg: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := decodeValue(dec, data)
	if err != nil {
		line, col := position(data, int(dec.InputOffset()))
		return nil, &ParseError{Path: path, Line: line, Column: col, Msg: err.Error()}
	}
	return n, nil
}

// syntaxHint names the two mistakes people make in hand-edited settings.
func syntaxHint(data []byte, off int) string {
	if off < 0 || off >= len(data) {
		return ""
	}
	switch data[off] {
	case '/', '#':
		return ": comments are not allowed in JSON"
	case '}', ']':
		prev := bytes.TrimRight(data[:off], " \t\r\n")
		if len(prev) > 0 && prev[len(prev)-1] == ',' {
			return ": trailing comma before it"
		}
	}
	return ""
}

// valueStart skips the whitespace, ':' and ',' that precede a value, so the
// recorded offset points at the value itself.
func valueStart(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

func decodeValue(dec *json.Decoder, data []byte) (*node, error) {
	off := valueStart(data, int(dec.InputOffset()))
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if t, ok := tok.(json.Delim); ok {
		switch t {
		case '{':
			return decodeObject(dec, data, off)
		case '[':
			return decodeArray(dec, data, off)
		default:
			return nil, fmt.Errorf("unexpected %q", rune(t))
		}
	}
	n := &node{offset: off, end: int(dec.InputOffset())}
	switch t := tok.(type) {
	case string:
		n.scalar = encodeString(t)
	case json.Number:
		n.scalar = json.RawMessage(t.String())
	case bool:
		n.scalar = json.RawMessage(fmt.Sprint(t))
	case nil:
		n.scalar = json.RawMessage("null")
	default:
		return nil, fmt.Errorf("unexpected token %v", tok)
	}
	return n, nil
}

// decodeObject decodes the members of an object whose '{' dec just read
// at offset off of data, and its '}'.
func decodeObject(dec *json.Decoder, data []byte, off int) (*node, error) {
	n := &node{isObj: true, offset: off}
	for dec.More() {
		keyOff := valueStart(data, int(dec.InputOffset()))
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := kt.(string)
		if !ok {
			return nil, fmt.Errorf("object key is %v, want a string", kt)
		}
		keyEnd := int(dec.InputOffset())
		v, err := decodeValue(dec, data)
		if err != nil {
			return nil, err
		}
		n.obj = append(n.obj, member{key: key, val: v})
		n.orig = append(n.orig, child{key: key, keyOff: keyOff, keyEnd: keyEnd, val: v})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	n.end = int(dec.InputOffset())
	return n, nil
}

// decodeArray decodes the elements of an array whose '[' dec just read
// at offset off of data, and its ']'.
func decodeArray(dec *json.Decoder, data []byte, off int) (*node, error) {
	n := &node{isArr: true, offset: off}
	for dec.More() {
		v, err := decodeValue(dec, data)
		if err != nil {
			return nil, err
		}
		n.arr = append(n.arr, v)
		n.orig = append(n.orig, child{keyOff: -1, keyEnd: -1, val: v})
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, err
	}
	n.end = int(dec.InputOffset())
	return n, nil
}
