package gyrumdir

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The record is written without encoding/json; it must read back through
// encoding/json as json.Marshal's own output does, and match that output
// byte for byte where json.Marshal does not escape for HTML.
func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 3, 13, 4, 5, 6007, time.UTC)
	strs := []string{"", "Bash", "PostToolUse", `say "hi"`, `back\slash`, "line\nfeed\ttab\rcr", "\x00\x01\x1f\x7f",
		"héllo wörld ✓ 𝄞", "bad \xff utf8 \xc3", "\xe2\x82", "mcp__server__tool", strings.Repeat("é", 70)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		strs = append(strs, string(b))
	}
	htmlish := func(s string) bool { return strings.ContainsAny(s, "<>&\u2028\u2029") }
	for _, s := range strs {
		for _, r := range []ActivityRecord{{Source: SourceHook, Event: s, Tool: s, At: at}, {Source: SourceWait, Tool: s, At: at.Add(time.Hour)}, {Source: s, At: at}} {
			ours := appendRecord(nil, r)
			theirs, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !htmlish(s) && !bytes.Equal(ours, theirs) {
				t.Errorf("%q:\n ours   %s\n theirs %s", s, ours, theirs)
			}
			var a, b ActivityRecord
			if err := json.Unmarshal(ours, &a); err != nil {
				t.Fatalf("%q: ours is not JSON: %v (%s)", s, err, ours)
			}
			if err := json.Unmarshal(theirs, &b); err != nil {
				t.Fatal(err)
			}
			if a != b {
				t.Errorf("%q: ours reads back as %+v, json.Marshal's as %+v", s, a, b)
			}
		}
	}
}
