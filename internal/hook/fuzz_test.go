package hook_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/gyrum-labs/warp/internal/hook"
)

// FuzzParse: the scanner never panics, and on any input that is a valid
// JSON object it finds exactly the top-level string fields encoding/json
// finds (up to its field cap).
func FuzzParse(f *testing.F) {
	for _, s := range []string{prePayload, postPayload, failurePayload, stopPayload, `{}`, `{"cwd":"\u00e9\"x"}`, `{"a":[{"cwd":"no"}],"cwd":"yes"}`, `[`, `{"cwd":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := hook.Parse(bytes.NewReader(data), hook.MaxInput)
		var top map[string]json.RawMessage
		// Invalid UTF-8 is kept raw by the scanner (a path is bytes) where
		// encoding/json substitutes U+FFFD: compare valid text only.
		if !utf8.Valid(data) || json.Unmarshal(data, &top) != nil || top == nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		if _, err := dec.Token(); err != nil {
			return
		}
		str := func(key string) string {
			var v string
			raw, ok := top[key]
			if !ok || json.Unmarshal(raw, &v) != nil || len(raw) > 4096 {
				return ""
			}
			return v
		}
		if !got.Object {
			t.Fatalf("an object not seen as one: %q", data)
		}
		if dupKeys(data) {
			return // encoding/json keeps the last duplicate; the scanner too, but skip the corner
		}
		for _, c := range []struct{ key, got string }{
			{"hook_event_name", got.Event}, {"cwd", got.CWD}, {"tool_name", got.ToolName}, {"tool_use_id", got.ToolUseID},
		} {
			if want := str(c.key); len(top[c.key]) <= 4096 && c.got != want {
				t.Fatalf("%s: got %q, want %q in %q", c.key, c.got, want, data)
			}
		}
	})
}

// dupKeys reports whether data's top-level object repeats a key.
func dupKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		ks, _ := k.(string)
		if seen[ks] {
			return true
		}
		seen[ks] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
