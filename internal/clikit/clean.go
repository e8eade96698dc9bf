package clikit

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Clean makes text safe to print on a terminal: C0 and C1 control
// characters, DEL and invalid UTF-8 are shown as Go escapes (ESC as
// \x1b), so OSC 52 (clipboard), cursor moves and colours are inert.
// --json output is never cleaned: it carries the exact text.
func Clean(s string) string { return clean(s, false) }

// CleanLines is Clean keeping line feeds and tabs: for messages of
// several lines (an error of errors.Join), where only the escapes that
// act on a terminal must go.
func CleanLines(s string) string { return clean(s, true) }

func clean(s string, lines bool) string {
	unsafeRune := func(r rune) bool { return unsafeRune(r) && !(lines && (r == '\n' || r == '\t')) }
	safe := true
	for _, r := range s {
		if unsafeRune(r) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		case unsafeRune(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError ||
		r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) // line breaks, bidi overrides
}
