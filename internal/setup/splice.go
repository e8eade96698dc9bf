package setup

import (
	"bytes"
	"strings"
)

// layout is how a settings file is written, as far as content setup adds
// must follow it.
type layout struct {
	unit  string // one level of indentation: "  ", "    ", "\t", ...
	colon string // between a key and its value: ": ", ":", " : "
	comma string // between two members or elements on one line, comma included: ", "
	nl    string // line break: "\n" or "\r\n"
}

// defaultLayout is how Claude Code writes its settings: two spaces.
var defaultLayout = layout{unit: "  ", colon: ": ", comma: ", ", nl: "\n"}

// encodeDocument writes n whole, indented by two spaces as Claude Code
// writes its settings, followed by a newline: the content of a settings
// file that was missing or empty.
func encodeDocument(n *node) []byte {
	e := encoder{layout: defaultLayout}
	var b bytes.Buffer
	e.value(&b, n, "", false)
	b.WriteByte('\n')
	return b.Bytes()
}

// spliceDocument returns src (the file doc was parsed from) with the edits
// made to doc since: every value the edits left as it was is copied from
// src byte for byte, with the whitespace around it, so only the members and
// elements that were added, removed or replaced differ. What is written
// anew follows the layout of src (detectLayout), and of the container it
// goes into: on one line in a container written on one line, one per line
// at the indentation of its siblings otherwise. A doc not read from a
// source (src was empty or blank) is written whole by encodeDocument.
func spliceDocument(src []byte, doc *node) []byte {
	if !doc.fromSource() {
		return encodeDocument(doc)
	}
	e := encoder{src: src, layout: detectLayout(src, doc)}
	var b bytes.Buffer
	b.Grow(len(src) + 1024)
	b.Write(src[:doc.offset])
	e.value(&b, doc, lineIndent(src, doc.offset), false)
	b.Write(src[doc.end:])
	return b.Bytes()
}

type encoder struct {
	src []byte // the source the nodes were read from; nil: write every node anew
	layout
}

// value writes n: its source bytes when it is pristine, its source spliced
// with the edits when it is a container read from the source that still
// holds some of what it held, and a new encoding otherwise. indent (the
// indentation of the line n starts on) and compact (write n on one line)
// apply to a new encoding.
func (e *encoder) value(b *bytes.Buffer, n *node, indent string, compact bool) {
	switch {
	case e.src == nil || !n.fromSource():
		e.fresh(b, n, indent, compact)
	case n.pristine():
		b.Write(e.src[n.offset:n.end])
	case len(n.orig) == 0:
		e.fresh(b, n, indent, compact)
	default:
		e.splice(b, n)
	}
}

func brackets(n *node) (open, close byte) {
	if n.isObj {
		return '{', '}'
	}
	return '[', ']'
}

// fresh writes n anew: on one line when compact, else one member or
// element per line, a level deeper than indent. Values of n read from the
// source are still written by value, so as they were when pristine.
func (e *encoder) fresh(b *bytes.Buffer, n *node, indent string, compact bool) {
	if !n.isObj && !n.isArr {
		b.Write(n.scalar)
		return
	}
	size := len(n.arr)
	if n.isObj {
		size = len(n.obj)
	}
	open, close := brackets(n)
	b.WriteByte(open)
	if size == 0 {
		b.WriteByte(close)
		return
	}
	inner := indent + e.unit
	for i := range size {
		if i > 0 {
			if compact {
				b.WriteString(e.comma)
			} else {
				b.WriteByte(',')
			}
		}
		if !compact {
			b.WriteString(e.nl + inner)
		}
		v := e.elem(b, n, i)
		e.value(b, v, inner, compact)
	}
	if !compact {
		b.WriteString(e.nl + indent)
	}
	b.WriteByte(close)
}

// elem returns the i-th value of n, after writing its key when n is an
// object.
func (e *encoder) elem(b *bytes.Buffer, n *node, i int) *node {
	if !n.isObj {
		return n.arr[i]
	}
	b.Write(encodeString(n.obj[i].key))
	b.WriteString(e.colon)
	return n.obj[i].val
}

// item is a member or element of a container being spliced, with the
// index in orig of the one it was read as (-1: added by the edit).
type item struct {
	key  string
	val  *node
	from int
}

// items pairs the current members (or elements) of n with the ones it was
// read with. Edits keep the order of what they keep, so a greedy walk
// finds them: an element by identity, a member by key (its value may have
// been replaced).
func (n *node) items() []item {
	var out []item
	j := 0
	find := func(key string, val *node) int {
		for k := j; k < len(n.orig); k++ {
			if n.isObj && n.orig[k].key == key || !n.isObj && n.orig[k].val == val {
				j = k + 1
				return k
			}
		}
		return -1
	}
	if n.isObj {
		for _, m := range n.obj {
			out = append(out, item{m.key, m.val, find(m.key, m.val)})
		}
	} else {
		for _, v := range n.arr {
			out = append(out, item{"", v, find("", v)})
		}
	}
	return out
}

// multiLine reports whether n (read from the source, holding something)
// puts its members or elements on lines of their own: a line break
// between its brackets and them or between two of them.
func (e *encoder) multiLine(n *node) bool {
	gaps := [][]byte{e.src[n.offset+1 : n.orig[0].start()], e.src[n.orig[len(n.orig)-1].val.end : n.end-1]}
	for i := 1; i < len(n.orig); i++ {
		gaps = append(gaps, e.src[n.orig[i-1].val.end:n.orig[i].start()])
	}
	for _, g := range gaps {
		if bytes.IndexByte(g, '\n') >= 0 {
			return true
		}
	}
	return false
}

// splice writes n, a container read from the source and edited since:
// its brackets and the whitespace inside them, and every member or
// element it kept with the separator that followed it, come from the
// source; what the edit added is written anew where it goes, after the
// separator the source uses before its last member (or a line break at
// the indentation of its members); what it removed goes with the
// separator that followed it (the one before it, for the last).
func (e *encoder) splice(b *bytes.Buffer, n *node) {
	src, orig := e.src, n.orig
	items := n.items()
	open, close := brackets(n)
	if len(items) == 0 {
		b.WriteByte(open)
		b.WriteByte(close)
		return
	}
	multi := e.multiLine(n)
	indent := lineIndent(src, n.offset)
	kept := false
	for _, it := range items {
		kept = kept || it.from >= 0
	}
	if !kept {
		e.fresh(b, n, indent, !multi)
		return
	}
	childIndent, sep := e.layoutOf(n, indent, multi)
	b.WriteByte(open)
	b.Write(src[n.offset+1 : orig[0].start()])
	prev := -1
	for i, it := range items {
		if i > 0 {
			if prev >= 0 && prev+1 < len(orig) {
				b.Write(src[orig[prev].val.end:orig[prev+1].start()])
			} else {
				b.WriteString(sep)
			}
		}
		prev = it.from
		if it.from < 0 {
			if n.isObj {
				b.Write(encodeString(it.key))
				b.WriteString(e.colon)
			}
			e.value(b, it.val, childIndent, !multi)
			continue
		}
		o := orig[it.from]
		if n.isObj {
			b.Write(src[o.keyOff:o.val.offset]) // the key as written, and the colon
		}
		e.value(b, it.val, lineIndent(src, o.start()), !multi)
	}
	b.Write(src[orig[len(orig)-1].val.end : n.end-1])
	b.WriteByte(close)
}

// layoutOf is how container n (at indent; multi: one item a line) lays
// out its items: their indentation, and what goes before an item the
// edit added (the separator of its last two items as written, else the
// layout's).
func (e *encoder) layoutOf(n *node, indent string, multi bool) (childIndent, sep string) {
	src, orig := e.src, n.orig
	childIndent = indent + e.unit
	for _, c := range orig {
		if startsLine(src, c.start()) {
			childIndent = lineIndent(src, c.start())
		}
	}
	switch {
	case len(orig) >= 2:
		sep = string(src[orig[len(orig)-2].val.end:orig[len(orig)-1].start()])
	case multi:
		sep = "," + e.nl + childIndent
	default:
		sep = e.comma
	}
	return childIndent, sep
}

// detectLayout reads how src (parsed as doc) is written: the indentation
// of one nesting level, the separator between a key and its value and the
// one between two values on the same line, each the one src uses most
// (the first seen of those used most), and its line break. What src does
// not show keeps the default; a file that shows no separator between
// values on one line gets ", " or ",", as its colon has a space or not.
func detectLayout(src []byte, doc *node) layout {
	l := defaultLayout
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		l.nl = "\r\n"
	}
	var units, colons, commas tally
	var walk func(n *node)
	walk = func(n *node) {
		if len(n.orig) == 0 {
			return
		}
		if first := n.orig[0].start(); startsLine(src, first) {
			outer, inner := lineIndent(src, n.offset), lineIndent(src, first)
			if len(inner) > len(outer) && strings.HasPrefix(inner, outer) {
				units.add(inner[len(outer):])
			}
		}
		for i, c := range n.orig {
			if c.keyOff >= 0 {
				if s := src[c.keyEnd:c.val.offset]; bytes.IndexByte(s, '\n') < 0 {
					colons.add(string(s))
				}
			}
			if i > 0 {
				if s := src[n.orig[i-1].val.end:c.start()]; bytes.IndexByte(s, '\n') < 0 {
					commas.add(string(s))
				}
			}
			walk(c.val)
		}
	}
	walk(doc)
	l.unit = units.most(l.unit)
	l.colon = colons.most(l.colon)
	if strings.HasSuffix(l.colon, ":") {
		l.comma = ","
	}
	l.comma = commas.most(l.comma)
	return l
}

// tally counts strings, remembering the order they were first seen.
type tally struct {
	n     map[string]int
	order []string
}

func (t *tally) add(s string) {
	if t.n == nil {
		t.n = map[string]int{}
	}
	if t.n[s] == 0 {
		t.order = append(t.order, s)
	}
	t.n[s]++
}

// most returns the string counted most often (the first seen of a tie),
// def when none was.
func (t *tally) most(def string) string {
	best := 0
	for _, s := range t.order {
		if t.n[s] > best {
			best, def = t.n[s], s
		}
	}
	return def
}

// lineIndent returns the spaces and tabs that begin the line of src
// holding off (up to off at most).
func lineIndent(src []byte, off int) string {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	end := start
	for end < off && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

// startsLine reports whether only spaces and tabs precede off on its line.
func startsLine(src []byte, off int) bool {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return len(lineIndent(src, off)) == off-start
}
