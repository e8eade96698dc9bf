package setup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gyrum-labs/warp/internal/agent"
	"github.com/gyrum-labs/warp/internal/shellquote"
)

// HookTimeoutSecs is the timeout written into every hook entry: touch-activity
// returns in milliseconds, and a hung hook must never block the agent long.
const HookTimeoutSecs = 5

// HookEvents returns the events setup wires the hook to in the default
// agent's settings (agent.Default): PreToolUse creates the in-flight
// marker, PostToolUse and PostToolUseFailure remove it and touch
// last-activity.
func HookEvents() []string { return append([]string(nil), defaultFormat().events...) }

// HookBinaryName is the small hook binary a release ships beside gyrum: the
// hook alone, which starts several times faster than the whole CLI.
const HookBinaryName = "gyrum-hook"

// HookCommand returns the hook command line for the gyrum binary at bin:
// the gyrum-hook binary beside it (shell-quoted when it needs it) when there
// is one, else bin followed by touch-activity. Both do the same.
func HookCommand(bin string) string {
	argv := HookArgv(bin)
	if len(argv) == 1 {
		return shellquote.Quote(argv[0])
	}
	return shellquote.Quote(argv[0]) + " " + argv[1]
}

// HookArgv is HookCommand as an argument vector: [gyrum-hook] or [bin,
// touch-activity].
func HookArgv(bin string) []string {
	small := filepath.Join(filepath.Dir(bin), HookBinaryName)
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return []string{small}
	}
	return []string{bin, "touch-activity"}
}

// IsHookCommand reports whether cmd is a gyrum hook: a program named
// gyrum-hook alone, or touch-activity as the last word after a program named
// gyrum, whatever the directory. That is how an entry written by an older
// install (another path, or the other form) is found and replaced instead of
// duplicated. The program must be one shell word (bare, or quoted as
// HookCommand quotes it): a user's own command that merely ends in the hook,
// such as `cd x && gyrum touch-activity`, is theirs, and setup leaves it.
func IsHookCommand(cmd string) bool {
	_, ok := HookBinary(cmd)
	return ok
}

// AgentArg is the argument setup writes after the hook command for an
// agent the hook cannot tell from its payload (agent.Hooks.Announce):
// `--agent FLAG`.
const AgentArg = "--agent"

// AnnouncedCommand returns command followed by `--agent flag`.
func AnnouncedCommand(command, flag string) string { return command + " " + AgentArg + " " + flag }

// HookBinary returns the program of a hook command written by HookCommand
// (the path with its shell quoting removed), ok false when cmd is not one.
// A trailing `--agent NAME` (AnnouncedCommand, NAME a plain word) is part
// of gyrum's command.
func HookBinary(cmd string) (string, bool) {
	s := strings.TrimSpace(cmd)
	s = cutAgentArg(s)
	if p, ok := shellWord(s); ok && filepath.Base(p) == HookBinaryName {
		return p, true
	}
	rest, ok := strings.CutSuffix(s, "touch-activity")
	if !ok || rest == "" {
		return "", false
	}
	trimmed := strings.TrimRight(rest, " \t")
	if len(trimmed) == len(rest) { // no space before touch-activity
		return "", false
	}
	if p, ok := shellWord(trimmed); ok && filepath.Base(p) == "gyrum" {
		return p, true
	}
	return "", false
}

// cutAgentArg returns s without a trailing `--agent NAME`, where NAME is
// a plain word (letters, digits, '-', '_'); s itself when it has none.
func cutAgentArg(s string) string {
	i := strings.LastIndexAny(s, " \t")
	if i < 0 {
		return s
	}
	name := s[i+1:]
	if name == "" || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 || strings.HasPrefix(name, "-") {
		return s
	}
	rest, ok := strings.CutSuffix(strings.TrimRight(s[:i], " \t"), AgentArg)
	if !ok || rest == "" || (rest[len(rest)-1] != ' ' && rest[len(rest)-1] != '\t') {
		return s
	}
	return strings.TrimRight(rest, " \t")
}

// shellWord returns what the shell makes of s when s is exactly one word
// with no expansion in it: a bare word of plain characters, a single-quoted
// word (a quote inside escaped as shellquote.Quote does), or a double-quoted one
// with nothing the shell would expand; ok false for anything else
// (several words, operators, substitutions).
func shellWord(s string) (string, bool) {
	switch {
	case s == "":
		return "", false
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		inner := s[1 : len(s)-1]
		if strings.Contains(strings.ReplaceAll(inner, `'\''`, ""), "'") {
			return "", false
		}
		return strings.ReplaceAll(inner, `'\''`, `'`), true
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		inner := s[1 : len(s)-1]
		if strings.ContainsAny(inner, "\"$`\\!") {
			return "", false
		}
		return inner, true
	case strings.ContainsAny(s, " \t\n;&|<>()$`\\'\"*?[]{}#~!"):
		return "", false
	}
	return s, true
}

// hookFormat is how an agent's settings file lists its command hooks, and
// so where install and uninstall look for ours. Every agent supported has
// the same outer shape, a top-level "hooks" object mapping each event to
// an array, and they differ in what that array holds and in the fields of
// a handler:
//
//	grouped (Claude Code, Codex, Gemini CLI): matcher groups, each with its handler list
//	  {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}
//	flat (Cursor): the handlers themselves, and a top-level "version"
//	  {"version": 1, "hooks": {"postToolUse": [{"command": "...", "timeout": 5}]}}
//
// One installer serves them all: install, uninstall and entries walk the
// handler lists of each event the same way whatever the format.
type hookFormat struct {
	events []string // the events our hook is wired to
	// grouped: the handlers of an event are in matcher groups, {"matcher":
	// M, "hooks": [...]}, and ours is in a group whose matcher is matcher.
	// Otherwise they are the event's array itself (and matcher is "").
	grouped bool
	matcher string
	// The fields of our handler, in this order: "name" (when name is
	// set), "type": "command" (when typed), "command", and "timeout":
	// HookTimeoutSecs in units of 1/timeoutScale second (1: seconds,
	// 1000: milliseconds).
	name         string
	typed        bool
	timeoutScale int
	// header lists top-level members the file must have (Cursor's
	// "version": 1): install adds each missing one at the start of the
	// document; an existing one is left as it is, and uninstall keeps them.
	header []member
}

// handler returns our handler object for command, in the key order it is
// written.
func (f hookFormat) handler(command string) *node {
	h := newObject()
	if f.name != "" {
		h.obj = append(h.obj, member{"name", newString(f.name)})
	}
	if f.typed {
		h.obj = append(h.obj, member{"type", newString("command")})
	}
	h.obj = append(h.obj,
		member{"command", newString(command)},
		member{"timeout", newNumber(HookTimeoutSecs * f.scale())},
	)
	return h
}

// scale returns timeoutScale, 1 (seconds) when unset.
func (f hookFormat) scale() int { return max(f.timeoutScale, 1) }

// entry returns what install appends to an event's array that lacks our
// handler h: h itself, or a group of our matcher holding it.
func (f hookFormat) entry(h *node) *node {
	if !f.grouped {
		return h
	}
	return newObject(
		member{"matcher", newString(f.matcher)},
		member{"hooks", newArray(h)},
	)
}

// lists returns the handler lists of arr, an event's array: arr itself
// for a flat format, the "hooks" array of each matcher group for a grouped
// one.
func (f hookFormat) lists(arr *node) []*node {
	if !f.grouped {
		return []*node{arr}
	}
	var lists []*node
	for _, g := range arr.arr {
		if gh := groupHooks(g); gh != nil {
			lists = append(lists, gh)
		}
	}
	return lists
}

// filter visits our handlers in the handler lists of arr (an event's
// array), in order, with the matcher of their list, and drops the ones
// keep refuses; the handlers of others are left. A matcher group that held
// only handlers dropped goes with them; one that was empty stays. It
// reports whether it dropped anything.
func (f hookFormat) filter(arr *node, keep func(h *node, matcher string) bool) (dropped bool) {
	filterList := func(list []*node, matcher string) []*node {
		var kept []*node
		for _, h := range list {
			if isOurHook(h) && !keep(h, matcher) {
				dropped = true
				continue
			}
			kept = append(kept, h)
		}
		return kept
	}
	if !f.grouped {
		arr.arr = filterList(arr.arr, f.matcher)
		return dropped
	}
	var groups []*node
	for _, g := range arr.arr {
		gh := groupHooks(g)
		if gh == nil {
			groups = append(groups, g)
			continue
		}
		m, _ := g.get("matcher")
		matcher, _ := m.str()
		kept := filterList(gh.arr, matcher)
		if len(kept) == 0 && len(gh.arr) > 0 {
			continue // the group held only our hooks: drop it with them
		}
		gh.arr = kept
		groups = append(groups, g)
	}
	arr.arr = groups
	return dropped
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
// data itself, byte for byte; otherwise only what it changed differs from
// data (spliceDocument).
func (f hookFormat) install(path string, data []byte, command string) ([]byte, bool, error) {
	doc, err := parseDocument(path, data)
	if err != nil {
		return nil, false, err
	}
	if !doc.isObj {
		return nil, false, shapeError(path, data, doc, "the document", "an object")
	}
	changed := false
	var missing []member
	for _, m := range f.header {
		if v, _ := doc.get(m.key); v == nil {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		doc.obj = append(missing, doc.obj...)
		changed = true
	}
	hooks, _ := doc.get("hooks")
	if hooks == nil {
		hooks = newObject()
		doc.set("hooks", hooks)
	}
	if !hooks.isObj {
		return nil, false, shapeError(path, data, hooks, `"hooks"`, "an object")
	}
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
	return spliceDocument(data, doc), true, nil
}

// installEvent makes arr (an event's array) hold our hook exactly once,
// under our matcher: the first entry there is updated in place (an old
// binary path is replaced), the others and any under another matcher are
// dropped, and an entry of our own is appended when there was none.
// Handlers and groups of others are kept as they are.
func (f hookFormat) installEvent(arr *node, command string) bool {
	want := f.handler(command)
	found, changed := false, false
	f.filter(arr, func(h *node, matcher string) bool {
		if !found && matcher == f.matcher {
			found = true
			if updateHook(h, want) {
				changed = true
			}
			return true
		}
		changed = true // a duplicate, or ours under another matcher
		return false
	})
	if !found {
		arr.arr = append(arr.arr, f.entry(want))
		changed = true
	}
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

// uninstall removes our hook from data: our handlers, then the groups,
// event arrays and "hooks" object that our removal left empty. Nothing
// else is touched (an empty group or array that was already empty stays,
// and so does a header member), and only what it removed differs from
// data (spliceDocument).
func (f hookFormat) uninstall(path string, data []byte) ([]byte, bool, error) {
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
	dropAll := func(*node, string) bool { return false }
	for _, ev := range f.events {
		arr, _ := hooks.get(ev)
		if arr == nil || !arr.isArr {
			continue
		}
		if !f.filter(arr, dropAll) {
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
	return spliceDocument(data, doc), true, nil
}

// headerOnly reports whether data, a settings document, holds nothing but
// the header members setup adds (Cursor's and Copilot's "version": 1)
// with their values: what uninstall leaves of a file setup created.
func (f hookFormat) headerOnly(data []byte) bool {
	if len(f.header) == 0 {
		return false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil || len(doc) != len(f.header) {
		return false
	}
	for _, m := range f.header {
		v, ok := doc[m.key]
		if !ok || !bytes.Equal(bytes.TrimSpace(v), m.val.scalar) {
			return false
		}
	}
	return true
}

// commands returns the command of every one of our hooks in data, per
// event, for doctor. A file that does not parse is an error.
func (f hookFormat) commands(path string, data []byte) (map[string][]string, error) {
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
func (f hookFormat) entries(path string, data []byte) (map[string][]HookEntry, error) {
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
		for _, list := range f.lists(arr) {
			for _, h := range list.arr {
				if !isOurHook(h) {
					continue
				}
				c, _ := h.get("command")
				cmd, _ := c.str()
				e := HookEntry{Command: cmd}
				if t, _ := h.get("timeout"); t != nil && t.kind() == "a number" {
					var v float64
					if json.Unmarshal(t.scalar, &v) == nil && v > 0 {
						e.Timeout = v / float64(f.scale())
					}
				}
				out[ev] = append(out[ev], e)
			}
		}
	}
	return out, nil
}

// HookEntries returns, per event setup wires in the default agent's
// settings, the gyrum
// touch-activity hooks of data (the settings file at path) with their
// timeouts. A file that does not parse is a *ParseError.
func HookEntries(path string, data []byte) (map[string][]HookEntry, error) {
	return defaultFormat().entries(path, data)
}

// AgentHookEntries returns, per event, the gyrum hooks of data, the
// settings file of agent a at path (a's format, package agent's Hooks),
// with their timeouts. A file that does not parse is a *ParseError; an
// agent with no hook events in a settings file (none, or a plugin) is an
// error.
func AgentHookEntries(a agent.Agent, path string, data []byte) (map[string][]HookEntry, error) {
	if a.Hooks == nil || len(a.Hooks.Events) == 0 {
		return nil, fmt.Errorf("%s has no hooks settings file", a.Title)
	}
	return formatOf(a.Hooks).entries(path, data)
}

// HookCommands returns, per event setup wires in the default agent's
// settings, the
// commands of the gyrum touch-activity hooks in data (the settings file at
// path). A file that does not parse is a *ParseError; an empty one has none.
func HookCommands(path string, data []byte) (map[string][]string, error) {
	return defaultFormat().commands(path, data)
}
