package gyrumdir

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
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

// Every mix of two records — what a read racing a write can see: the
// first k bytes of one, the rest of the other — reads as one of the two
// records or as none, never as a record nobody wrote. The records differ
// in source, event, tool and time, and in length, as a hook's and a
// start-work's do.
func TestTornRecordIsNeverRead(t *testing.T) {
	recs := []ActivityRecord{
		{Source: SourceHook, Event: "PostToolUse", Tool: "Bash", At: time.Date(2026, 12, 4, 12, 0, 59, 999999999, time.UTC)},
		{Source: SourceStartWork, At: time.Date(2026, 12, 4, 12, 1, 11, 111111111, time.UTC)},
		{Source: SourceWait, Event: "done", Tool: "mcp__ci__wait", At: time.Date(2026, 12, 4, 12, 1, 12, 0, time.UTC)},
	}
	root, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := root.file(ActivityFile)
	reads := 0
	for _, a := range recs {
		for _, b := range recs {
			ea, eb := encodeRecord(a), encodeRecord(b)
			for k := 0; k <= RecordSize; k++ {
				mix := append(bytes.Clone(ea[:k]), eb[k:]...)
				if err := os.WriteFile(p, mix, 0o600); err != nil {
					t.Fatal(err)
				}
				got, ok, _, err := root.ReadActivity()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue
				}
				reads++
				if got != a && got != b {
					t.Fatalf("%q + %q at %d: read %+v, a record never written", ea[:k], eb[k:], k, got)
				}
			}
		}
	}
	if reads < len(recs)*len(recs)*2 {
		t.Errorf("only %d mixes read as a record; the whole ones must", reads)
	}
}

// A record without its sum, or with a wrong one, is no record.
func TestRecordWithoutItsSumIsNone(t *testing.T) {
	root, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := encodeRecord(ActivityRecord{Source: SourceHook, At: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)})
	line := string(bytes.TrimRight(good, " \n"))
	i := strings.Index(line, `,"sum":`)
	flipped := []byte(line)
	flipped[len(flipped)-3] ^= 1 // the sum's last hex digit, changed
	for name, content := range map[string]string{
		"no sum (an older gyrum)": line[:i] + "}\n",
		"wrong sum":               string(flipped) + "\n",
		"sum not last":            line[:i] + `,"sum":"00000000","x":1}` + "\n",
		"only a sum":              `{"sum":"00000000"}`,
	} {
		if err := os.WriteFile(root.file(ActivityFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if rec, ok, _, err := root.ReadActivity(); ok || err != nil {
			t.Errorf("%s: read %+v, %v, %v; want no record, no error", name, rec, ok, err)
		}
	}
	if err := os.WriteFile(root.file(ActivityFile), good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, _, err := root.ReadActivity(); !ok || err != nil {
		t.Errorf("the good record: %v, %v", ok, err)
	}
}
