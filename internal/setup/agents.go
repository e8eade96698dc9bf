package setup

import (
	"fmt"
	"path/filepath"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Agents lists the agents besides Claude Code whose public hook formats
// setup can wire with Options.Agents.
var agentNames = []string{"codex", "gemini", "cursor"}

// Agents returns the names Options.Agents accepts.
func Agents() []string { return append([]string(nil), agentNames...) }

// codexFormat is Codex's hooks.json: Claude Code's shape (event → matcher
// groups → command handlers, timeout in seconds). Its matcher is a regular
// expression, so "" (match every tool) rather than Claude's "*".
func codexFormat() matcherFormat {
	return matcherFormat{
		events:  []string{"PreToolUse", "PostToolUse"},
		matcher: "",
		hook: func(command string) *node {
			return newObject(
				member{"type", newString("command")},
				member{"command", newString(command)},
				member{"timeout", newNumber(HookTimeoutSecs)},
			)
		},
	}
}

// geminiFormat is Gemini CLI's settings.json hooks: AfterTool (after every
// tool call, which touch-activity treats as activity), a regular-expression
// matcher, and a timeout in milliseconds.
func geminiFormat() matcherFormat {
	return matcherFormat{
		events:  []string{"AfterTool"},
		matcher: ".*",
		hook: func(command string) *node {
			return newObject(
				member{"name", newString("gyrum-touch-activity")},
				member{"type", newString("command")},
				member{"command", newString(command)},
				member{"timeout", newNumber(HookTimeoutSecs * 1000)},
			)
		},
	}
}

// agentTarget returns the settings file and format of one of the other
// agents of Options.Agents.
func agentTarget(o Options, agent string) (hookTarget, error) {
	scope := func(projectDir, userDir, file string) string {
		if o.Project != "" {
			return filepath.Join(o.Project, projectDir, file)
		}
		return filepath.Join(userDir, file)
	}
	switch agent {
	case "codex":
		home := o.CodexHome
		if home == "" {
			home = filepath.Join(o.Home, ".codex")
		}
		f := codexFormat()
		return hookTarget{agent: agent, path: scope(".codex", home, "hooks.json"), install: f.install, uninstall: f.uninstall}, nil
	case "gemini":
		f := geminiFormat()
		return hookTarget{agent: agent, path: scope(".gemini", filepath.Join(o.Home, ".gemini"), "settings.json"), install: f.install, uninstall: f.uninstall}, nil
	case "cursor":
		f := cursorFormat()
		return hookTarget{agent: agent, path: scope(".cursor", filepath.Join(o.Home, ".cursor"), "hooks.json"), install: f.install, uninstall: f.uninstall}, nil
	default:
		return hookTarget{}, warp.Errorf(warp.ErrInvalid, "--agents: unknown agent %q (want codex, gemini or cursor)", agent)
	}
}

// flatFormat is Cursor's hooks.json: {"version": 1, "hooks": {"postToolUse":
// [{"command": "...", "timeout": 5}]}} — a list of handlers per event, no
// matcher groups.
type flatFormat struct {
	events []string
	hook   func(command string) *node
}

func cursorFormat() flatFormat {
	return flatFormat{
		events: []string{"postToolUse"},
		hook: func(command string) *node {
			return newObject(
				member{"command", newString(command)},
				member{"timeout", newNumber(HookTimeoutSecs)},
			)
		},
	}
}

func (f flatFormat) install(path string, data []byte, command string) ([]byte, bool, error) {
	doc, err := parseDocument(path, data)
	if err != nil {
		return nil, false, err
	}
	if !doc.isObj {
		return nil, false, shapeError(path, data, doc, "the document", "an object")
	}
	changed := false
	if v, _ := doc.get("version"); v == nil {
		doc.obj = append([]member{{"version", newNumber(1)}}, doc.obj...)
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
	want := f.hook(command)
	for _, ev := range f.events {
		arr, _ := hooks.get(ev)
		if arr == nil {
			arr = newArray()
			hooks.set(ev, arr)
		}
		if !arr.isArr {
			return nil, false, shapeError(path, data, arr, fmt.Sprintf("%q in \"hooks\"", ev), "an array")
		}
		found := false
		var kept []*node
		for _, h := range arr.arr {
			if !isOurHook(h) {
				kept = append(kept, h)
				continue
			}
			if found {
				changed = true // a duplicate
				continue
			}
			found = true
			if updateHook(h, want) {
				changed = true
			}
			kept = append(kept, h)
		}
		if !found {
			kept = append(kept, want)
			changed = true
		}
		arr.arr = kept
	}
	if !changed {
		return data, false, nil
	}
	return encodeDocument(doc), true, nil
}

func (f flatFormat) uninstall(path string, data []byte) ([]byte, bool, error) {
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
		var kept []*node
		for _, h := range arr.arr {
			if isOurHook(h) {
				changed = true
				continue
			}
			kept = append(kept, h)
		}
		if len(kept) == len(arr.arr) {
			continue
		}
		arr.arr = kept
		if len(kept) == 0 {
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
