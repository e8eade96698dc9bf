package setup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// HookTimeoutSecs is the timeout written into every hook entry: touch-activity
// returns in milliseconds, and a hung hook must never block the agent long.
const HookTimeoutSecs = 5

// ClaudeHookEvents are the Claude Code events the activity hook is wired to:
// PreToolUse creates the in-flight marker, PostToolUse and PostToolUseFailure
// remove it and touch last-activity.
var claudeHookEvents = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"}

// ClaudeHookEvents returns the Claude Code events setup wires the hook to.
func ClaudeHookEvents() []string { return append([]string(nil), claudeHookEvents...) }

// HookCommand returns the hook command line for the gyrum binary at bin:
// the path (shell-quoted when it needs it) followed by touch-activity.
func HookCommand(bin string) string { return shellQuote(bin) + " touch-activity" }

// IsHookCommand reports whether cmd is a gyrum touch-activity hook: its last
// word is touch-activity and the program before it is named gyrum, whatever
// its directory. That is how an entry written by an older install (another
// path of the binary) is found and replaced instead of duplicated.
func IsHookCommand(cmd string) bool {
	s := strings.TrimSpace(cmd)
	rest, ok := strings.CutSuffix(s, "touch-activity")
	if !ok || rest == "" {
		return false
	}
	trimmed := strings.TrimRight(rest, " \t")
	if len(trimmed) == len(rest) { // no space before touch-activity
		return false
	}
	prog := unquote(trimmed)
	return prog == "gyrum" || filepath.Base(prog) == "gyrum"
}

// HookBinary returns the program of a hook command written by HookCommand
// (the path with its shell quoting removed), ok false when cmd is not one.
func HookBinary(cmd string) (string, bool) {
	if !IsHookCommand(cmd) {
		return "", false
	}
	s := strings.TrimSpace(cmd)
	rest := strings.TrimRight(strings.TrimSuffix(s, "touch-activity"), " \t")
	return unquote(rest), true
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// shellQuote quotes s for sh when it holds anything but plainly safe bytes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// matcherFormat describes settings whose hooks are grouped by matcher, as
// Claude Code's (and Gemini CLI's) are:
//
//	{"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}
type matcherFormat struct {
	events  []string
	matcher string
	// hook returns our hook object for command, in the key order it is written.
	hook func(command string) *node
}

func claudeFormat() matcherFormat {
	return matcherFormat{
		events:  claudeHookEvents,
		matcher: "*",
		hook: func(command string) *node {
			return newObject(
				member{"type", newString("command")},
				member{"command", newString(command)},
				member{"timeout", newNumber(HookTimeoutSecs)},
			)
		},
	}
}

// isOurHook reports whether a hook object runs gyrum touch-activity.
func isOurHook(h *node) bool {
	if h == nil || !h.isObj {
		return false
	}
	c, _ := h.get("command")
	cmd, ok := c.str()
	return ok && IsHookCommand(cmd)
}

// shapeError reports a value of the wrong type at its position.
func shapeError(path string, data []byte, n *node, what, want string) error {
	line, col := position(data, n.offset)
	return &ParseError{Path: path, Line: line, Column: col, Msg: fmt.Sprintf("%s is %s, want %s", what, n.kind(), want)}
}

// install merges our hook into data (the file at path) and returns the new
// content and whether anything changed. When nothing changes it returns
// data itself, byte for byte.
func (f matcherFormat) install(path string, data []byte, command string) ([]byte, bool, error) {
	doc, err := parseDocument(path, data)
	if err != nil {
		return nil, false, err
	}
	if !doc.isObj {
		return nil, false, shapeError(path, data, doc, "the document", "an object")
	}
	hooks, _ := doc.get("hooks")
	if hooks == nil {
		hooks = newObject()
		doc.set("hooks", hooks)
	}
	if !hooks.isObj {
		return nil, false, shapeError(path, data, hooks, `"hooks"`, "an object")
	}
	changed := false
	for _, ev := range f.events {
		arr, _ := hooks.get(ev)
		if arr == nil {
			arr = newArray()
			hooks.set(ev, arr)
		}
		if !arr.isArr {
			return nil, false, shapeError(path, data, arr, fmt.Sprintf("%q in \"hooks\"", ev), "an array")
		}
		if f.installEvent(arr, command) {
			changed = true
		}
	}
	if !changed {
		return data, false, nil
	}
	return encodeDocument(doc), true, nil
}

// installEvent makes arr hold our hook exactly once, in a group with our
// matcher: an existing entry is updated in place (an old binary path is
// replaced), duplicates elsewhere are dropped, and a group of our own is
// appended when there was none. Groups and hooks of others are kept as
// they are.
func (f matcherFormat) installEvent(arr *node, command string) bool {
	want := f.hook(command)
	found, changed := false, false
	var groups []*node
	for _, g := range arr.arr {
		gh := groupHooks(g)
		if gh == nil {
			groups = append(groups, g)
			continue
		}
		m, _ := g.get("matcher")
		matcher, _ := m.str()
		var kept []*node
		for _, h := range gh.arr {
			if !isOurHook(h) {
				kept = append(kept, h)
				continue
			}
			if !found && matcher == f.matcher {
				found = true
				if updateHook(h, want) {
					changed = true
				}
				kept = append(kept, h)
				continue
			}
			changed = true // a duplicate, or ours under another matcher
		}
		if len(kept) == 0 && len(gh.arr) > 0 {
			continue // the group held only our hook: drop it with it
		}
		gh.arr = kept
		groups = append(groups, g)
	}
	if !found {
		groups = append(groups, newObject(
			member{"matcher", newString(f.matcher)},
			member{"hooks", newArray(want)},
		))
		changed = true
	}
	arr.arr = groups
	return changed
}

// groupHooks returns the "hooks" array of a matcher group, nil when g is not
// a group of that shape (left alone).
func groupHooks(g *node) *node {
	if g == nil || !g.isObj {
		return nil
	}
	gh, _ := g.get("hooks")
	if gh == nil || !gh.isArr {
		return nil
	}
	return gh
}

// updateHook sets every member of want on h, keeping h's other members and
// order, and reports whether anything differed.
func updateHook(h, want *node) bool {
	changed := false
	for _, m := range want.obj {
		cur, _ := h.get(m.key)
		if cur != nil && !cur.isObj && !cur.isArr && bytes.Equal(cur.scalar, m.val.scalar) {
			continue
		}
		h.set(m.key, m.val)
		changed = true
	}
	return changed
}

// uninstall removes our hook from data: our hook objects, then the groups,
// event arrays and "hooks" object that our removal left empty. Nothing
// else is touched; an empty group or array that was already empty stays.
func (f matcherFormat) uninstall(path string, data []byte) ([]byte, bool, error) {
	doc, err := parseDocument(path, data)
	if err != nil {
		return nil, false, err
	}
	if !doc.isObj {
		return nil, false, shapeError(path, data, doc, "the document", "an object")
	}
	hooks, _ := doc.get("hooks")
	if hooks == nil || !hooks.isObj {
		return data, false, nil
	}
	changed := false
	for _, ev := range f.events {
		arr, _ := hooks.get(ev)
		if arr == nil || !arr.isArr {
			continue
		}
		if !removeOurs(arr) {
			continue
		}
		changed = true
		if len(arr.arr) == 0 {
			hooks.del(ev)
		}
	}
	if !changed {
		return data, false, nil
	}
	if len(hooks.obj) == 0 {
		doc.del("hooks")
	}
	return encodeDocument(doc), true, nil
}

// removeOurs drops our hooks from the groups of arr, and the groups that
// held nothing else. It reports whether it removed anything.
func removeOurs(arr *node) bool {
	removed := false
	var groups []*node
	for _, g := range arr.arr {
		gh := groupHooks(g)
		if gh == nil {
			groups = append(groups, g)
			continue
		}
		var kept []*node
		for _, h := range gh.arr {
			if isOurHook(h) {
				removed = true
				continue
			}
			kept = append(kept, h)
		}
		if len(kept) == 0 && len(gh.arr) > 0 {
			continue
		}
		gh.arr = kept
		groups = append(groups, g)
	}
	arr.arr = groups
	return removed
}

// commands returns the command of every one of our hooks in data, per
// event, for doctor. A file that does not parse is an error.
func (f matcherFormat) commands(path string, data []byte) (map[string][]string, error) {
	entries, err := f.entries(path, data)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for ev, es := range entries {
		for _, e := range es {
			out[ev] = append(out[ev], e.Command)
		}
	}
	return out, nil
}

// HookEntry is one gyrum touch-activity hook of a settings file: its
// command line and its timeout in seconds (0 when the entry has none, and
// the agent's default applies).
type HookEntry struct {
	Command string
	Timeout float64
}

// entries returns, per event, our hooks of data with their timeouts.
func (f matcherFormat) entries(path string, data []byte) (map[string][]HookEntry, error) {
	doc, err := parseDocument(path, data)
	if err != nil {
		return nil, err
	}
	out := map[string][]HookEntry{}
	if !doc.isObj {
		return out, nil
	}
	hooks, _ := doc.get("hooks")
	if hooks == nil || !hooks.isObj {
		return out, nil
	}
	for _, ev := range f.events {
		arr, _ := hooks.get(ev)
		if arr == nil || !arr.isArr {
			continue
		}
		for _, g := range arr.arr {
			gh := groupHooks(g)
			if gh == nil {
				continue
			}
			for _, h := range gh.arr {
				if !isOurHook(h) {
					continue
				}
				c, _ := h.get("command")
				cmd, _ := c.str()
				e := HookEntry{Command: cmd}
				if t, _ := h.get("timeout"); t != nil && t.kind() == "a number" {
					var secs float64
					if json.Unmarshal(t.scalar, &secs) == nil && secs > 0 {
						e.Timeout = secs
					}
				}
				out[ev] = append(out[ev], e)
			}
		}
	}
	return out, nil
}

// ClaudeHookEntries returns, per Claude Code event setup wires, the gyrum
// touch-activity hooks of data (the settings file at path) with their
// timeouts. A file that does not parse is a *ParseError.
func ClaudeHookEntries(path string, data []byte) (map[string][]HookEntry, error) {
	return claudeFormat().entries(path, data)
}

// ClaudeHookCommands returns, per Claude Code event setup wires, the
// commands of the gyrum touch-activity hooks in data (the settings file at
// path). A file that does not parse is a *ParseError; an empty one has none.
func ClaudeHookCommands(path string, data []byte) (map[string][]string, error) {
	return claudeFormat().commands(path, data)
}
