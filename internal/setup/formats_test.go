package setup

import (
	"bytes"
	"reflect"
	"testing"
)

// One installer serves every format: what it installs, entries finds
// again, per event, with the timeout in seconds whatever the unit the file
// writes it in (Gemini CLI: milliseconds).
func TestHookFormatEntries(t *testing.T) {
	for name, f := range allFormats() {
		out, changed, err := f.install("x.json", nil, spliceCmd)
		if err != nil || !changed {
			t.Fatalf("%s: install: changed %v, err %v", name, changed, err)
		}
		got, err := f.entries("x.json", out)
		if err != nil {
			t.Fatalf("%s: entries: %v", name, err)
		}
		want := map[string][]HookEntry{}
		for _, ev := range f.events {
			want[ev] = []HookEntry{{Command: spliceCmd, Timeout: HookTimeoutSecs}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: entries = %v, want %v\n%s", name, got, want, out)
		}
	}
}

// The handler each format writes has the fields its agent documents, in
// the order they are written.
func TestHookFormatHandler(t *testing.T) {
	cases := map[string]string{
		"claude":  `{"type": "command", "command": "c", "timeout": 5}`,
		"codex":   `{"type": "command", "command": "c", "timeout": 5}`,
		"gemini":  `{"name": "gyrum-touch-activity", "type": "command", "command": "c", "timeout": 5000}`,
		"cursor":  `{"command": "c", "timeout": 5}`,
		"qwen":    `{"type": "command", "command": "c", "timeout": 5}`,
		"copilot": `{"type": "command", "command": "c", "timeout": 5}`,
	}
	e := encoder{layout: defaultLayout}
	for name, f := range allFormats() {
		var b bytes.Buffer
		e.value(&b, f.handler("c"), "", true)
		if got := b.String(); got != cases[name] {
			t.Errorf("%s: handler = %s, want %s", name, got, cases[name])
		}
	}
}
